"""Shared fixtures for the agent's tests: the real PostgreSQL and MariaDB of the machine.

The databases are expected (CI starts them); a test that cannot reach one
fails rather than skips, so a green run means the engines were really driven.
Every pytest-xdist worker of every run works in databases of its own (see
``_databases.database_name``) and drops them when its session ends, failed or not.
Also each test's outbox, and the scripted HTTP server of the upload tests
(``_upload_servers``).
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import pytest
from _databases import MYSQL_SERVER, PG_SERVER, database_name, drop_own_databases
from _upload_servers import Scripted


def pytest_sessionfinish(session) -> None:
    """Runs after the last test whatever its outcome (and after an interrupt): the
    databases and Firebird files this worker made go, another run's stay."""
    drop_own_databases()


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """A database of this worker's own on the real PostgreSQL, created when missing."""
    return _ensure(f"{PG_SERVER}/{database_name('agent_test')}")


@pytest.fixture(scope="session")
def mysql_dsn() -> str:
    """A database of this worker's own on the real MariaDB, created when missing."""
    return _ensure(f"{MYSQL_SERVER}/{database_name('agent_test')}")


def _ensure(dsn: str) -> str:
    from benchhub_agent.benchmarks import _connections
    from benchhub_agent.benchmarks.base import Target

    _connections.ensure_database(Target.parse(dsn))
    return dsn


@pytest.fixture
def outbox_dir(tmp_path, monkeypatch):
    """Each test its own outbox and no user config file."""
    path = tmp_path / "outbox"
    monkeypatch.setenv("BENCHHUB_OUTBOX", str(path))
    monkeypatch.setenv("BENCHHUB_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.delenv("BENCHHUB_SERVER", raising=False)
    monkeypatch.delenv("BENCHHUB_TOKEN", raising=False)
    return path


@pytest.fixture
def scripted():
    """A started Scripted server: (its base URL, the answers to give)."""
    Scripted.answers.clear()
    Scripted.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Scripted.answers
    server.shutdown()
    server.server_close()
