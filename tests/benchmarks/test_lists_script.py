"""benchmarks/lists.py at its real scale but one request each, end to end: it stores
its documents, serves them with gunicorn and times the list pages and the export. It
broke once without anyone seeing (a helper it calls gained an argument)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

pytestmark = pytest.mark.slow


def test_the_list_benchmark_times_both_pages_and_the_export():
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s["PASSWORD"] else ""
    host = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}"
    done = subprocess.run(
        [sys.executable, "benchmarks/lists.py", "--repeat", "1",
         "--db-name", f"{s['NAME']}_lists_script",
         "--admin-url", f"postgres://{s['USER']}{password}@{host}/postgres"],
        cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    timed = re.findall(r"^(.+?) +median +\d+ ms, worst +\d+ ms \((.+?),", done.stdout, re.M)
    assert timed == [
        ("first page (100 rows)", "100 rows"),
        ("page of 1,000 rows", "1000 rows"),
        ("whole CSV export", "30040 rows"),
    ], done.stdout
