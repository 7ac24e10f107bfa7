"""What the tpcb, sql-bench, backup and external-sort modules share on top of ``db``.

Connections and the server's self-description come from :mod:`benchhub_agent.db`, so
every benchmark records version, settings, protocol and driver the same way; this module
adds the per-benchmark settings, the median, and a database the tests can create.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import statistics
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .. import db
from .. import errors as db_errors
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


def load_driver_description(engine: str, driver: str | None) -> dict[str, str]:
    """The document's client.driver and driver_version for what the load's clients talk
    through, where it is not what described the server: Firebird's load calls
    libfbclient's ISC API itself (firebird-driver sets the tables up)."""
    if engine == "firebird":
        from .. import firebird_isc

        return {"driver": firebird_isc.DRIVER, "driver_version": firebird_isc.client_version()}
    return driver_description(driver) if driver is not None else {}


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
    if target.engine == "firebird":
        return {}  # db.describe records every setting Firebird has that a run depends on
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


# What the agent writes into every object it makes, and reads back before it reuses or
# removes one: an object without it is someone else's, whatever its name.
OWNER_MARK = "made by benchhub-agent for its benchmark; removed by it"
OWNER_TABLE = "benchhub_owner"
MAX_IDENTIFIER = 64  # MySQL/MariaDB cut names at 64 characters


class NotOurs(db_errors.ConnectionProblem):
    """An object the agent would use has the agent's name but not its mark: refused."""


class NotKept(db_errors.ConnectionProblem):
    """--no-init, and no data kept by an earlier run to reuse: refused before anything."""


def _own_place(target: Target, benchmark: str) -> str:
    if target.engine == "postgresql":
        return f"schema {schema_name(benchmark)} of {target.database}"
    if target.engine in MYSQL_FAMILY:
        return f"database {own_database_name(target.database, benchmark)}"
    from . import _firebird as fb

    return own_firebird_path(fb.FirebirdDatabase.from_target(target).path, benchmark)


def _kept_tables_missing(target: Target, benchmark: str, tables: Sequence[str]) -> list[str]:
    """Which of ``tables`` the benchmark's own marked object lacks (all of them when the
    object itself is missing or not the agent's)."""
    if target.engine == "firebird":
        from . import _firebird as fb

        path = own_firebird_path(fb.FirebirdDatabase.from_target(target).path, benchmark)
        own = fb.FirebirdDatabase.from_target(dataclasses.replace(target, database=path))
        if not (fb.exists(own) and fb.is_marked(own)):
            return list(tables)
        names = fb.table_names(own)
        return [table for table in tables if table.upper() not in names]
    conn = connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                schema = schema_name(benchmark)
                if _postgresql_mark(cur, schema) != OWNER_MARK:
                    return list(tables)
                cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
            else:
                own = own_database_name(target.database, benchmark)
                if not _mysql_database_exists(cur, own) or _mysql_mark(cur, own) != OWNER_MARK:
                    return list(tables)
                cur.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (own,),
                )
            present = {row[0].lower() for row in cur.fetchall()}
    finally:
        conn.close()
    return [table for table in tables if table.lower() not in present]


def own_database_name(database: str, benchmark: str) -> str:
    """MySQL/MariaDB: the database a benchmark works in, beside the one --dsn names
    (``shop`` → ``shop_benchhub_tpcb``), so that its tables never meet the user's."""
    suffix = "_benchhub_" + benchmark.replace("-", "_")
    name = (database or "") + suffix if database else suffix.lstrip("_")
    if len(name) > MAX_IDENTIFIER:
        digest = hashlib.sha256(database.encode()).hexdigest()[:8]
        name = f"{database[: MAX_IDENTIFIER - len(suffix) - 9]}_{digest}{suffix}"
    return name


def own_firebird_path(path: str, benchmark: str) -> str:
    """Firebird: the benchmark's own database file, next to the one --dsn names and never
    that one (``/srv/fb/shop.fdb`` → ``/srv/fb/shop_benchhub_backup.fdb``)."""
    folder, _, file = path.rpartition("/")
    stem = file.rsplit(".", 1)[0] if "." in file else file
    return f"{folder}/{stem}_benchhub_{benchmark.replace('-', '_')}.fdb"


def in_own_schema(target: Target, benchmark: str) -> Target:
    """``target`` whose connections make and find the benchmark's objects where no user
    object can be: PostgreSQL, a schema of its own (alone on every connection's
    search_path, pgbench's and pg_dump's too, through PGOPTIONS); MySQL/MariaDB, a
    database of its own beside the DSN's; Firebird, a database file of its own next to
    the DSN's. Each carries the agent's mark; one with the agent's name and no mark is
    someone else's, and the run is refused before anything is touched."""
    if target.engine == "postgresql":
        return _own_postgresql_schema(target, benchmark)
    if target.engine in MYSQL_FAMILY:
        return _own_mysql_database(target, benchmark)
    if target.engine == "firebird":
        return _own_firebird_file(target, benchmark)
    return target


def _own_postgresql_schema(target: Target, benchmark: str) -> Target:
    schema = schema_name(benchmark)
    conn = connect(target)
    try:
        with conn.cursor() as cur:
            found = _postgresql_mark(cur, schema)
            if found is _ABSENT:
                cur.execute(f"CREATE SCHEMA {schema}")
                # COMMENT takes no parameter; the mark is a constant without quotes.
                cur.execute(f"COMMENT ON SCHEMA {schema} IS '{OWNER_MARK}'")
            elif found != OWNER_MARK:
                raise NotOurs(
                    f"PostgreSQL database {target.database} already has a schema {schema} that "
                    "benchhub-agent did not make; it is left alone: rename it, or give --dsn "
                    "another database"
                )
    finally:
        conn.close()
    return dataclasses.replace(
        target, options={**target.options, "options": f"-c search_path={schema}"}
    )


_ABSENT = object()  # no such schema (a schema without a comment has the mark None)


def _postgresql_mark(cur: Any, schema: str) -> Any:
    """The comment on ``schema`` (None without one), or _ABSENT where there is no schema."""
    cur.execute(
        "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s",
        (schema,),
    )
    found = cur.fetchone()
    return _ABSENT if found is None else found[0]


def _mysql_mark(cur: Any, database: str) -> str | None:
    """The mark in ``database``, or None where it has none (or no such table)."""
    cur.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s",
        (database, OWNER_TABLE),
    )
    if cur.fetchone() is None:
        return None
    cur.execute(f"SELECT note FROM `{database}`.{OWNER_TABLE}")  # noqa: S608 - our own name
    row = cur.fetchone()
    return row[0] if row else None


def _mysql_database_exists(cur: Any, database: str) -> bool:
    cur.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (database,))
    return cur.fetchone() is not None


def _own_mysql_database(target: Target, benchmark: str) -> Target:
    own = own_database_name(target.database, benchmark)
    conn = connect(target)
    try:
        with conn.cursor() as cur:
            if _mysql_database_exists(cur, own):
                if _mysql_mark(cur, own) != OWNER_MARK:
                    raise NotOurs(
                        f"the server already has a database {own} that benchhub-agent did not "
                        "make; it is left alone: rename it, or give --dsn another database"
                    )
            else:
                try:
                    cur.execute(f"CREATE DATABASE `{own}`")
                except Exception as exc:
                    user = target.user or "root"
                    raise NotOurs(
                        f"user {user!r} may not create the database {own} that benchhub-agent "
                        f"works in, beside {target.database} ({db_errors.driver_message(exc)}): "
                        f"GRANT ALL ON `{own}`.* TO '{user}'"
                    ) from exc
                cur.execute(f"CREATE TABLE `{own}`.{OWNER_TABLE} (note varchar(200))")
                mark = f"INSERT INTO `{own}`.{OWNER_TABLE} VALUES (%s)"  # noqa: S608 - our name
                cur.execute(mark, (OWNER_MARK,))
    finally:
        conn.close()
    return dataclasses.replace(target, database=own)


def _own_firebird_file(target: Target, benchmark: str) -> Target:
    from . import _firebird as fb

    path = own_firebird_path(fb.FirebirdDatabase.from_target(target).path, benchmark)
    own = dataclasses.replace(target, database=path)
    database = fb.FirebirdDatabase.from_target(own)
    if not fb.exists(database):
        # Made through the server, so that the file belongs to the server's user.
        fb.recreate(database, OWNER_MARK)
    elif not fb.is_marked(database):
        raise NotOurs(
            f"Firebird database {path} exists and benchhub-agent did not make it; it is left "
            "alone: move it, or give --dsn a database in another folder"
        )
    return own


def remove_own_objects(target: Target, benchmark: str, tables: Sequence[str] = ()) -> None:
    """Drop what the benchmark made for ``target`` (the --dsn's): its schema, database or
    database file, each only while it carries the agent's mark."""
    if target.engine == "firebird":
        from . import _firebird as fb

        path = own_firebird_path(fb.FirebirdDatabase.from_target(target).path, benchmark)
        database = fb.FirebirdDatabase.from_target(dataclasses.replace(target, database=path))
        if fb.exists(database) and fb.is_marked(database):
            fb.drop(database)
        return
    if target.engine not in MYSQL_FAMILY and target.engine != "postgresql":
        return
    conn = connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                schema = schema_name(benchmark)
                if _postgresql_mark(cur, schema) == OWNER_MARK:
                    cur.execute(f"DROP SCHEMA {schema} CASCADE")
            else:
                own = own_database_name(target.database, benchmark)
                if _mysql_database_exists(cur, own) and _mysql_mark(cur, own) == OWNER_MARK:
                    cur.execute(f"DROP DATABASE `{own}`")
    finally:
        conn.close()


def kept_rows(target: Target, benchmark: str, table: str) -> int:
    """--no-init: the rows of ``table`` an earlier --keep run left in ``target`` (the
    benchmark's own object), which the run records instead of a --rows it did not build;
    none is refused in one line."""
    if target.engine == "firebird":
        from . import _firebird as fb

        query = f"SELECT count(*) FROM {table}"  # noqa: S608 - a benchmark's constant
        count = int(fb.query_values(fb.FirebirdDatabase.from_target(target), query)[0])
    else:
        conn = connect(target)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 - constant
                count = int(cur.fetchone()[0])
        finally:
            conn.close()
    if count == 0:
        raise NotKept(
            f"{benchmark} --no-init: the kept table {table} is empty; run once with --keep "
            "and without --no-init to build it"
        )
    return count


@contextlib.contextmanager
def own_objects(
    target: Target, options: argparse.Namespace, benchmark: str, tables: Sequence[str]
) -> Iterator[Target]:
    """Run a benchmark in its own schema or tables, removed afterwards unless --keep
    (or --no-init: the objects were kept by an earlier run for this one, and are
    refused in one line, before anything is made, when they were not)."""
    if option(options, "no_init", False):
        missing = _kept_tables_missing(target, benchmark, tables)
        if missing:
            raise NotKept(
                f"{benchmark} --no-init: no data kept by an earlier run ({', '.join(missing)} "
                f"missing in {_own_place(target, benchmark)}); run once with --keep and "
                "without --no-init to build it"
            )
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
