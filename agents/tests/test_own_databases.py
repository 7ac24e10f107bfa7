"""A run of these tests drops the databases and Firebird files it made when it ends,
even when a test failed, and leaves those of another run going on beside it."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import _databases as dbs
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _firebird
from benchhub_agent.benchmarks.base import Target

HERE = Path(__file__).resolve().parent

# A run of its own (this directory's conftest.py as its plugin) whose one test makes a
# database on each engine, says so, and fails.
FAILING_RUN = """
import _databases as dbs
from benchhub_agent.benchmarks import _firebird


def test_that_makes_one_of_each_and_fails():
    dbs.postgresql("made_by_a_run")
    dbs.mariadb("made_by_a_run")
    made = _firebird.FirebirdDatabase.from_target(dbs.firebird("made_by_a_run"))
    _firebird.recreate(made, "test")
    print("made all three")
    assert False
"""


def existing() -> dict[str, set[str]]:
    """The names of the databases on PostgreSQL and MariaDB, and of the Firebird files."""
    names = {"firebird": {path.stem for path in Path(dbs.FIREBIRD_DIR).glob("*.fdb")}}
    for engine, server, query in (
        ("postgresql", f"{dbs.PG_SERVER}/postgres", "SELECT datname FROM pg_database"),
        ("mariadb", f"{dbs.MYSQL_SERVER}/mysql", "SHOW DATABASES"),
    ):
        conn = dbc.connect(Target.parse(server))
        try:
            with conn.cursor() as cur:
                cur.execute(query)
                names[engine] = {name for (name,) in cur.fetchall()}
        finally:
            conn.close()
    return names


def made_by(monkeypatch, run: str, label: str) -> str:
    """The name run ``run`` gives ``label``'s databases (each engine's the same)."""
    with monkeypatch.context() as m:
        m.setattr(dbs, "RUN", run)
        return dbs.database_name(f"bench_{label}")


def test_a_failed_run_drops_what_it_made_and_not_another_runs(tmp_path, monkeypatch):
    another_run, this_run = secrets.token_hex(3), secrets.token_hex(3)
    with monkeypatch.context() as m:  # another run, going on beside: one of each
        m.setattr(dbs, "RUN", another_run)
        dbs.postgresql("made_by_a_run")
        dbs.mariadb("made_by_a_run")
        _firebird.recreate(
            _firebird.FirebirdDatabase.from_target(dbs.firebird("made_by_a_run")), "test"
        )
    try:
        (tmp_path / "test_failing.py").write_text(textwrap.dedent(FAILING_RUN))
        failed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django",
             "-p", "conftest", "test_failing.py"],
            env={**os.environ, "BENCHHUB_TEST_RUN": this_run, "PYTHONPATH": str(HERE)},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
        left = existing()
    finally:
        with monkeypatch.context() as m:
            m.setattr(dbs, "RUN", another_run)
            another_runs = dbs.drop_own_databases()

    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "made all three" in failed.stdout  # the test had made them, then failed
    mine = made_by(monkeypatch, this_run, "made_by_a_run")
    theirs = made_by(monkeypatch, another_run, "made_by_a_run")
    assert {engine: mine in names for engine, names in left.items()} == {
        "postgresql": False,
        "mariadb": False,
        "firebird": False,
    }
    assert {engine: theirs in names for engine, names in left.items()} == {
        "postgresql": True,
        "mariadb": True,
        "firebird": True,
    }
    assert sorted(another_runs) == sorted([theirs, theirs, f"{theirs}.fdb"])
