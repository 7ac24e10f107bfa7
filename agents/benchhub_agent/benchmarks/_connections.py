"""What the tpcb, sql-bench, backup and external-sort modules share on top of ``db``.

Connections and the server's self-description come from :mod:`benchhub_agent.db`, so
every benchmark records version, settings, protocol and driver the same way; this module
adds the per-benchmark settings, the median, and a database the tests can create.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from .. import db
from .base import Target

MYSQL_FAMILY = frozenset({"mysql", "mariadb"})


def connect(target: Target, *, autocommit: bool = True, database: str | None = None) -> Any:
    if database is not None:
        target = dataclasses.replace(target, database=database)
    return db.connect(target, autocommit=autocommit)


def describe(target: Target, extra_settings: Iterable[str] = ()) -> db.ServerInfo:
    """The server's facts plus the settings that matter to one benchmark in particular."""
    info = db.describe(target)
    names = [name for name in extra_settings if name not in info.settings]
    if names:
        info.settings.update(_settings(target, names))
    return info


def _settings(target: Target, names: Sequence[str]) -> dict[str, str]:
    conn = connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                cur.execute(
                    "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
                    (list(names),),
                )
            else:
                placeholders = ", ".join(["%s"] * len(names))
                cur.execute(
                    f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})",
                    list(names),
                )
            return {name: str(value) for name, value in cur.fetchall()}
    finally:
        conn.close()


def environment(
    target: Target, extra_settings: Iterable[str] = (), load_engine: str = "benchhub-agent"
) -> dict[str, Any]:
    """BenchmarkResult's client, database and storage_path keyword arguments."""
    info = describe(target, extra_settings)
    client = info.client_section(load_engine)
    client.setdefault("cpu_placement", "unpinned")
    return {
        "client": client,
        "database": info.database_section(),
        "storage_path": info.data_directory.rstrip("/") if info.data_directory else None,
    }


def median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


def option(options: argparse.Namespace, name: str, default: Any) -> Any:
    """A common option the CLI normally sets; the default keeps modules usable without it."""
    value = getattr(options, name, None)
    return default if value is None else value


def refuse_pin(options: argparse.Namespace, benchmark: str) -> None:
    """Fail loudly rather than record a placement that was never applied."""
    if getattr(options, "pin", None):
        raise ValueError(f"{benchmark}: --pin is not supported here (backup and select-update)")


def ensure_database(target: Target) -> None:
    """Create ``target.database`` when missing (tests and first runs benchmark in their own)."""
    if target.engine == "postgresql":
        conn = connect(target, database="postgres")
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (target.database,))
                if cur.fetchone() is None:
                    cur.execute(f'CREATE DATABASE "{target.database}"')
        finally:
            conn.close()
    elif target.engine in MYSQL_FAMILY:
        conn = connect(target, database="")
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{target.database}`")
        finally:
            conn.close()


def mysql_numbers(count: int) -> str:
    """A derived table ``numbers(n)`` holding 1..count, for INSERT … SELECT on MySQL/MariaDB.

    Row-by-row inserts from Python take seconds per 100,000 rows; a cross join of digit
    tables lets the server generate the rows itself, on MySQL and MariaDB alike (MariaDB's
    seq_1_to_N tables do not exist on MySQL).
    """
    digits = " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10))
    places = len(str(max(count, 1)))
    tables = ", ".join(f"({digits}) AS p{i}" for i in range(places))
    value = " + ".join(f"p{i}.d * {10**i}" for i in range(places))
    where = f"{value} < {int(count)}"
    return f"(SELECT 1 + {value} AS n FROM {tables} WHERE {where}) AS numbers"  # noqa: S608
