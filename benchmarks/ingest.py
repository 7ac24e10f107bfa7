"""Upload throughput of BenchHub: POST /api/v1/submissions/ under gunicorn on PostgreSQL.

Self-contained and bounded in time. One run:

1. drops and creates a scratch PostgreSQL database, migrates it, creates a user and an
   API token;
2. serves BenchHub with gunicorn on 127.0.0.1 (a free port), DEBUG off, on that database,
   configured by gunicorn.conf.py as docker-compose.yml runs it (options override it);
3. posts select-update sweeps (docs/examples/select-update-submission.json: 9 client
   levels x 6 metrics x 3 samples, full environment), each with a new uuid and jittered
   values, from N client threads (http.client, keep-alive where the server allows it)
   for a warm-up and then a measured window. About one upload in ten describes an
   environment never seen before (one new dimension row); the rest reuse known ones;
4. prints the throttles in force, uploads/s, p50/p95/p99 latency, errors by status, CPU
   used by the client, the gunicorn workers and the whole machine, and each worker's RSS
   afterwards; with a worker (or in-process tasks), the runs still marked for a baseline
   refresh at the end of the window and how long the backlog took to drain;
5. checks that the database holds exactly one submission per 201 answer (and its runs
   and measurements), stops gunicorn and drops the database.

    .venv/bin/python benchmarks/ingest.py --duration 30
    .venv/bin/python benchmarks/ingest.py --worker-class sync --workers 4 --tasks worker
    .venv/bin/python benchmarks/ingest.py --server runserver --database sqlite --tasks eager \
        --clients 8      # the embedded default (`make run`): no request may take over 1 s
    .venv/bin/python benchmarks/ingest.py --tasks worker --throttles deployed

The Celery worker runs with docker-compose.yml's --concurrency. By default the throttles
count every request at a rate never reached (one token sends everything); with
``--throttles deployed`` they keep the deployed defaults (settings.py) and each client
thread uploads as a user of its own, as a community of agents would, so a refused upload
(429) is the throttle at work and not an error.

Every upload is the same select-update sweep on the same engine and major version: one
comparability key, the hot key whose baselines every upload marks.

Exit status 0 when the run was correct (stored == 201 answers, no 5xx or transport
errors); the speed targets are reported, not enforced.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from ingest_load import MEASUREMENTS_PER_UPLOAD, Bodies, Load, client_loop, document_templates
from ingest_stack import (
    THROTTLE_VARIABLES,
    backend_pids,
    baseline_state,
    children_of,
    compose_worker_concurrency,
    cpu_model,
    cpu_seconds,
    database_url,
    deployed_throttles,
    dimension_counts,
    drain_marks,
    drop_database,
    drop_queue,
    free_port,
    gunicorn_settings,
    machine_busy_seconds,
    manage,
    marked_runs,
    own_cpu_seconds,
    queue_length,
    recreate_database,
    rss_mb,
    start_celery,
    start_gunicorn,
    start_runserver,
    stop_process,
    stored_counts,
    wait_ready,
)

TASK_MODES = {
    "redis": "queued to Redis, no Celery worker (the web tier alone, as deployed)",
    "worker": "queued to Redis, a Celery worker on the same machine consumes them",
    "eager": "run inside the upload request (the embedded default, no REDIS_URL)",
}

UNREACHED_RATE = "10000000/minute"

TARGET_RATE = 150.0
TARGET_P99_MS = 300.0
TARGET_RSS_MB = 250.0


# --- report ---------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def run(args: argparse.Namespace) -> int:
    sqlite_path = Path(f"/tmp/{args.db_name}.sqlite3")  # noqa: S108 -- a scratch file
    if args.database == "sqlite":
        url = f"sqlite:///{sqlite_path}"
    else:
        url = database_url(args.admin_url, args.db_name)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "false",
        "SECRET_KEY": "ingest-benchmark-" + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "benchhub.settings",
        # WhiteNoise warns once per worker that collectstatic has not run: not our concern.
        "PYTHONWARNINGS": "ignore:No directory at",
    }
    if args.throttles == "deployed":
        throttles = deployed_throttles()
        for variable in THROTTLE_VARIABLES:
            env.pop(variable, None)
    else:
        # One token sends everything: the throttles still count every request
        # (their Redis round trips are in the figures), at a rate never reached.
        throttles = {v: os.environ.get(v, UNREACHED_RATE) for v in THROTTLE_VARIABLES}
        env.update(throttles)
    concurrency = args.concurrency or compose_worker_concurrency()
    if args.tasks == "eager":
        env.pop("REDIS_URL", None)  # the embedded default: tasks run inside the upload
    else:
        env["REDIS_URL"] = args.redis_url
        drop_queue(args.redis_url)
    load1 = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, {cpu_model()}; load average before: {load1:.2f}")
    print(f"database: {url} (dropped and created)")
    if args.database == "sqlite":
        sqlite_path.unlink(missing_ok=True)
    else:
        recreate_database(args.admin_url, args.db_name)
    server = celery = None
    try:
        manage(env, "migrate", "--noinput")
        users = args.clients if args.throttles == "deployed" else 1
        tokens = [
            manage(env, "create_api_token", f"ingest-bench-{i}", "--create-user").split()[-1]
            for i in range(users)
        ]
        port = free_port()
        if args.tasks == "worker":
            celery = start_celery(env, concurrency)
        if args.server == "runserver":
            server = start_runserver(env, port)
            wait_ready(server, port, 0)
            workers = [server.pid]
            print(f"runserver: 127.0.0.1:{port}, one threaded process (pid {server.pid})")
        else:
            settings = gunicorn_settings(args)
            server = start_gunicorn(args, env, port, settings)
            wait_ready(server, port, int(settings["workers"]))
            workers = children_of(server.pid)
            threads = (
                f" x {settings['threads']} threads" if settings["worker_class"] == "gthread" else ""
            )
            print(
                f"gunicorn: 127.0.0.1:{port}, gunicorn.conf.py, {settings['workers']} "
                f"{settings['worker_class']} workers{threads} "
                f"(pids {', '.join(map(str, workers))})"
            )
        worker_text = f" (--concurrency {concurrency})" if args.tasks == "worker" else ""
        print(f"tasks: {TASK_MODES[args.tasks]}{worker_text}")
        print(
            f"throttles: per token {throttles['BENCHHUB_THROTTLE_TOKEN']}, per user "
            f"{throttles['BENCHHUB_THROTTLE_USER']} ({args.throttles}); {users} user(s) uploading"
        )

        rng = random.Random(args.seed)
        bodies = Bodies(document_templates(64, rng), args.new_rate, args.seed)
        print(
            f"load: {args.clients} client threads, {args.warmup:g} s warm-up + "
            f"{args.duration:g} s measured, {len(bodies.next())} bytes per upload, "
            f"{args.new_rate:.0%} with a new environment"
        )
        load = Load()
        t0 = time.perf_counter()
        window_start = t0 + args.warmup
        window_end = window_start + args.duration
        clients = [
            threading.Thread(
                target=client_loop,
                args=(port, tokens[i % users], bodies, window_end, load, args.timeout),
                daemon=True,
            )
            for i in range(args.clients)
        ]
        for t in clients:
            t.start()
        time.sleep(max(0.0, window_start - time.perf_counter()))
        # Connections persist (CONN_MAX_AGE), so the backends of the warm-up are those of
        # the window.
        backends = (
            backend_pids(args.admin_url, args.db_name) if args.database == "postgresql" else []
        )
        # The pool's process is forked once the worker is up, which may be after
        # gunicorn's start: looked for here, or its CPU counted as "everything else".
        celery_pids = [celery.pid, *children_of(celery.pid)] if celery else []
        cpu_at_start = (
            own_cpu_seconds(),
            sum(cpu_seconds(p) for p in workers),
            machine_busy_seconds(),
            sum(cpu_seconds(p) for p in celery_pids),
            sum(cpu_seconds(p) for p in backends),
        )
        time.sleep(max(0.0, window_end - time.perf_counter()))
        cpu_at_end = (
            own_cpu_seconds(),
            sum(cpu_seconds(p) for p in workers),
            machine_busy_seconds(),
            sum(cpu_seconds(p) for p in celery_pids),
            sum(cpu_seconds(p) for p in backends),
        )
        load_after = os.getloadavg()[0]
        for t in clients:
            t.join(timeout=args.timeout + 5)
        rss = {p: rss_mb(p) for p in workers}
        queued = queue_length(args.redis_url) if args.tasks != "eager" else 0
        marks_at_end = drained = None
        if args.tasks != "redis":
            # Whoever refreshes baselines (the worker, or the server's in-process
            # rounds) keeps running while the backlog drains.
            marks_at_end = marked_runs(url)
            drained = drain_marks(url, args.drain_timeout)
    finally:
        if server is not None:
            stop_process(server)
        if celery is not None:
            stop_process(celery)
        if args.tasks != "eager":
            drop_queue(args.redis_url)
    try:
        counts = stored_counts(url)
        dimensions = dimension_counts(url)
        baselines = baseline_state(url)
    finally:
        if args.keep_db:
            print(f"database kept: {url}")
        elif args.database == "sqlite":
            sqlite_path.unlink(missing_ok=True)
        else:
            drop_database(args.admin_url, args.db_name)

    window = [s for s in load.samples if s.started >= window_start and s.ended <= window_end]
    created = [s for s in window if s.status == "201"]
    latencies = sorted((s.ended - s.started) * 1000 for s in window)
    rate = len(created) / args.duration
    p50, p95, p99 = (percentile(latencies, q) for q in (50, 95, 99))
    statuses = Counter(s.status for s in load.samples)
    errors = {k: v for k, v in statuses.items() if k != "201"}
    client_cpu = (cpu_at_end[0] - cpu_at_start[0]) / args.duration
    worker_cpu = (cpu_at_end[1] - cpu_at_start[1]) / args.duration
    celery_cpu = (cpu_at_end[3] - cpu_at_start[3]) / args.duration
    backend_cpu = (cpu_at_end[4] - cpu_at_start[4]) / args.duration
    busy = (cpu_at_end[2][0] - cpu_at_start[2][0]) / args.duration
    ncpu = os.cpu_count() or 1

    print()
    print(
        f"uploads/s      {rate:8.1f}   ({len(created)} created in the {args.duration:g} s window)"
    )
    print(f"latency ms     p50 {p50:.1f}   p95 {p95:.1f}   p99 {p99:.1f}   max {latencies[-1]:.1f}")
    print(f"errors         {dict(sorted(errors.items())) or 'none'} (whole run, warm-up included)")
    celery_text = f"celery worker {celery_cpu:.2f}   " if celery_pids else ""
    print(
        f"CPU (cores)    client {client_cpu:.2f}   gunicorn workers {worker_cpu:.2f}   "
        f"PostgreSQL backends {backend_cpu:.2f}   {celery_text}"
        f"whole machine {busy:.2f} of {ncpu} (everything else: "
        f"{busy - client_cpu - worker_cpu - celery_cpu - backend_cpu:.2f}; "
        f"load average at the end {load_after:.2f})"
    )
    if created:
        per = 1000 / rate
        print(
            f"CPU ms/upload  gunicorn {worker_cpu * per:.1f}   PostgreSQL backends "
            f"{backend_cpu * per:.1f}   client {client_cpu * per:.1f}"
        )
    print(
        "worker RSS MB  "
        + "   ".join(f"{pid}: {mb:.0f}" for pid, mb in rss.items())
        + "   (after the load)"
    )
    print(f"dimension rows {dimensions}")
    print(f"baselines      {baselines}")
    if marks_at_end is not None:
        print(f"marks          {marks_at_end} runs marked at the end of the window; {drained}")
    if args.server == "runserver":
        slow = sum(1 for ms in latencies if ms > 1000)
        print(f"over 1 s       {slow} of {len(latencies)} requests in the window")
    if args.tasks != "eager":
        print(f"task queue     {queued} messages waiting at the end (dropped)")

    total_created = statuses.get("201", 0)
    expected = {
        "submission": total_created,
        "run": total_created,
        "measurement": total_created * MEASUREMENTS_PER_UPLOAD,
    }
    correct = counts == expected
    print(
        f"stored         {counts}; 201 answers {total_created} -> "
        f"{'consistent' if correct else 'MISMATCH, expected ' + str(expected)}"
    )
    worst_rss = max(rss.values(), default=math.nan)
    met = rate >= TARGET_RATE and p99 < TARGET_P99_MS and worst_rss < TARGET_RSS_MB
    print(
        f"target         >= {TARGET_RATE:g}/s, p99 < {TARGET_P99_MS:g} ms, "
        f"RSS < {TARGET_RSS_MB:g} MB: {'met' if met else 'MISSED'}"
    )
    if args.server == "runserver":
        # The embedded default's own target (issue 10): no request over 1 s.
        print(
            f"target         no request over 1 s (embedded default): "
            f"{'met' if latencies and max(latencies) <= 1000 else 'MISSED'}"
        )
    refused = {"429"} if args.throttles == "deployed" else set()
    bad = any(k.startswith(("5", "conn")) for k in errors)
    if args.strict:
        bad = bool(set(errors) - refused)
    return 0 if correct and not bad else 1


def build_parser(description: str = __doc__.split("\n\n")[0]) -> argparse.ArgumentParser:
    """The options of this benchmark; benchmarks/load.py runs it with other defaults."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--duration", type=float, default=30, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=5, help="seconds before measuring")
    parser.add_argument("--clients", type=int, default=16, help="concurrent client threads")
    # gunicorn runs with production's gunicorn.conf.py (as docker-compose.yml runs it);
    # these override its settings (docs/performance.md "Ingest").
    parser.add_argument(
        "--workers", type=int, help="gunicorn worker processes (default: gunicorn.conf.py's)"
    )
    parser.add_argument(
        "--worker-class", choices=["sync", "gthread"], help="default: gunicorn.conf.py's"
    )
    parser.add_argument(
        "--threads", type=int, help="threads per gthread worker (default: gunicorn.conf.py's)"
    )
    parser.add_argument(
        "--new-rate", type=float, default=0.1, help="share of uploads with a new environment"
    )
    parser.add_argument("--timeout", type=float, default=30, help="client timeout, seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("INGEST_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="PostgreSQL URL allowed to create databases",
    )
    parser.add_argument("--db-name", default="benchhub_ingest_bench")
    parser.add_argument(
        "--tasks",
        choices=sorted(TASK_MODES),
        default="redis",
        help="where the upload's Celery task (baselines refresh) goes",
    )
    parser.add_argument(
        "--redis-url",
        default="redis://127.0.0.1:6379/13",
        help="Redis database for the task queue; its 'celery' list is deleted before and after",
    )
    parser.add_argument(
        "--server",
        choices=["gunicorn", "runserver"],
        default="gunicorn",
        help="runserver: the embedded default's `make run` (one threaded process)",
    )
    parser.add_argument(
        "--database",
        choices=["postgresql", "sqlite"],
        default="postgresql",
        help="sqlite: a scratch file /tmp/<db-name>.sqlite3 (the embedded default)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        help="Celery worker processes (default: docker-compose.yml's worker --concurrency)",
    )
    parser.add_argument(
        "--throttles",
        choices=["raised", "deployed"],
        default="raised",
        help="raised: counted at a rate never reached; deployed: settings.py's defaults, "
        "one user per client thread",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=120,
        help="seconds to wait after the window for the baseline backlog to drain",
    )
    parser.add_argument("--keep-db", action="store_true", help="do not drop the database")
    parser.add_argument(
        "--strict", action="store_true", help="any answer but 201 fails the run (not only 5xx)"
    )
    return parser


def main() -> int:
    return run(build_parser().parse_args())


if __name__ == "__main__":
    sys.exit(main())
