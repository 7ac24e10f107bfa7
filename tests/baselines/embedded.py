"""The embedded default (SQLite, no broker) in a process of its own, since the
suite runs on PostgreSQL: a script run by a Django on an SQLite file in the
test's folder, without Redis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_embedded(
    tmp_path: Path, script: str, *args: str, **environ: str
) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DATABASE_URL", "BENCHHUB_VAR_DIR")
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        DJANGO_SETTINGS_MODULE="benchhub.settings",
        PYTHONPATH=str(ROOT),
        **environ,
    )
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
