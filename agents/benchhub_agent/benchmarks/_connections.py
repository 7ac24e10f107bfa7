"""What the tpcb, sql-bench, backup and external-sort modules share on top of ``db``.

Connections and the server's self-description come from :mod:`benchhub_agent.db`, so
every benchmark records version, settings, protocol and driver the same way; this module
adds the per-benchmark settings, the median, and a database the tests can create.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .. import db
from .base import Target

MYSQL_FAMILY = frozenset({"mysql", "mariadb"})
# The drivers a MySQL/MariaDB load can run on (tpcb, select-update): see mysql_driver.
MYSQL_DRIVERS = ("mysqlclient", "pymysql")


def mysql_driver(requested: str | None = None) -> str:
    """The driver the load runs on: ``requested``, or mysqlclient when it imports."""
    if requested == "pymysql":
        return "pymysql"
    try:
        import MySQLdb  # noqa: F401
    except ImportError as exc:
        if requested == "mysqlclient":
            raise db.DriverMissing(
                "--mysql-driver mysqlclient: not installed; pip install "
                "'benchhub-agent[mysqlclient]' (needs libmariadb-dev and pkg-config)"
            ) from exc
        return "pymysql"
    return "mysqlclient"


def driver_description(driver: str) -> dict[str, str]:
    """The document's client.driver and driver_version for the load's driver."""
    from importlib import metadata

    name = "mysqlclient" if driver == "mysqlclient" else "PyMySQL"
    return {"driver": name, "driver_version": metadata.version(name)}


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


# --- a benchmark's own objects, and a checkpoint before each measured point ------------


def schema_name(benchmark: str) -> str:
    """PostgreSQL: the schema a benchmark works in (``benchhub_select_update``, …)."""
    return "benchhub_" + benchmark.replace("-", "_")


def in_own_schema(target: Target, benchmark: str) -> Target:
    """``target`` whose connections find and create tables in the benchmark's own schema.

    PostgreSQL: the schema is created when missing, and every connection of the
    returned target (the agent's, and pgbench's or pg_dump's through PGOPTIONS)
    has it alone on its search_path. MySQL/MariaDB call a database a schema and
    the user named one in --dsn: the benchmark's tables have names of their own
    there. Firebird: the benchmark's database file is its own.
    """
    if target.engine != "postgresql":
        return target
    schema = schema_name(benchmark)
    conn = connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    finally:
        conn.close()
    return dataclasses.replace(
        target, options={**target.options, "options": f"-c search_path={schema}"}
    )


def remove_own_objects(target: Target, benchmark: str, tables: Sequence[str]) -> None:
    """Drop what the benchmark created: its schema (PostgreSQL) or its tables."""
    if target.engine == "firebird":  # the file the benchmark created (backup recreates it)
        from . import _firebird as fb

        database = fb.FirebirdDatabase.from_target(target)
        if fb.exists(database):
            fb.isql(database, "DROP DATABASE;\n")
        return
    if target.engine == "postgresql":
        statements = [f"DROP SCHEMA IF EXISTS {schema_name(benchmark)} CASCADE"]
    elif target.engine in MYSQL_FAMILY:
        statements = [f"DROP TABLE IF EXISTS {table}" for table in tables]
    else:
        return
    conn = connect(target)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


@contextlib.contextmanager
def own_objects(
    target: Target, options: argparse.Namespace, benchmark: str, tables: Sequence[str]
) -> Iterator[Target]:
    """Run a benchmark in its own schema or tables, removed afterwards unless --keep
    (or --no-init: the objects were kept by an earlier run for this one)."""
    workspace = in_own_schema(target, benchmark)
    try:
        yield workspace
    finally:
        if not (option(options, "keep", False) or option(options, "no_init", False)):
            remove_own_objects(target, benchmark, tables)


CHECKPOINT_SQL = {"postgresql": "CHECKPOINT", "mysql": "FLUSH TABLES", "mariadb": "FLUSH TABLES"}


class Checkpoints:
    """CHECKPOINT (MySQL/MariaDB: FLUSH TABLES) before each measured point, when allowed.

    The first refusal (PostgreSQL: superuser or pg_checkpoint; MySQL: RELOAD) is
    remembered and not asked again; :meth:`note` says in the run's note which it was.
    """

    def __init__(self, target: Target) -> None:
        self.target = target
        self.sql = CHECKPOINT_SQL.get(target.engine)
        self.done = 0
        self.refused: str | None = None if self.sql else f"{target.engine} has none in SQL"

    def before_point(self) -> None:
        if self.refused is not None:
            return
        try:
            conn = connect(self.target)
        except Exception as exc:  # the point's own connection will say what is wrong
            self.refused = f"could not connect: {exc}"
            return
        try:
            with conn.cursor() as cur:
                cur.execute(self.sql)
            self.done += 1
        except Exception as exc:  # psycopg / PyMySQL refusal: the role may not
            self.refused = str(exc).strip().splitlines()[0]
        finally:
            conn.close()

    def note(self) -> str:
        if self.sql is None:
            return f"checkpoint: not applicable ({self.target.engine} has no statement for it)."
        if self.refused is None:
            return f"checkpoint: {self.sql} before each of the {self.done} measured points."
        return f"checkpoint: none before the measured points ({self.sql or '-'}: {self.refused})."
