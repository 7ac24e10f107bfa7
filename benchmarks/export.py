"""Measurement export speed at a million measurements: export.csv and export.jsonl.

One run:

1. fills a PostgreSQL database of its own (``--database``, default bh_export_bench)
   with ``--measurements`` measurements by benchmarks/compare.py's filler (kept
   between runs with ``--keep``; dropped at the end otherwise);
2. downloads each whole export ``--requests`` times through Django's test client (the
   whole request: URL, filters, the COPY, the streaming response), reading every
   chunk as a client does, and prints rows/s, MB/s, the largest chunk and the
   process's peak memory; then the same for the Python path (the csv module, as
   the embedded default's SQLite writes it) over ``--python-rows`` rows, for scale;
3. prints the load average (other work on the machine shares its cores).

    .venv/bin/python benchmarks/export.py --measurements 1000000

Target (issue 34): >= 200,000 rows/s end to end at 1 M, memory flat.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import compare  # noqa: E402 -- its filler, beside this file


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user and system) of this process, or of process ``pid``."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def download(client, path: str) -> tuple[int, int, int, float]:
    """Rows (lines but a CSV's header), bytes, the largest chunk, seconds."""
    started = time.perf_counter()
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    lines = size = largest = 0
    for chunk in response.streaming_content:
        lines += chunk.count(b"\n")
        size += len(chunk)
        largest = max(largest, len(chunk))
    header = 1 if path.endswith(".csv") else 0
    return lines - header, size, largest, time.perf_counter() - started


def python_path(rows: int) -> tuple[int, float]:
    from django.contrib.auth.models import AnonymousUser

    from benchhub.results import exports, selectors

    queryset = selectors.measurement_list(user=AnonymousUser())[:rows]
    started = time.perf_counter()
    written = sum(part.count("\n") for part in exports.measurement_rows(queryset)) - 1
    return written, time.perf_counter() - started


def drop(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(compare.admin_url(url), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/bh_export_bench")
    parser.add_argument("--measurements", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=3)
    parser.add_argument("--python-rows", type=int, default=100_000)
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the database")
    args = parser.parse_args()

    if not (args.keep and compare.exists(args.database)):
        compare.recreate(args.database)
        compare.setup_django(args.database)
        started = time.perf_counter()
        compare.fill(args.database, args.measurements, seed=34)
        print(f"filled in {time.perf_counter() - started:.0f} s")
    else:
        compare.setup_django(args.database)
    from django.db import connection
    from django.test import Client

    from benchhub.results.models import Measurement

    total = Measurement.objects.count()
    print(f"{total:,} measurements; load average {os.getloadavg()[0]:.2f} (2 cores, shared)")
    client = Client()
    with connection.cursor() as cursor:  # the export runs on this connection (same thread)
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    for path in ("/api/v1/measurements/export.csv", "/api/v1/measurements/export.jsonl"):
        for _ in range(args.requests):
            python, database = cpu_seconds(), cpu_seconds(backend)
            rows, size, largest, seconds = download(client, path)
            python, database = cpu_seconds() - python, cpu_seconds(backend) - database
            print(
                f"{path.rsplit('/', 1)[1]}: {rows:,} rows, {size / 1e6:.0f} MB in "
                f"{seconds:.2f} s = {rows / seconds:,.0f} rows/s; largest chunk "
                f"{largest / 1024:.0f} kB; peak memory {peak_mb():.0f} MB; CPU: PostgreSQL "
                f"{database:.1f} s, Python {python:.1f} s (on two idle cores the larger "
                f"bounds it: {rows / max(database, python):,.0f} rows/s)"
            )
    rows, seconds = python_path(args.python_rows)
    print(
        f"the Python path (csv module), for scale: {rows:,} rows in {seconds:.2f} s = "
        f"{rows / seconds:,.0f} rows/s"
    )
    print(f"load average {os.getloadavg()[0]:.2f} after")
    connection.close()
    if not args.keep:
        drop(args.database)
        print(f"dropped {args.database.rsplit('/', 1)[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
