"""The database the agent measures in during the server's end-to-end tests: on the
test database's server, named after the test database (so after this run and its
xdist worker) and dropped when the test is done, whether it passed or not."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg
from django.db import connection

from tests.live import live_database_url


@contextlib.contextmanager
def measured_database(label: str) -> Iterator[str]:
    """A new, empty database ``<test database>_<label>``; its DSN for the agent."""
    test_database = connection.settings_dict["NAME"]
    name = f"{test_database}_{label}"
    server = live_database_url().removesuffix(f"/{test_database}")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        # One a run that was killed left under this name is not this run's to measure in.
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}".replace("postgres://", "postgresql://", 1)
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
