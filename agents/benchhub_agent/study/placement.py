"""Where a study puts a benchmark's data: on the filesystem of each cell's directory.

PostgreSQL: a tablespace in ``<dir>/benchhub-study-<token>`` and a database of the
study's own created in it, so that every table and index the benchmark makes
(in its own schema, as always) is on that filesystem; the WAL stays in the
server's data directory. MariaDB/MySQL: the benchmark's InnoDB tables are made
with ``DATA DIRECTORY`` there (benchmarks that declare ``DATA_DIRECTORY``); the
redo log stays in the server's. Firebird: the database file, made there by the
server itself (so as its user). All of it is dropped afterwards.
"""

from __future__ import annotations

import dataclasses
import os
from urllib.parse import quote, urlsplit, urlunsplit

from .. import db
from ..benchmarks import _connections as dbc
from ..target import Target
from .machine import Changes, Place, StudyError, own_directory, remove_tree

MARK = dbc.OWNER_MARK


def owner_of(target: Target) -> tuple[int, int]:
    """The OS user and group the server of ``target`` runs as."""
    if target.engine == "firebird":
        return firebird_owner(target)
    return server_owner(db.describe(target), target)


def firebird_owner(target: Target) -> tuple[int, int]:
    """Firebird: its server process's user, found without a database to connect to."""
    from ..benchmarks import _firebird as fb

    pid = fb.server_pid() if fb.FirebirdDatabase.from_target(target).is_local_file else None
    if pid is None:
        raise StudyError(
            "the Firebird server of --dsn must run on this machine (localhost) to place "
            "its database file on this machine's filesystems"
        )
    found = os.stat(f"/proc/{pid}")
    return found.st_uid, found.st_gid


def server_owner(info: db.ServerInfo, target: Target) -> tuple[int, int]:
    """The OS user and group the server runs as: those owning its data directory."""
    if not info.is_local or not info.data_directory:
        raise StudyError(
            f"the {target.engine} server of --dsn must run on this machine and tell its data "
            "directory (PostgreSQL: a superuser or pg_read_all_settings) to place data on "
            "this machine's filesystems"
        )
    try:
        found = os.stat(info.data_directory)
    except OSError as exc:
        raise StudyError(
            f"cannot see the server's data directory {info.data_directory}: {exc.strerror}"
        ) from exc
    return found.st_uid, found.st_gid


def with_database(target: Target, database: str) -> Target:
    parts = urlsplit(target.dsn)
    dsn = urlunsplit(parts._replace(path="/" + quote(database)))
    return dataclasses.replace(target, database=database, dsn=dsn)


def check_directory_text(path: str) -> None:
    if any(c in path for c in "'\\\0\n"):
        raise StudyError(f"--on: {path!r}: a quote, backslash or line break cannot be passed")


def place_postgresql(
    target: Target, place: Place, token: str, index: int, owner: tuple[int, int], changes: Changes
) -> Target:
    """A tablespace on ``place`` and a database in it: the target of the cell's runs."""
    from psycopg import sql

    name = f"benchhub_study_{token}_{index}"
    with changes.made() as register:
        directory = own_directory(place, token, owner)
        register(f"remove {directory}", "remove-tree", path=directory)
    check_directory_text(directory)
    conn = db.connect_postgresql(target)
    try:
        with changes.made() as register:
            conn.execute(
                sql.SQL("CREATE TABLESPACE {} LOCATION {}").format(
                    sql.Identifier(name), sql.Literal(directory)
                )
            )
            register(
                f"drop tablespace {name}",
                "drop-postgresql",
                dsn=target.dsn,
                kind="TABLESPACE",
                name=name,
            )
        conn.execute(sql.SQL("COMMENT ON TABLESPACE {} IS {}").format(sql.Identifier(name), MARK))
        with changes.made() as register:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TABLESPACE {}").format(
                    sql.Identifier(name), sql.Identifier(name)
                )
            )
            register(
                f"drop database {name}",
                "drop-postgresql",
                dsn=target.dsn,
                kind="DATABASE",
                name=name,
            )
        conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), MARK))
    except db.postgresql_module().Error as exc:
        raise StudyError(
            f"PostgreSQL refused the study's tablespace in {directory}: "
            f"{' '.join(str(exc).split())} (CREATE TABLESPACE needs a superuser)"
        ) from exc
    finally:
        conn.close()
    return with_database(target, name)


def drop_postgresql(target: Target, kind: str, name: str) -> None:
    from psycopg import sql

    conn = db.connect_postgresql(target)
    try:
        if kind == "DATABASE":
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        else:
            conn.execute(sql.SQL("DROP TABLESPACE IF EXISTS {}").format(sql.Identifier(name)))
    finally:
        conn.close()


def place_mysql(
    target: Target, place: Place, token: str, owner: tuple[int, int], changes: Changes
) -> Target:
    """A directory for the benchmark's tables' files, proven by a table made there."""
    with changes.made() as register:
        directory = own_directory(place, token, owner)
        register(f"remove {directory}", "remove-tree", path=directory)
    check_directory_text(directory)
    probe = f"benchhub_study_{token}_probe"
    conn = db.connect_mysql(target)
    try:
        with conn.cursor() as cur:
            with changes.made() as register:
                cur.execute(f"CREATE DATABASE `{probe}`")
                register(f"drop database {probe}", "drop-mysql", dsn=target.dsn, name=probe)
            try:
                cur.execute(
                    f"CREATE TABLE `{probe}`.probe (i int) ENGINE=InnoDB "
                    f"DATA DIRECTORY='{directory}'"
                )
            except Exception as exc:
                raise StudyError(
                    f"the server cannot make InnoDB tables in {directory} (DATA DIRECTORY): "
                    f"{dbc.db_errors.driver_message(exc)}; it needs innodb_file_per_table=ON "
                    "and write access there (AppArmor or SELinux may forbid it)"
                ) from exc
            cur.execute(f"DROP DATABASE `{probe}`")
    finally:
        conn.close()
    return dataclasses.replace(target, data_directory=directory)


def drop_mysql(target: Target, database: str) -> None:
    conn = db.connect_mysql(target)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
    finally:
        conn.close()


FIREBIRD_FILE = "study.fdb"


def place_firebird(
    target: Target, place: Place, token: str, owner: tuple[int, int], changes: Changes
) -> Target:
    """A folder of the server's user on ``place`` and the cell's database path in it (the
    benchmark makes its own file beside that path); a probe database proves the server may
    create files there before any run."""
    from ..benchmarks import _firebird as fb

    with changes.made() as register:
        directory = own_directory(place, token, owner)
        register(
            f"remove {directory}",
            "remove-firebird-folder",
            dsn=target.dsn,
            directory=directory,
        )
    check_directory_text(directory)
    probe = fb.FirebirdDatabase.from_target(
        with_database(target, os.path.join(directory, "probe.fdb"))
    )
    try:
        fb.recreate(probe, MARK)
        fb.drop(probe)
    except fb.FirebirdError as exc:
        raise StudyError(
            f"the Firebird server cannot make a database in {directory}: "
            f"{' '.join(str(exc).split())} (DatabaseAccess in firebird.conf must allow it)"
        ) from exc
    return with_database(target, os.path.join(directory, FIREBIRD_FILE))


def remove_firebird_folder(target: Target, directory: str) -> None:
    """Drop through the server each database of the agent's in ``directory`` (a file the
    server still has open would keep the filesystem busy), then the folder."""
    from ..benchmarks import _firebird as fb

    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if name.endswith(".fdb"):
            database = fb.FirebirdDatabase.from_target(
                with_database(target, os.path.join(directory, name))
            )
            if fb.exists(database) and fb.is_marked(database, MARK):
                fb.drop(database)
    remove_tree(directory)
