"""The real databases the tpcb, sql-bench, backup and external-sort tests drive.

Each test gets a database (or Firebird file) of its own, so that pytest-xdist workers
never share tables or per-database statistics. Nothing here skips: an engine that does
not answer fails the test, so a green run means the engine was really driven.
"""

from __future__ import annotations

import argparse
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


def _database_name(test_name: str) -> str:
    return "benchhub_bench_" + re.sub(r"[^a-z0-9_]", "_", test_name.lower())[:40]


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
