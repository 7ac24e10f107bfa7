"""Comparison speed at a million measurements: /api/v1/comparisons/ and /compare/.

One run:

1. fills a PostgreSQL database of its own (``--database``, default bh_stats_bench;
   kept between runs, ``--refill`` recreates it) with ``--measurements`` measurements
   over a realistic spread: select-update sweeps (9 client levels x 6 metrics, 3
   samples each) and sql-bench runs (46 operations and TOTALS), on PostgreSQL 13-16
   and MariaDB 10.6/10.11/11.4, 9 filesystem and mount-option sets, 8 CPU models, two
   load engines; all approved. Rows go in with COPY, ids in order, like uploads;
2. answers the three comparisons of issue 10 in this process through Django's test
   client (the whole request: URL, filters, queries, aggregation, JSON or HTML), after
   a warm-up, ``--requests`` times each, and prints p50/p95, the queries per request,
   where a request's time went (p50 of the time waiting on the database and of the
   process's own CPU: Python) and the load average (other work on the machine shares
   its cores);
   Each twice: "computed" with no answer kept (every request computes, as the
   first after a change of the data does), and "kept", served again until the
   data changes (benchhub/comparisons/kept.py; in Redis, ``--redis-url``);
3. with ``--plans``, prints the plan (EXPLAIN ANALYZE) of each case's cells statement: the
   packs' one, or the rows' with ``--rows``.

Computed answers come from the measurement packs (benchhub/comparisons/packs.py)
where they are current: before timing, each case's metric has its packs built if
they are not (the build's time is printed), and each line says whether the packs or
the rows answered. ``--rows`` times the rows' statement instead (packs not read).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bh_stats_bench \\
        .venv/bin/python benchmarks/compare.py --measurements 1000000

Targets (issue 10): p95 < 150 ms at 1 M measurements, < 500 ms at 10 M.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLIENTS = (1, 2, 4, 8, 16, 20, 40, 80, 100)
SU_METRICS = ("throughput", "latency_mean", "latency_p50", "latency_p95", "latency_p99", "errors")
OPERATIONS = [f"op_{i:02d}" for i in range(46)]
SERVERS = [
    ("postgresql", "13", "13.16"),
    ("postgresql", "14", "14.13"),
    ("postgresql", "15", "15.8"),
    ("postgresql", "16", "16.4"),
    ("mariadb", "10.6", "10.6.19"),
    ("mariadb", "10.11", "10.11.9"),
    ("mariadb", "11.4", "11.4.3"),
]
FILESYSTEMS = [
    ("ext4", ""),
    ("ext4", "noatime"),
    ("xfs", ""),
    ("xfs", "noatime"),
    ("zfs", ""),
    ("btrfs", ""),
    ("btrfs", "compress=zstd"),
    ("ext3", ""),
    ("jfs", ""),
]
CPUS = [f"CPU model {i}" for i in range(8)]
LOAD_ENGINES = ("benchhub-agent", "pgbench")
PROFILES = ("default", "my-huge.cnf")

CASES = {
    "throughput by clients, series engine, nothing fixed": {
        "benchmark": "select-update",
        "metric": "throughput",
        "x": "param.clients",
        "series": "engine",
    },
    "throughput by clients, series filesystem, engine fixed": {
        "benchmark": "select-update",
        "metric": "throughput",
        "x": "param.clients",
        "series": "filesystem",
        "engine": "postgresql",
    },
    "sql-bench seconds by operation, series filesystem, profile fixed": {
        "benchmark": "sql-bench",
        "metric": "seconds",
        "x": "param.operation",
        "series": "filesystem",
        "config_profile": "my-huge.cnf",
    },
}


def setup_django(url: str, redis_url: str = "") -> None:
    """Kept answers in Redis as in production with ``redis_url``, else in the
    database cache (the embedded default's). Reads queue no task either way."""
    os.environ["DATABASE_URL"] = url
    os.environ.pop("REDIS_URL", None)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
    import django

    django.setup()


def admin_url(url: str) -> str:
    return url.rsplit("/", 1)[0] + "/postgres"


def recreate(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url(url), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def exists(url: str) -> bool:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url(url), autocommit=True) as connection:
        return bool(
            connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        )


def fill(url: str, measurements: int, seed: int) -> None:
    """Dimension rows through the ORM (few), then submissions, runs and
    measurements with COPY."""
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from benchhub.results.comparability import FINGERPRINT_VERSION, run_fingerprint
    from benchhub.results.models import (
        Benchmark,
        Client,
        DatabaseServer,
        Hardware,
        Metric,
        OperatingSystem,
        Storage,
    )
    from benchhub.results.normalization.versions import version_sort_text
    from benchhub.results.points import parameter_keys

    call_command("migrate", verbosity=0)
    rng = random.Random(seed)
    user, _ = User.objects.get_or_create(username="bench")

    def dimension(model, **fields):
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
        row, _ = model.objects.get_or_create(digest=digest, defaults=fields)
        return row.pk

    hardware = [
        dimension(Hardware, cpu_vendor="amd", cpu_model=cpu, cores=2**i % 64 + 2)
        for i, cpu in enumerate(CPUS)
    ]
    storage = [
        dimension(Storage, filesystem=fs, mount_options=opts, kind="ssd")
        for fs, opts in FILESYSTEMS
    ]
    oses = [
        dimension(OperatingSystem, family="linux", distribution=d)
        for d in ("debian", "ubuntu", "rhel")
    ]
    servers = {
        (engine, major, profile): dimension(
            DatabaseServer,
            engine=engine,
            version=version,
            version_major=major,
            version_raw=version,
            version_sort=version_sort_text(version),
            config_profile=profile,
        )
        for engine, major, version in SERVERS
        for profile in PROFILES
    }
    clients = {
        name: dimension(Client, load_engine=name, protocol="unix_socket") for name in LOAD_ENGINES
    }
    benchmarks = {
        b.name: b for b in Benchmark.objects.filter(name__in=["select-update", "sql-bench"])
    }
    metrics = {
        (m.benchmark.name, m.name): m.pk
        for m in Metric.objects.select_related("benchmark").filter(
            benchmark__in=benchmarks.values()
        )
    }

    per_su = len(CLIENTS) * len(SU_METRICS)
    per_sql = len(OPERATIONS) + 1
    # A ninth of the measurements from sql-bench, the rest from sweeps.
    sql_runs = measurements // 9 // per_sql
    su_runs = (measurements - sql_runs * per_sql) // per_su
    submissions, runs, rows = io.StringIO(), io.StringIO(), io.StringIO()
    with psycopg.connect(url) as connection:
        base = connection.execute("SELECT coalesce(max(id), 0) FROM results_run").fetchone()[0]
        submission_base = connection.execute(
            "SELECT coalesce(max(id), 0) FROM results_submission"
        ).fetchone()[0]
    run_id = base
    document = json.dumps({"schema": 1, "note": "benchmarks/compare.py"})
    for index in range(su_runs + sql_runs):
        run_id += 1
        submission_id = submission_base + index + 1
        benchmark = "select-update" if index < su_runs else "sql-bench"
        engine, major, _ = rng.choice(SERVERS)
        profile = rng.choice(PROFILES)
        load_engine = rng.choice(LOAD_ENGINES) if benchmark == "select-update" else "benchhub-agent"
        fs = rng.randrange(len(FILESYSTEMS))
        cpu = rng.randrange(len(CPUS))
        submissions.write(
            "\t".join(
                [
                    str(submission_id),
                    f"{rng.getrandbits(128):032x}"[:32],
                    str(user.pk),
                    "agent",
                    "approved",
                    "1",
                    "0" * 64,
                    document,
                    "benchhub-agent",
                    "0.1",
                    "",
                    "\\N",
                    "",
                    "2026-11-01 00:00:00+00",
                    "",
                    "",
                ]
            )
            + "\n"
        )
        fingerprint = run_fingerprint(
            benchmark=benchmark,
            benchmark_version="1",
            parameters={},
            engine=engine,
            engine_major=major,
            load_engine=load_engine,
        )
        samples_count = rng.choice((1, 3, 3, 5))
        runs.write(
            "\t".join(
                map(
                    str,
                    [
                        run_id,
                        submission_id,
                        0,
                        benchmarks[benchmark].pk,
                        "1",
                        "{}",
                        samples_count,
                        "\\N",
                        "\\N",
                        "",
                        hardware[cpu],
                        storage[fs],
                        rng.choice(oses),
                        servers[engine, major, profile],
                        clients[load_engine],
                        fingerprint,
                        FINGERPRINT_VERSION,
                        "" if samples_count >= 3 else "unrepeated",
                        "\\N",
                        "\\N",
                        "{}",
                        "approved",  # its submission's status, which every run here has
                    ],
                )
            )
            + "\n"
        )
        # Engines, filesystems and CPUs differ by a few to tens of percent; each run
        # has its own noise, skewed (an occasional slow run).
        speed = (
            (1.0 if engine == "postgresql" else 0.8)
            * (1 + 0.04 * fs)
            * (1 + 0.1 * cpu)
            * (3.0 if rng.random() < 0.02 else 1.0)
            * rng.lognormvariate(0, 0.05)
        )
        if benchmark == "select-update":
            points = [
                (metric, {"clients": clients_n}, _su_value(metric, clients_n, speed))
                for clients_n in CLIENTS
                for metric in SU_METRICS
            ]
        else:
            seconds = [
                (op, {"operation": op}, (i % 7 + 1) * 3.0 / speed)
                for i, op in enumerate(OPERATIONS)
            ]
            points = [("seconds", p, v) for _, p, v in seconds]
            points.append(("seconds", {"operation": "TOTALS"}, sum(v for _, _, v in seconds)))
        for metric, parameters, value in points:
            samples = [round(value * rng.gauss(1, 0.02), 4) for _ in range(samples_count)]
            rows.write(
                f"{run_id}\t{metrics[benchmark, metric]}\t{json.dumps(parameters)}\t{value:.6g}\t"
                f"{json.dumps(samples)}\tf\t\t\\N\t{json.dumps(parameter_keys(parameters))}\n"
            )
    with psycopg.connect(url) as connection, connection.cursor() as cursor:
        present = {
            row[0]
            for row in cursor.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'results_submission'"
            )
        }
        moderation = {"status_before_hidden", "status_reason"} <= present
        if not moderation:  # before the moderation migration: two columns fewer
            submissions = io.StringIO(
                "".join(
                    line.rsplit("\t", 2)[0] + "\n" for line in submissions.getvalue().splitlines()
                )
            )
        for table, columns, data in (
            (
                "results_submission",
                "id, uuid, submitter_id, source, status, schema_version, content_digest, "
                "document, tool, tool_version, command, citation, note, created_at"
                + (", status_before_hidden, status_reason" if moderation else ""),
                submissions,
            ),
            (
                "results_run",
                "id, submission_id, position, benchmark_id, benchmark_version, parameters, "
                "repetitions, started_at, ended_at, note, hardware_id, storage_id, os_id, "
                "server_id, client_id, fingerprint, fingerprint_version, noise, "
                "repetition_cv, load_engine_cpu, parameter_keys, submission_status",
                runs,
            ),
            (
                "results_measurement",
                "run_id, metric_id, parameters, value, samples, approximate, note, outlier_score, "
                "parameter_keys",
                rows,
            ),
        ):
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                copy.write(data.getvalue())
        for table in ("results_submission", "results_run", "results_measurement"):
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 -- our names
                f"(SELECT max(id) FROM {table}))"
            )
        connection.commit()
        connection.autocommit = True
    _list_parameter_names()
    _summarize_runs()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")


def _list_parameter_names() -> None:
    """The metrics' parameter names /compare/ offers, which an upload
    records and COPY does not: listed as migration 0007 lists them."""
    import importlib

    from django.apps import apps
    from django.db import connection as django_connection

    migration = importlib.import_module("benchhub.results.migrations.0007_metric_parameters")
    with django_connection.schema_editor() as editor:
        migration.list_stored_names(apps, editor)


def _summarize_runs() -> None:
    """Each run's summary per metric (RunMetric), which an upload writes and
    COPY does not: written as migration 0012 writes it."""
    import importlib

    from django.apps import apps
    from django.db import connection as django_connection

    migration = importlib.import_module("benchhub.results.migrations.0012_run_metric_summaries")
    with django_connection.schema_editor() as editor:
        migration.summarize_stored(apps, editor)


def _su_value(metric: str, clients: int, speed: float) -> float:
    throughput = speed * 900 * min(clients, 16) ** 0.7
    if metric == "throughput":
        return throughput
    if metric == "errors":
        return 0.0
    mean = clients / throughput * 1000
    return (
        mean
        * {"latency_mean": 1.0, "latency_p50": 0.9, "latency_p95": 2.1, "latency_p99": 3.4}[metric]
    )


class Split:
    """Where a request's time went: waiting on the database (every statement,
    the cells one and the small lookups, through Django's execute wrappers,
    which the cells' binary cursor goes through too) and the process's own
    CPU (Python: parsing, verdicts, U tests, scores, JSON or the template)."""

    def __init__(self) -> None:
        self.database = 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.database += time.perf_counter() - started


def measure(
    client, path: str, query: dict, requests: int
) -> tuple[list[float], int, int, list[float], list[float]]:
    """Sorted timings (ms), queries per request, the answer's size, and per
    request the database's wall time and the process's CPU time (ms)."""
    from django.db import connection, reset_queries

    for _ in range(2):  # warm-up
        response = client.get(path, query)
        assert response.status_code in (200, 302), (response.status_code, response.content[:500])
    timings = []
    from django.conf import settings

    settings.DEBUG = True  # count queries
    reset_queries()
    client.get(path, query)
    queries = len(connection.queries)
    settings.DEBUG = False
    size = 0
    database, cpu = [], []
    for _ in range(requests):
        split = Split()
        with connection.execute_wrapper(split):
            started, cpu_started = time.perf_counter(), time.process_time()
            response = client.get(path, query)
            timings.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
        database.append(split.database * 1000)
        size = len(response.content)
    return sorted(timings), queries, size, database, cpu


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def plan(query: dict, *, packed: bool) -> str:
    from django.contrib.auth.models import AnonymousUser
    from django.db import connection, transaction

    from benchhub.comparisons import selectors
    from benchhub.comparisons.from_packs import PackedCells
    from benchhub.comparisons.in_database import cells_statement, settings_statement
    from benchhub.comparisons.query import comparison_query_parse

    parsed = comparison_query_parse({k: [v] for k, v in query.items()})
    if packed:
        cells = PackedCells.of(parsed)
        if cells is None:
            return "packs: the versions of the data could not be read (is Redis there?)"
        sql, params = cells.statement
    else:
        sql, params = cells_statement(selectors._measurements(AnonymousUser(), parsed), parsed)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(settings_statement())
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS OFF) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def packs_ready(queries: Iterable[dict] | None = None) -> None:
    """Build the packs of each query's metric (every case's: None) where out of date, timed."""
    from benchhub.comparisons import packs
    from benchhub.results.models import Metric

    for query in CASES.values() if queries is None else queries:
        metric = Metric.objects.get(benchmark__name=query["benchmark"], name=query["metric"])
        if packs.packs_current(metric.pk):
            continue
        started = time.perf_counter()
        count = packs.packs_build(metric.pk)
        print(
            f"packs of {query['benchmark']} {query['metric']} built: {count:,} packs "
            f"in {time.perf_counter() - started:.1f} s"
        )


@contextlib.contextmanager
def packs_counted():
    """While inside, one entry per comparison the packs answered (use len())."""
    from benchhub.comparisons.from_packs import PackedCells

    read = PackedCells.read
    counted: list[int] = []

    def counting(self, cursor):
        cells = read(self, cursor)
        if cells is not None:
            counted.append(1)
        return cells

    PackedCells.read = counting
    try:
        yield counted
    finally:
        PackedCells.read = read


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/bh_stats_bench")
    parser.add_argument("--measurements", type=int, default=1_000_000)
    parser.add_argument(
        "--requests", type=int, default=20, help="timed requests per case; 0 only fills"
    )
    parser.add_argument("--refill", action="store_true")
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--plans", action="store_true", help="print EXPLAIN ANALYZE of each case")
    parser.add_argument(
        "--rows", action="store_true", help="computed answers from the rows, not the packs"
    )
    parser.add_argument(
        "--redis-url",
        default="redis://127.0.0.1:6379/7",
        help="where answers are kept; empty: the database cache",
    )
    args = parser.parse_args()

    if args.refill or not exists(args.database):
        recreate(args.database)
        setup_django(args.database, args.redis_url)
        started = time.perf_counter()
        fill(args.database, args.measurements, args.seed)
        print(f"filled in {time.perf_counter() - started:.0f} s")
    else:
        setup_django(args.database, args.redis_url)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)  # a database filled by an older release
    from django.test import Client

    from benchhub.results.models import Measurement

    total = Measurement.objects.count()
    print(f"{total:,} measurements; load average {os.getloadavg()[0]:.2f} before (2 cores, shared)")
    if args.requests <= 0:
        return 0
    from django.conf import settings

    from benchhub.lib.collector import freeze_what_startup_loaded

    freeze_what_startup_loaded()  # as benchhub/wsgi.py does in every web process
    settings.BENCHHUB_COMPARISON_PACKS = not args.rows
    if not args.rows:
        packs_ready()
    client = Client()
    keep = settings.BENCHHUB_COMPARISON_KEEP_SECONDS
    for name, query in CASES.items():
        for path in ("/api/v1/comparisons/", "/compare/"):
            # computed: every request computes its answer, as the first one
            # after a change of the data does; kept: served again
            # (benchhub/comparisons/kept.py), as every later one is.
            for mode, seconds in (("computed", 0), ("kept", keep)):
                settings.BENCHHUB_COMPARISON_KEEP_SECONDS = seconds
                with packs_counted() as packed:
                    timings, queries, size, database, cpu = measure(
                        client, path, query, args.requests
                    )
                source = "kept" if mode == "kept" else "packs" if packed else "rows"
                print(
                    f"{name:66} {path:22} {mode:8} {source:5} "
                    f"p50 {statistics.median(timings):6.0f} ms  "
                    f"p95 {percentile(timings, 0.95):6.0f} ms  {queries} queries  "
                    f"{size / 1024:.0f} kB  (p50: database {statistics.median(database):.0f} ms, "
                    f"Python CPU {statistics.median(cpu):.0f} ms)"
                )
            settings.BENCHHUB_COMPARISON_KEEP_SECONDS = keep
        if args.plans:
            print(plan(query, packed=not args.rows))
    print(f"load average {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
