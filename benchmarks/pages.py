"""How fast are the result pages on a full database? Server time of the
results browser, its search, the leaderboards, runs side by side, the
changes between releases, the history over versions, a run page, a
dimension page and a benchmark page.

Fills its own PostgreSQL database (``bh_browse_pages`` by default) with
about 1,000,000 measurements through the upload service itself: ~17,000
runs of select-update (9 client counts x 9 metrics), sql-bench (46
operations) and TPC-B (4 metrics x 3 client counts) over a realistic
spread of environments (30 CPU models, 5 filesystems with their mount
options, 4 distributions, PostgreSQL 12-17, MySQL, MariaDB), with a
lognormal spread of values. Baselines are computed as the worker would.
Then it times each page (Django's test client in this process: URL
routing, queries, template, no network) over varied URLs and prints
p50/p95 in ms, the SQL queries per page, the JavaScript each page loads,
and the load average (the machine is shared: read the figures with it).
Targets: p95 < 150 ms for the browser, run, dimension and benchmark pages
and < 300 ms for search, leaderboards, runs side by side and changes;
JavaScript per page < 300 KB.

    .venv/bin/python benchmarks/pages.py [--measurements 1000000] [--requests 40] [--keep]
    .venv/bin/python benchmarks/pages.py --fill-only   # fill and compute baselines, no timing

``--keep`` reuses a database already filled by an earlier run. On a shared
machine, fill with ``--fill-only`` (about 4 minutes at load ~3, 17 at load
18), then time with ``--keep`` when the machine is quiet.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CPUS = [
    ("AMD EPYC 7763 64-Core Processor", 64, 1.6),
    ("AMD EPYC 9654 96-Core Processor", 96, 2.0),
    ("AMD EPYC 7302P 16-Core Processor", 16, 1.1),
    ("AMD Ryzen 7 5800X 8-Core Processor", 8, 1.3),
    ("AMD Ryzen 9 7950X 16-Core Processor", 16, 1.8),
    ("AMD Ryzen 5 3600 6-Core Processor", 6, 0.9),
    ("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", 24, 1.2),
    ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", 32, 1.4),
    ("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", 14, 0.8),
    ("Intel(R) Xeon(R) CPU E5520 @ 2.27GHz", 4, 0.4),
    ("Intel(R) Xeon(R) E-2288G CPU @ 3.70GHz", 8, 1.1),
    ("Intel(R) Core(TM) i7-12700K", 12, 1.5),
    ("Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz", 4, 0.6),
    ("Intel(R) Core(TM) i9-13900K", 24, 1.9),
    ("Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz", 4, 0.7),
    ("Intel(R) Pentium(R) CPU G4560 @ 3.50GHz", 2, 0.5),
    ("Neoverse-N1", 16, 1.0),
    ("Neoverse-V1", 32, 1.3),
    ("Apple M1", 8, 1.2),
    ("Apple M2 Pro", 12, 1.5),
    ("Intel(R) Xeon(R) Silver 4214 CPU @ 2.20GHz", 12, 0.9),
    ("Intel(R) Xeon(R) Gold 5318Y CPU @ 2.10GHz", 24, 1.1),
    ("AMD Opteron(tm) Processor 6276", 16, 0.5),
    ("AMD EPYC 7B13", 8, 1.2),
    ("Intel(R) Xeon(R) CPU @ 2.20GHz", 4, 0.8),
    ("AMD EPYC 7571", 8, 0.9),
    ("Intel(R) Atom(TM) CPU C3758 @ 2.20GHz", 8, 0.3),
    ("AMD Ryzen 7 PRO 4750U with Radeon Graphics", 8, 1.0),
    ("Intel(R) Core(TM) i3-10100 CPU @ 3.60GHz", 4, 0.8),
    ("Intel(R) Xeon(R) W-2245 CPU @ 3.90GHz", 8, 1.2),
]
STORAGE = [
    ({"kind": "nvme", "filesystem": "ext4", "mount_options": "rw,relatime"}, 1.0),
    ({"kind": "nvme", "filesystem": "xfs", "mount_options": "rw,noatime"}, 1.05),
    ({"kind": "ssd", "filesystem": "ext4", "mount_options": "rw,noatime,discard"}, 0.9),
    ({"kind": "ssd", "filesystem": "zfs", "mount_options": "rw,xattr"}, 0.75),
    ({"kind": "ssd", "filesystem": "btrfs", "mount_options": "rw,relatime,ssd"}, 0.8),
    ({"kind": "hdd", "filesystem": "ext4", "mount_options": "rw,relatime"}, 0.35),
    ({"kind": "virtual", "filesystem": "ext4", "mount_options": "rw,relatime,discard"}, 0.7),
    ({"kind": "hdd", "filesystem": "ufs", "mount_options": "rw,softupdates"}, 0.3),
]
SYSTEMS = [
    {"family": "linux", "distribution": "Debian GNU/Linux", "version": "12", "kernel": "6.1.0"},
    {"family": "linux", "distribution": "Ubuntu", "version": "24.04", "kernel": "6.8.0"},
    {"family": "linux", "distribution": "Ubuntu", "version": "22.04", "kernel": "5.15.0"},
    {"family": "linux", "distribution": "Rocky Linux", "version": "9.4", "kernel": "5.14.0"},
    {"family": "freebsd", "distribution": "FreeBSD", "version": "14.1", "kernel": "14.1"},
]
SERVERS = [
    ("PostgreSQL {v} on x86_64-pc-linux-gnu", ["12.20", "13.16", "14.13", "15.8", "16.4", "17.0"]),
    ("{v}-0ubuntu0.22.04.1", ["8.0.36", "8.0.39", "8.4.2"]),  # MySQL, engine given
    ("{v}-MariaDB-0+deb12u1", ["10.11.6", "10.6.18", "11.4.3"]),
]
CLIENTS = (1, 2, 4, 8, 16, 20, 40, 80, 100)
SELECT_UPDATE_METRICS = [
    ("throughput", "tx/s"),
    ("latency_mean", "ms"),
    ("latency_p50", "ms"),
    ("latency_p95", "ms"),
    ("latency_p99", "ms"),
    ("latency_max", "ms"),
    ("errors", "count"),
    ("retries", "count"),
    ("lost_updates", "count"),
]
SQL_BENCH_OPERATIONS = [
    "alter_table_add", "alter_table_drop", "connect", "connect+select_1_row",
    "connect+select_simple", "count", "count_distinct", "count_distinct_2",
    "count_distinct_big", "count_distinct_group", "count_distinct_group_on_key",
    "count_distinct_group_on_key_parts", "count_distinct_key_prefix", "count_group_on_key_parts",
    "count_on_key", "create+drop", "create_MANY_tables", "create_index", "create_key+drop",
    "create_table", "delete_all_many_keys", "delete_big", "delete_big_many_keys", "delete_key",
    "delete_range", "drop_index", "drop_table", "drop_table_when_MANY_tables", "insert",
    "insert_duplicates", "insert_key", "insert_many_fields", "insert_select_1_key",
    "insert_select_2_keys", "min_max", "min_max_on_key", "multiple_value_insert", "order_by_big",
    "order_by_big_key", "order_by_key", "select_1_row", "select_2_rows", "select_big",
    "select_range", "update_of_key", "TOTALS",
]  # fmt: skip


def log(message: str) -> None:
    print(message, flush=True)


def setup(database: str) -> None:
    base = os.environ.get("BENCH_DATABASE_SERVER", "postgres://postgres@127.0.0.1:5432")
    os.environ["DATABASE_URL"] = f"{base}/{database}"
    # Uploads queue their tasks; nothing here runs a worker, the script
    # computes the baselines itself once everything is stored.
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/4")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")
    import psycopg

    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database]
        ).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{database}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def environment(rng: random.Random) -> tuple[dict, float]:
    cpu, cores, speed = rng.choice(CPUS)
    storage, io = rng.choice(STORAGE)
    system = rng.choice(SYSTEMS)
    template, versions = rng.choice(SERVERS)
    version = rng.choice(versions)
    database = {"version_string": template.format(v=version), "config_profile": "default"}
    engine_speed = 1.0
    if "MariaDB" in template:
        engine_speed = 0.85
    elif "ubuntu" in template:
        database["engine"] = "mysql"
        engine_speed = 0.8
    return (
        {
            "hardware": {"cpu": cpu, "cores": cores, "threads": cores * 2, "ram_bytes": 2**34},
            "storage": dict(storage, io_scheduler=rng.choice(["none", "mq-deadline", "bfq"])),
            "os": system,
            "database": database,
            "client": {
                "protocol": rng.choice(["unix_socket", "tcp_loopback"]),
                "driver": "psycopg",
                "driver_version": "3.2.3",
                "cpu_placement": "unpinned",
                "load_engine": "benchhub-agent",
            },
        },
        speed * io * engine_speed,
    )


def noisy(rng: random.Random, value: float, spread: float = 0.12) -> tuple[float, list[float]]:
    samples = [round(value * rng.lognormvariate(0, spread), 4) for _ in range(3)]
    return sorted(samples)[1], samples


def repeated(rng: random.Random, metric: str, unit: str, clients: int, value: float) -> dict:
    """One measurement at ``clients``: the median of three noisy repetitions."""
    median, samples = noisy(rng, value) if value else (0.0, [0, 0, 0])
    return {
        "metric": metric,
        "unit": unit,
        "parameters": {"clients": clients},
        "value": median,
        "samples": samples,
    }


def select_update_run(rng: random.Random, speed: float) -> dict:
    measurements = []
    peak = 3000 * speed
    for clients in CLIENTS:
        throughput = peak * clients / (clients + 6) / (1 + clients / 300)
        latency = 1000 * clients / throughput
        values = {
            "throughput": throughput,
            "latency_mean": latency,
            "latency_p50": latency * 0.8,
            "latency_p95": latency * 2.5,
            "latency_p99": latency * 4,
            "latency_max": latency * 12,
            "errors": 0.0,
            "retries": float(rng.randint(0, 3)),
            "lost_updates": 0.0,
        }
        for metric, unit in SELECT_UPDATE_METRICS:
            measurements.append(repeated(rng, metric, unit, clients, values[metric]))
    return {
        "benchmark": "select-update",
        "benchmark_version": "1",
        "parameters": {"transactions": 10000, "rows": 100, "locking": "for_update"},
        "repetitions": 3,
        "measurements": measurements,
    }


def sql_bench_run(rng: random.Random, speed: float) -> dict:
    measurements = []
    total = 0.0
    for index, operation in enumerate(SQL_BENCH_OPERATIONS[:-1]):
        value = round((5 + (index * 37) % 90) / speed * rng.lognormvariate(0, 0.15), 3)
        total += value
        measurements.append(
            {
                "metric": "seconds",
                "unit": "s",
                "parameters": {"operation": operation},
                "value": value,
            }
        )
    measurements.append(
        {"metric": "seconds", "unit": "s", "parameters": {"operation": "TOTALS"}, "value": total}
    )
    return {"benchmark": "sql-bench", "benchmark_version": "1", "measurements": measurements}


def tpcb_run(rng: random.Random, speed: float) -> dict:
    measurements = []
    for clients in (1, 8, 32):
        tps = 900 * speed * clients / (clients + 4)
        latency = 1000 * clients / tps
        for metric, unit, value in (
            ("tps", "tx/s", tps),
            ("latency_mean", "ms", latency),
            ("latency_p95", "ms", latency * 2.2),
            ("latency_p99", "ms", latency * 3.5),
        ):
            measurements.append(repeated(rng, metric, unit, clients, value))
    return {
        "benchmark": "tpcb",
        "benchmark_version": "1",
        "parameters": {"scale": 10, "duration": 60},
        "repetitions": 3,
        "measurements": measurements,
    }


def fill(target: int, seed: int = 20261123) -> None:
    from django.contrib.auth import get_user_model

    from benchhub.results.models import Measurement, Submission
    from benchhub.results.services import submission_create

    rng = random.Random(seed)
    users = [get_user_model().objects.get_or_create(username=f"bench{i}")[0] for i in range(40)]
    stored = Measurement.objects.count()
    started = time.perf_counter()
    while stored < target:
        env, speed = environment(rng)
        runs = []
        for _ in range(8):
            kind = rng.random()
            if kind < 0.5:
                runs.append(select_update_run(rng, speed))
            elif kind < 0.8:
                runs.append(sql_bench_run(rng, speed))
            else:
                runs.append(tpcb_run(rng, speed))
        document = {
            "schema": 1,
            "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "source": {
                "kind": "agent",
                "tool": "benchhub-agent",
                "tool_version": "0.1.0",
                "command": "benchhub-agent run select-update --upload",
            },
            "environment": env,
            "runs": runs,
        }
        status = Submission.Status.APPROVED if rng.random() < 0.95 else Submission.Status.PENDING
        submission_create(submitter=rng.choice(users), document=document, status=status)
        stored += sum(len(run["measurements"]) for run in runs)
        if stored // 50_000 != (stored - sum(len(r["measurements"]) for r in runs)) // 50_000:
            rate = stored / (time.perf_counter() - started)
            log(f"  {stored:,} measurements stored ({rate:,.0f}/s)")


def refresh_baselines() -> None:
    """Every key rebuilt from its data, as the nightly task (and
    ``manage.py baselines_recompute``) does: one key a round."""
    from benchhub.baselines.marking import baselines_mark_all
    from benchhub.baselines.refresh import baselines_refresh

    baselines_mark_all()
    while baselines_refresh(limit=1)[1]:
        pass


def page_urls(rng: random.Random, count: int) -> dict[str, list[str]]:
    from benchhub.results.models import DatabaseServer, Hardware, Run, Submission

    approved = Run.objects.filter(submission__status=Submission.Status.APPROVED)
    ids = list(approved.order_by("?").values_list("id", flat=True)[:count])
    cpus = list(Hardware.objects.values_list("cpu_model", flat=True))
    servers = list(DatabaseServer.objects.values_list("engine", "version"))
    filters = [
        "",
        "?engine=postgresql&version_major=16",
        "?filesystem=ext4",
        "?benchmark=select-update",
        "?benchmark=select-update&engine=postgresql&version_major=15&filesystem=ext4",
        "?cpu_model=epyc",
        "?q=xeon+gold",
        "?storage_kind=nvme&protocol=unix_socket&sort=version",
        "?engine=mariadb&page=7",
        "?q=ubuntu&sort=cpu&page=3",
        "?benchmark=tpcb&run_param.scale=10",
        "?os_distribution=rocky&io_scheduler=bfq",
    ]
    dimensions = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.4:
            dimensions.append(f"/cpus/{rng.choice(cpus)}/")
        elif kind < 0.7:
            dimensions.append(f"/filesystems/{rng.choice(['ext4', 'xfs', 'zfs', 'btrfs', 'ufs'])}/")
        else:
            engine, version = rng.choice(servers)
            dimensions.append(f"/servers/{engine}/{version}/")
    searches = [
        "postgresql 15 ext4 epyc",
        "xfs noatime",
        "mariadb 11",
        "postgres 16 xeon",
        "zfs redis",
        "rocky bfq",
    ]
    leaderboards = [
        "select-update/leaderboard/",
        "select-update/leaderboard/?engine=postgresql&param.clients=16",
        "sql-bench/leaderboard/",
        "tpcb/leaderboard/?filesystem=xfs",
    ]
    changes = [
        "?engine=postgresql&from=15&to=16",
        "?engine=postgresql&from=16&to=17",
        "?engine=mariadb&from=10&to=11",
    ]
    histories = [
        "select-update/history/?engine=postgresql&param.clients=16",
        "select-update/history/?engine=postgresql",  # the point chosen: one more read
        "tpcb/history/?engine=postgresql&by=version_major&filesystem=xfs",
        "sql-bench/history/?engine=mysql",
    ]
    # Runs of one benchmark, as a reader picks them: runs of different
    # benchmarks share no point, and their pages judged nothing.
    of_benchmark = {
        name: list(
            approved.filter(benchmark__name=name).order_by("?").values_list("id", flat=True)[:count]
        )
        for name in ("select-update", "sql-bench", "tpcb")
    }
    side_by_side = [
        "&".join(
            f"run={pk}"
            for pk in rng.sample(of_benchmark[rng.choice(sorted(of_benchmark))], rng.randint(2, 12))
        )
        for _ in range(count)
    ]
    return {
        "results browser": [f"/results/{rng.choice(filters)}" for _ in range(count)],
        "search": [f"/results/?q={rng.choice(searches).replace(' ', '+')}" for _ in range(count)],
        "leaderboard": [f"/benchmarks/{rng.choice(leaderboards)}" for _ in range(count)],
        "runs side by side": [f"/runs/compare/?{query}" for query in side_by_side],
        "changes": [f"/changes/{rng.choice(changes)}" for _ in range(count)],
        "history": [f"/benchmarks/{rng.choice(histories)}" for _ in range(count)],
        "run page": [f"/runs/{pk}/" for pk in ids],
        "dimension page": dimensions,
        "benchmark page": [
            f"/benchmarks/{rng.choice(['select-update', 'sql-bench', 'tpcb'])}/"
            for _ in range(count)
        ],
    }


def javascript_bytes(html: str) -> int:
    total = 0
    for src in re.findall(r'<script src="/static/([^"]+)"', html):
        total += (ROOT / "static" / src).stat().st_size
    return total


def time_pages(urls: dict[str, list[str]]) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from benchhub.lib.collector import freeze_what_startup_loaded

    freeze_what_startup_loaded()  # as benchhub/wsgi.py does in every web process
    client = Client()
    for kind, paths in urls.items():
        for path in paths[:3]:  # warm-up: connections, template cache
            client.get(path)
        times, queries, scripts, ranked = [], [], 0, 0
        for path in paths:
            with CaptureQueriesContext(connection) as captured:
                begin = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - begin) * 1000)
            assert response.status_code == 200, (path, response.status_code)
            queries.append(len(captured))
            html = response.content.decode()
            scripts = max(scripts, javascript_bytes(html))
            ranked += 'id="headline-percentile"' in html
        times.sort()
        p95 = times[max(0, round(0.95 * len(times)) - 1)]
        log(
            f"{kind:16} p50 {statistics.median(times):6.1f} ms   p95 {p95:6.1f} ms   "
            f"max {times[-1]:6.1f} ms   queries {min(queries)}-{max(queries)}   "
            f"JavaScript {scripts / 1024:5.0f} KB   (n={len(times)})"
            + (f"   percentile shown on {ranked}" if kind == "run page" else "")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default="bh_browse_pages")
    parser.add_argument("--measurements", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="reuse the data already stored")
    parser.add_argument(
        "--fill-only", action="store_true", help="fill and compute baselines, time nothing"
    )
    parser.add_argument(
        "--rebuild-baselines",
        action="store_true",
        help="recompute every baseline of the stored data (after a change to how they are kept)",
    )
    args = parser.parse_args()

    setup(args.database)
    from benchhub.baselines.models import Baseline
    from benchhub.results.models import Measurement, Run

    stored = Measurement.objects.count()
    if not args.keep or stored < args.measurements:
        log(f"filling {args.database} to {args.measurements:,} measurements ({stored:,} stored)")
        fill(args.measurements)
        log("computing baselines")
        refresh_baselines()
    elif args.rebuild_baselines or not Baseline.objects.exists():
        log("computing baselines")
        started = time.perf_counter()
        refresh_baselines()
        log(f"  {time.perf_counter() - started:.0f} s")
    # Fresh statistics and visibility, as autovacuum keeps them on a live site (this
    # machine kind's PostgreSQL runs with autovacuum off): without statistics the planner
    # takes "approved" for a rare status; with a filler's or a migration's dead rows left,
    # no index-only scan pays and the leaderboard took 0.6 s instead of 0.2.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    log(
        f"{Measurement.objects.count():,} measurements in {Run.objects.count():,} runs; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (shared machine)"
    )
    if args.fill_only:
        return
    time_pages(page_urls(random.Random(7), args.requests))
    log(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
