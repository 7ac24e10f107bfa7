"""The real databases the tpcb, sql-bench, backup and external-sort tests drive.

Each test gets a database (or Firebird file) of its own, named after the test, the
pytest-xdist worker and the run (a token of its own, and ``$BENCHHUB_TEST_DB_PREFIX``),
so that neither workers nor runs share tables or per-database statistics, and so that
each worker drops what it made when its session ends (``drop_own_databases``, called by
conftest.py) without touching another run's going on beside it. Nothing here skips: an
engine that does not answer fails the test, so a green run means the engine was really
driven.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import secrets
import socket
from pathlib import Path
from typing import Any

from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _firebird
from benchhub_agent.benchmarks.base import BenchmarkResult, Target
from benchhub_agent.document import agent_document
from benchhub_contract.schema import catalog_errors, metric_catalog, validation_errors

PG_SERVER = os.environ.get("BENCHHUB_TEST_PG_SERVER", "postgresql://postgres@127.0.0.1:5432")
MYSQL_SERVER = os.environ.get("BENCHHUB_TEST_MYSQL_SERVER", "mysql://root@127.0.0.1:3306")
FIREBIRD_DIR = "/var/lib/firebird/3.0/data"
FIREBIRD_PORT = 3050


MAX_NAME = 60  # PostgreSQL cuts identifiers at 63 bytes, MariaDB at 64

# This run's token: set once by the first process of the run that imports this module
# and inherited through the environment by its xdist workers and the agents it starts.
RUN = os.environ.setdefault("BENCHHUB_TEST_RUN", secrets.token_hex(3))


def _own_stem() -> str:
    """How every name of this run and this xdist worker begins."""
    prefix = os.environ.get("BENCHHUB_TEST_DB_PREFIX", "")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return re.sub(r"[^a-z0-9_]", "_", f"{prefix}bh_{worker}_{RUN}_".lower())


def database_name(label: str) -> str:
    """``label``'s database for this run of the suite and this xdist worker.

    Too long a name keeps its start and gains a digest of the whole, so that two
    labels cut at the same place still name two databases.
    """
    name = _own_stem() + re.sub(r"[^a-z0-9_]", "_", label.lower())
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


def drop_own_databases() -> list[str]:
    """Drop every PostgreSQL and MariaDB database and every Firebird file whose name
    begins as this run's and this worker's do; the names dropped. An engine that does
    not answer had nothing made on it by this run."""
    import psycopg
    import pymysql

    stem = _own_stem()
    like = stem.replace("_", r"\_") + "%"
    dropped = []
    servers = [
        (
            f"{PG_SERVER}/postgres",
            psycopg.OperationalError,
            "SELECT datname FROM pg_database WHERE datname LIKE %s",
            # FORCE: a client that a failed test left connected does not keep it.
            'DROP DATABASE IF EXISTS "{}" WITH (FORCE)',
        ),
        (
            f"{MYSQL_SERVER}/mysql",
            pymysql.OperationalError,
            "SHOW DATABASES LIKE %s",
            "DROP DATABASE IF EXISTS `{}`",
        ),
    ]
    for server, unreachable, own, drop in servers:
        try:
            conn = dbc.connect(Target.parse(server))
        except unreachable:
            continue
        try:
            with conn.cursor() as cur:
                cur.execute(own, (like,))
                for (name,) in cur.fetchall():
                    cur.execute(drop.format(name))
                    dropped.append(name)
        finally:
            conn.close()
    for path in sorted(Path(FIREBIRD_DIR).glob(f"{stem}*.fdb")):
        _firebird.isql(
            _firebird.FirebirdDatabase.from_target(_firebird_target(path.stem)), "DROP DATABASE;\n"
        )
        dropped.append(path.name)
    return dropped


def _database_name(test_name: str) -> str:
    return database_name("bench_" + test_name)


def postgresql(test_name: str) -> Target:
    target = Target.parse(f"{PG_SERVER}/{_database_name(test_name)}")
    dbc.ensure_database(target)
    return target


def mariadb(test_name: str) -> Target:
    target = Target.parse(f"{MYSQL_SERVER}/{_database_name(test_name)}")
    dbc.ensure_database(target)
    return target


def firebird(test_name: str) -> Target:
    """A Firebird database file of this test's own; the server must answer on 3050
    (``.ci/ensure-firebird.sh`` installs and starts it)."""
    with socket.create_connection(("127.0.0.1", FIREBIRD_PORT), timeout=5):
        pass
    return _firebird_target(_database_name(test_name))


def _firebird_target(name: str) -> Target:
    return Target.parse(f"firebird://SYSDBA@localhost/{FIREBIRD_DIR}/{name}.fdb")


def options(**values: Any) -> argparse.Namespace:
    """What the CLI would pass: the common options at their defaults, plus ``values``."""
    common = {
        "clients": None,
        "transactions": None,
        "duration": None,
        "warmup": None,
        "repeat": 3,
        "pin": None,
    }
    return argparse.Namespace(**{**common, **values})


def document_errors(result: BenchmarkResult) -> list[str]:
    """Schema and catalog problems of the document the CLI would build from ``result``."""
    document = agent_document(
        document_uuid="6f1c1d7e-2b7a-4c55-9a43-1d2e3f405060",
        result=result,
        command="benchhub-agent run (test)",
        machine={},
    )
    errors = validation_errors(document) or catalog_errors(document)
    return [f"{e.path}: {e.message}" for e in errors]


def by_point(result: BenchmarkResult) -> dict[tuple, dict[str, Any]]:
    """measurements as {(metric, sorted parameters): measurement}."""
    return {(m.metric, tuple(sorted(m.parameters.items()))): m for m in result.measurements}


def catalog_units(benchmark: str) -> dict[str, str]:
    return {name: metric["unit"] for name, metric in metric_catalog()[benchmark].items()}
