"""Do lists stay fast next to one huge upload? Anonymous reads of the
measurement list and the CSV export under gunicorn on PostgreSQL.

Issue 11 measured, after one approved 1.8 MB upload of 30,000 measurements:
`GET /api/v1/measurements/` 11 s, `page_size=1000` and `export.csv` killed
by gunicorn's 30 s timeout (each row loaded its submission's document). One
run of this script:

1. drops and creates a scratch database, migrates it, and stores through
   the upload service one approved document of 30,000 measurements (6 runs
   of 5,000; its JSON is printed with its size) and 20 small ones;
2. serves BenchHub with gunicorn (1 process, 4 threads) on a free loopback port;
3. times, anonymously: the first page (100 rows), a page of 1,000, and the
   whole CSV export (rows and bytes counted, the last line checked for an
   #error marker), each several times, and prints the median and the worst,
   with the load average (the machine is shared: read the figures with it);
4. stops gunicorn and drops the database.

    .venv/bin/python benchmarks/lists.py [--repeat 5] [--keep-db]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import ingest  # noqa: E402


def big_document() -> dict:
    from tests.factories import example_document

    document = example_document()
    run = document["runs"][0]
    document["runs"] = [
        {
            **run,
            "parameters": {**run["parameters"], "rows": 100 * (r + 1)},
            "measurements": [
                {
                    "metric": "throughput",
                    "parameters": {"clients": c},
                    "value": 100.0 + c % 97,
                    "samples": [99.5, 100.5],
                }
                for c in range(5000)
            ],
        }
        for r in range(6)
    ]
    return document


def fill(url: str) -> int:
    """Stores the documents in-process; returns the big document's size."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchhub.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User

    from benchhub.results.models import Submission
    from benchhub.results.services import submission_create
    from tests.factories import small_document

    user = User.objects.create_user(username="bench")
    document = big_document()
    size = len(json.dumps(document).encode())
    approved = Submission.Status.APPROVED
    submission_create(submitter=user, document=document, status=approved)
    for _ in range(20):
        submission_create(submitter=user, document=small_document(), status=approved)
    # What autovacuum would have done by the time anyone reads: without the
    # tables' statistics the first page of 100 rows took 127 ms (a sort of
    # every row), with them 35.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return size


def timed_get(port: int, path: str) -> tuple[float, int, bytes]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    return time.perf_counter() - started, response.status, body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db-name", default="benchhub_lists_bench")
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()
    # A SIGTERM (a test's timeout, a kill) leaves through the finally below:
    # gunicorn stopped, the database dropped unless kept.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"{sys.argv[0]}: terminated"))

    url = ingest.database_url(args.admin_url, args.db_name)
    ingest.recreate_database(args.admin_url, args.db_name)
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "false", "LOG_LEVEL": "ERROR"}
    env.pop("REDIS_URL", None)  # tasks in-process: nothing queued, nothing to consume
    ingest.manage(env, "migrate", "--noinput")
    started = time.perf_counter()
    size = fill(url)
    print(f"stored 30,000 + 20 x 2 measurements in {time.perf_counter() - started:.1f} s; "
          f"the big document is {size / 1e6:.2f} MB of JSON")  # fmt: skip

    port = ingest.free_port()
    gunicorn_args = argparse.Namespace(workers=1, worker_class="gthread", threads=4)
    server = ingest.start_gunicorn(gunicorn_args, env, port, vars(gunicorn_args))
    failures = 0
    try:
        ingest.wait_ready(server, port, 1)
        for label, path in [
            ("first page (100 rows)", "/api/v1/measurements/"),
            ("page of 1,000 rows", "/api/v1/measurements/?page_size=1000"),
            ("whole CSV export", "/api/v1/measurements/export.csv"),
        ]:
            times = []
            for _ in range(args.repeat):
                seconds, status, body = timed_get(port, path)
                times.append(seconds)
                if status != 200:
                    failures += 1
                if path.endswith(".csv"):
                    lines = body.decode().splitlines()
                    if lines[-1].startswith("#error"):
                        failures += 1
                    rows = f"{len(lines) - 1} rows, {len(body) / 1e6:.1f} MB"
                else:
                    rows = f"{len(json.loads(body)['results'])} rows"
            print(
                f"{label:24} median {statistics.median(times) * 1000:8.0f} ms, "
                f"worst {max(times) * 1000:8.0f} ms ({rows}, {args.repeat} requests)"
            )
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        ingest.stop_process(server)
        if not args.keep_db:
            ingest.drop_database(args.admin_url, args.db_name)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
