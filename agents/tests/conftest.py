"""Shared fixtures for the agent's tests: the real PostgreSQL and MariaDB of the machine.

The databases are expected (CI starts them); a test that cannot reach one
fails rather than skips, so a green run means the engines were really driven.
"""

from __future__ import annotations

import os

import pytest

PG_ADMIN_DSN = os.environ.get("BENCHHUB_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
PG_DATABASE = "benchhub_agent_test"
MYSQL_DSN = os.environ.get("BENCHHUB_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """A database of our own on the real PostgreSQL, created when missing."""
    import psycopg

    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DATABASE,))
        if exists.fetchone() is None:
            conn.execute(f'CREATE DATABASE "{PG_DATABASE}"')
    return PG_ADMIN_DSN.rsplit("/", 1)[0] + "/" + PG_DATABASE


@pytest.fixture(scope="session")
def mysql_dsn() -> str:
    return MYSQL_DSN


@pytest.fixture
def outbox_dir(tmp_path, monkeypatch):
    """Each test its own outbox and no user config file."""
    path = tmp_path / "outbox"
    monkeypatch.setenv("BENCHHUB_OUTBOX", str(path))
    monkeypatch.setenv("BENCHHUB_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.delenv("BENCHHUB_SERVER", raising=False)
    monkeypatch.delenv("BENCHHUB_TOKEN", raising=False)
    return path
