"""The real databases the tpcb, sql-bench, backup and external-sort tests drive.

Each test gets a database (or Firebird file) of its own, named after the test, the
pytest-xdist worker and ``$BENCHHUB_TEST_DB_PREFIX`` (for two runs of the suite at once
on the same servers), so that neither workers nor runs share tables or per-database
statistics. Nothing here skips: an engine that does
not answer fails the test, so a green run means the engine was really driven.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import socket
from typing import Any

from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks.base import BenchmarkResult, Target
from benchhub_agent.document import agent_document
from benchhub_agent.schema import catalog_errors, metric_catalog, validation_errors

PG_SERVER = os.environ.get("BENCHHUB_TEST_PG_SERVER", "postgresql://postgres@127.0.0.1:5432")
MYSQL_SERVER = os.environ.get("BENCHHUB_TEST_MYSQL_SERVER", "mysql://root@127.0.0.1:3306")
FIREBIRD_DIR = "/var/lib/firebird/3.0/data"
FIREBIRD_PORT = 3050


MAX_NAME = 60  # PostgreSQL cuts identifiers at 63 bytes, MariaDB at 64


def database_name(label: str) -> str:
    """``label``'s database for this run of the suite and this xdist worker.

    Too long a name keeps its start and gains a digest of the whole, so that two
    labels cut at the same place still name two databases.
    """
    prefix = os.environ.get("BENCHHUB_TEST_DB_PREFIX", "")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = re.sub(r"[^a-z0-9_]", "_", f"{prefix}bh_{worker}_{label}".lower())
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME - 9]}_{digest}"
    return name


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
    return Target.parse(
        f"firebird://SYSDBA@localhost/{FIREBIRD_DIR}/{_database_name(test_name)}.fdb"
    )


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
