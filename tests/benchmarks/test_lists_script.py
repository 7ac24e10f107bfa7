"""benchmarks/lists.py at its real scale but one request each, end to end: it stores
its documents, serves them with gunicorn and times the list pages and the export. It
broke once without anyone seeing (a helper it calls gained an argument)."""

from __future__ import annotations

import re
import subprocess
import sys
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

pytestmark = pytest.mark.slow


def test_the_list_benchmark_times_both_pages_and_the_export():
    s = connection.settings_dict
    password = f":{quote(s['PASSWORD'], safe='')}" if s["PASSWORD"] else ""
    host = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}"
    script = subprocess.Popen(
        [sys.executable, "benchmarks/lists.py", "--repeat", "1",
         "--db-name", f"{s['NAME']}_lists_script",
         "--admin-url", f"postgres://{s['USER']}{password}@{host}/postgres"],
        cwd=settings.BASE_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stdout, stderr = script.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        # SIGTERM: the script stops its gunicorn and drops its database on the way out
        script.terminate()
        stdout, stderr = script.communicate(timeout=60)
        pytest.fail(f"benchmarks/lists.py took more than 300 s:\n{stdout}\n{stderr[-3000:]}")
    done = subprocess.CompletedProcess(script.args, script.returncode, stdout, stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    timed = re.findall(r"^(.+?) +median +\d+ ms, worst +\d+ ms \((.+?),", done.stdout, re.M)
    assert timed == [
        ("first page (100 rows)", "100 rows"),
        ("page of 1,000 rows", "1000 rows"),
        ("whole CSV export", "30040 rows"),
    ], done.stdout
