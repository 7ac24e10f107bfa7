"""What visitors of comparisons wait for while moderators approve results.

``benchmarks/compare.py`` times one comparison at a time, twice: every
request computing (as the first after a change does) and every request
served kept. Visitors meet a mix of the two, and which one depends on how
often the data changes, how quickly the worker computes the changed answers
again, and how many comparisons are asked for the first time. This runs
that mix, on the whole stack as docker-compose.yml runs it:

1. copies the 1 M database of compare.py (``--template``, filled by it) into
   a scratch database, sets ``--pending`` approved submissions back to
   pending, and migrates it, which starts the kept answers in its Redis
   database afresh (before anything is timed);
2. starts gunicorn (gunicorn.conf.py) and one Celery worker on its own Redis
   database (``--redis-url``);
3. for ``--duration`` seconds, ``--visitors`` threads each ask for a
   comparison (chosen by a Zipf law over ``COMPARISONS`` in a shuffled
   order; the API or the page, one half each) and wait an exponential think
   time of mean ``--think`` seconds; meanwhile a moderator approves one of
   the pending submissions every ``--approve-every`` seconds through the
   moderation service, as the queue's button does (each approval queues the
   worker's refresh of the kept answers);
4. prints p50/p95/p99 of every request, and of the requests that were the
   first for their comparison (nobody had asked for it: computed, whatever
   the worker does) and of the others, with the load average. With
   ``--warm``, every comparison is asked for once before the window: the
   figures are then those of a site whose visitors' comparisons are known,
   under the approvals.

    .venv/bin/python benchmarks/compare.py --requests 0        # fills bh_stats_bench once
    /work/wt/busy .venv/bin/python benchmarks/compare_mix.py --approve-every 30

Issue 10's target is p95 < 150 ms at 1 M measurements; compare.py gives
the two extremes, this the figure visitors get under the stated traffic.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import random
import statistics
import sys
import threading
import time
import urllib.parse
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from compare import admin_url, percentile  # noqa: E402 -- the benchmarks' own helpers
from ingest import (  # noqa: E402
    children_of,
    database_url,
    drop_database,
    drop_queue,
    free_port,
    gunicorn_settings,
    manage,
    start_celery,
    start_gunicorn,
    stop_process,
    wait_ready,
)

# What visitors ask for: compare.py's three cases first, then the questions
# a reader of the seed articles asks next (another metric, another series,
# one engine or profile fixed). Each is a query string of /compare/ and of
# /api/v1/comparisons/.
_SU = {"benchmark": "select-update", "x": "param.clients"}
_SQL = {"benchmark": "sql-bench", "metric": "seconds", "x": "param.operation"}
COMPARISONS: list[dict[str, str]] = [
    {**_SU, "metric": "throughput", "series": "engine"},
    {**_SU, "metric": "throughput", "series": "filesystem", "engine": "postgresql"},
    {**_SQL, "series": "filesystem", "config_profile": "my-huge.cnf"},
    *(
        {**_SU, "metric": metric, "series": series, **fixed}
        for metric in ("throughput", "latency_p95", "latency_mean")
        for series, fixed in (
            ("engine", {}),
            ("version", {"engine": "postgresql"}),
            ("version", {"engine": "mariadb"}),
            ("filesystem", {"engine": "mariadb"}),
            ("cpu_model", {"engine": "postgresql"}),
            ("load_engine", {"engine": "postgresql"}),
        )
        if not (metric == "throughput" and series == "engine")
    ),
    {**_SU, "metric": "latency_p95", "series": "filesystem", "engine": "postgresql"},
    {**_SQL, "series": "filesystem", "config_profile": "default"},
    {**_SQL, "series": "engine"},
    {**_SQL, "series": "version", "engine": "mariadb"},
]
PATHS = ("/api/v1/comparisons/", "/compare/")
# The page's canonical order (others are redirected to it): the comparison's
# own parameters first, then the filters.
_ORDER = ("benchmark", "metric", "x", "series")


def query_string(comparison: dict[str, str]) -> str:
    first = [(key, comparison[key]) for key in _ORDER if key in comparison]
    rest = [(key, value) for key, value in comparison.items() if key not in _ORDER]
    return urllib.parse.urlencode(first + rest)


def copy_database(template: str, name: str) -> None:
    drop_database(admin_url(template), name)
    with psycopg.connect(admin_url(template), autocommit=True) as connection:
        source = template.rsplit("/", 1)[1]
        connection.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')


def prepare(url: str, pending: int, seed: int) -> list[int]:
    """``pending`` approved submissions (of both benchmarks, chosen at
    random) set back to pending; their ids."""
    with psycopg.connect(url, autocommit=True) as connection:
        ids = [
            row[0]
            for row in connection.execute(
                "SELECT id FROM results_submission WHERE status = 'approved' ORDER BY id"
            )
        ]
        chosen = random.Random(seed).sample(ids, pending)
        connection.execute(
            "UPDATE results_submission SET status = 'pending' WHERE id = ANY(%s)", [chosen]
        )
        connection.execute("ANALYZE")
    return chosen


class Timings:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first: list[float] = []
        self.again: list[float] = []
        self.asked: set[int] = set()
        self.errors: list[str] = []

    def add(self, comparison: int, milliseconds: float) -> None:
        with self.lock:
            (self.again if comparison in self.asked else self.first).append(milliseconds)
            self.asked.add(comparison)


def visitor(
    port: int, until: float, think: float, timings: Timings, seed: int, weights: list[float]
) -> None:
    rng = random.Random(seed)

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def get(connection: http.client.HTTPConnection, url: str) -> http.client.HTTPResponse:
        connection.request("GET", url)
        response = connection.getresponse()
        response.read()
        return response

    connection = connect()
    while time.monotonic() < until:
        index = rng.choices(range(len(COMPARISONS)), weights)[0]
        path = rng.choice(PATHS)
        url = path + "?" + query_string(COMPARISONS[index])
        started = time.perf_counter()
        try:
            try:
                response = get(connection, url)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closed the kept-alive connection while this
                # visitor thought (gunicorn's keepalive is 2 s): as a browser
                # does, ask again on a new one, timed from there.
                connection.close()
                connection = connect()
                started = time.perf_counter()
                response = get(connection, url)
        except (OSError, http.client.HTTPException) as error:
            timings.errors.append(f"{url}: {error}")
            connection.close()
            connection = connect()
            continue
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            timings.errors.append(f"{url}: {response.status}")
        else:
            timings.add(index, elapsed)
        time.sleep(rng.expovariate(1 / think))


def moderator(url: str, redis_url: str, pending: list[int], every: float, until: float) -> int:
    """Approves one pending submission every ``every`` seconds through the
    moderation service, in this process; how many."""
    os.environ.update(
        DATABASE_URL=url,
        REDIS_URL=redis_url,
        DJANGO_SETTINGS_MODULE="benchhub.settings",
        SECRET_KEY="compare-mix-" + uuid.uuid4().hex,
    )
    import django

    django.setup()
    from benchhub.moderation.services import submission_moderate
    from benchhub.results.models import Submission

    approved = 0
    next_at = time.monotonic() + every
    for submission_id in pending:
        time.sleep(max(0.0, next_at - time.monotonic()))
        if time.monotonic() >= until:
            break
        submission = Submission.objects.get(pk=submission_id)
        submission_moderate(submission=submission, actor=None, action="approve")
        approved += 1
        next_at += every
    return approved


def line(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:32} none"
    ordered = sorted(values)
    return (
        f"{name:32} {len(ordered):5d} requests  p50 {statistics.median(ordered):6.0f} ms  "
        f"p95 {percentile(ordered, 0.95):6.0f} ms  p99 {percentile(ordered, 0.99):6.0f} ms  "
        f"max {ordered[-1]:6.0f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--template", default="postgres://postgres@127.0.0.1:5432/bh_stats_bench")
    parser.add_argument("--db-name", default="bh_compare_mix")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/7")
    parser.add_argument("--duration", type=float, default=120)
    parser.add_argument("--visitors", type=int, default=4)
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds between requests")
    parser.add_argument(
        "--approve-every", type=float, default=30, help="seconds between approvals; 0: none"
    )
    parser.add_argument("--pending", type=int, default=200)
    parser.add_argument(
        "--warm", action="store_true", help="ask every comparison once before the window"
    )
    parser.add_argument("--seed", type=int, default=1)
    # gunicorn_settings reads these (None: gunicorn.conf.py's).
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--worker-class", default=None)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    url = database_url(args.template, args.db_name)
    copy_database(args.template, args.db_name)
    pending = prepare(url, args.pending, args.seed)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": args.redis_url,
        "DEBUG": "false",
        "SECRET_KEY": "compare-mix-" + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "benchhub.settings",
        "PYTHONWARNINGS": "ignore:No directory at",
    }
    # The template may be of an older release; its post_migrate also bumps
    # every kept answer's version (pending set by hand above, unsignalled).
    manage(env, "migrate", "--noinput")
    drop_queue(args.redis_url)
    order = list(range(len(COMPARISONS)))
    random.Random(args.seed).shuffle(order)
    # Zipf, s = 1: the comparison at rank r is asked 1/r as often as the first.
    weights = [0.0] * len(COMPARISONS)
    for rank, index in enumerate(order, start=1):
        weights[index] = 1 / rank
    server = celery = None
    try:
        port = free_port()
        celery = start_celery(env)
        settings = gunicorn_settings(args)
        server = start_gunicorn(args, env, port, settings)
        wait_ready(server, port, int(settings["workers"]))
        print(
            f"{len(COMPARISONS)} comparisons (Zipf), {args.visitors} visitors, think "
            f"{args.think:g} s, approval every {args.approve_every:g} s, {args.duration:g} s; "
            f"gunicorn {settings['workers']} {settings['worker_class']} workers "
            f"(pids {', '.join(map(str, children_of(server.pid)))}), one Celery worker; "
            f"load average before {os.getloadavg()[0]:.2f}"
        )
        timings = Timings()
        if args.warm:
            # Every comparison asked once before the window, both ways: the
            # window then measures the steady state under the approvals.
            warm = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for index, comparison in enumerate(COMPARISONS):
                for path in PATHS:
                    warm.request("GET", path + "?" + query_string(comparison))
                    warm.getresponse().read()
                timings.asked.add(index)
        until = time.monotonic() + args.duration
        threads = [
            threading.Thread(
                target=visitor,
                args=(port, until, args.think, timings, args.seed * 1000 + n, weights),
                daemon=True,
            )
            for n in range(args.visitors)
        ]
        for thread in threads:
            thread.start()
        approved = 0
        if args.approve_every > 0:
            approved = moderator(url, args.redis_url, pending, args.approve_every, until)
        for thread in threads:
            thread.join()
        print(f"approved {approved} submissions; load average after {os.getloadavg()[0]:.2f}")
        print(line("every request", timings.first + timings.again))
        print(line("first for its comparison", timings.first))
        print(line("asked before", timings.again))
        for error in timings.errors[:10]:
            print("error:", error)
        return 1 if timings.errors else 0
    finally:
        for process in (server, celery):
            if process is not None:
                stop_process(process)
        drop_queue(args.redis_url)
        with contextlib.suppress(psycopg.Error):
            drop_database(admin_url(args.template), args.db_name)


if __name__ == "__main__":
    sys.exit(main())
