"""benchmarks/compare.py at a small scale, end to end: it fills a database of its own
with COPY, as the schema stands, and times every case computed and kept. A column the
models add without a database default breaks its COPY; this says so before a long run."""

from __future__ import annotations

import re
import subprocess
import sys

import psycopg
import pytest
from django.conf import settings
from django.db import connection

pytestmark = pytest.mark.slow


def test_the_comparison_benchmark_fills_and_times_every_case(tmp_path):
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s["PASSWORD"] else ""
    host = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}"
    name = f"{s['NAME']}_compare_script"
    server = f"postgres://{s['USER']}{password}@{host}"
    try:
        done = subprocess.run(
            [sys.executable, "benchmarks/compare.py", "--database", f"{server}/{name}",
             "--measurements", "3000", "--refill", "--requests", "2", "--redis-url", ""],
            cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin_connection:
            admin_connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert done.returncode == 0, done.stderr[-3000:]
    timed = [line for line in done.stdout.splitlines() if " p95 " in line]
    assert len(timed) == 12, done.stdout  # 3 cases x 2 endpoints x computed and kept
    assert sum(" computed " in line for line in timed) == 6
    # computed from the packs, built before the timing (packs.py)
    assert sum(" computed packs " in line for line in timed) == 6, timed
    # two metrics: select-update throughput (cases 1 and 2), sql-bench seconds
    assert len(re.findall(r"packs of .* built: [\d,]+ packs", done.stdout)) == 2, done.stdout
    # where each case's time went: the database's wait and Python's CPU, each a number
    assert all(re.search(r"database \d+ ms, Python CPU \d+ ms", line) for line in timed), timed
