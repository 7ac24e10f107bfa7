"""Connection, authentication and permission failures as one line naming what to fix.

The drivers' own messages are long (psycopg's run over three lines, PyMySQL's
are tuples, Firebird's tools print several) and a traceback above them buries
the one fact a user needs: which part of ``--dsn`` (host, port, user, password,
database) or which privilege is wrong. :func:`explain` recognises them,
wherever they are in an exception's chain, and says that in one line; the CLI
prints it, exits 2 and keeps the traceback for ``--debug``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .target import Target

ENGINE_NAMES = {"postgresql": "PostgreSQL", "mysql": "MySQL", "mariadb": "MariaDB"}
ENGINE_NAMES["firebird"] = "Firebird"
CHECK_HOST_PORT = "check the host and port in --dsn and that the server is running"


class ConnectionProblem(Exception):
    """A failure the user fixes in --dsn or with a GRANT; ``str()`` is the one line."""


def explain(exc: BaseException, target: Target | None = None) -> str | None:
    """One line for a connection, login or privilege failure; None for anything else."""
    for cause in _chain(exc):
        if isinstance(cause, ConnectionProblem):
            return str(cause)
        text = _message(cause)
        for reader in (_postgresql, _mysql, _firebird):
            found = reader(cause, text, target)
            if found:
                return found
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def driver_message(exc: BaseException) -> str:
    """A driver's message as text, on one line (PyMySQL gives a (code, message) tuple)."""
    return " ".join(_message(exc).split())


def _message(exc: BaseException) -> str:
    if exc.args and isinstance(exc.args[0], int) and len(exc.args) > 1:
        return str(exc.args[1])  # PyMySQL: (code, message)
    return str(exc)


def _where(target: Target | None) -> str:
    """The server as the user wrote it: engine, host:port or socket, without a password."""
    if target is None:
        return "the database server"
    name = ENGINE_NAMES.get(target.engine, target.engine)
    if target.socket:
        return f"{name} at socket {target.socket}"
    if target.host:
        port = f":{target.port}" if target.port else ""
        return f"{name} at {target.host}{port}"
    return f"{name} on this machine"


def _user(target: Target | None, default: str = "(the default user)") -> str:
    return target.user if target and target.user else default


def _database(target: Target | None, found: str | None = None) -> str:
    return found or (target.database if target else "?")


# --- PostgreSQL (psycopg) -----------------------------------------------------

_PG_QUOTED = r'"([^"]*)"'


def _postgresql(exc: BaseException, text: str, target: Target | None) -> str | None:
    module = type(exc).__module__
    if not module.startswith("psycopg"):
        return None
    where = _where(target)
    if "Connection refused" in text:
        return f"{where} refused the connection: {CHECK_HOST_PORT}"
    if "No such file or directory" in text and "socket" in text:
        return (
            f"no PostgreSQL socket where --dsn points ({where}): check ?host= or start the server"
        )
    # libpq's words, and psycopg's: psycopg 3 resolves the host itself before libpq.
    if match := re.search(
        r"""(?:could not translate host name|failed to resolve host) ["']([^"']*)["']""", text
    ):
        return f"unknown host {match.group(1)!r}: fix the host in --dsn"
    if "timeout expired" in text:
        return f"{where} did not answer in time: check the host and port in --dsn (or a firewall)"
    if match := re.search(rf"password authentication failed for user {_PG_QUOTED}", text):
        return f"{where} refused the password of user {match.group(1)!r}: fix the password in --dsn"
    if "no password supplied" in text:
        return (
            f"{where} asks user {_user(target)!r} for a password: "
            "add it to --dsn (postgresql://USER:PASSWORD@HOST/DB)"
        )
    if match := re.search(rf"role {_PG_QUOTED} does not exist", text):
        return f"{where} has no role {match.group(1)!r}: fix the user in --dsn"
    if match := re.search(rf"database {_PG_QUOTED} does not exist", text):
        name = match.group(1)
        return (
            f"{where} has no database {name!r}: fix the database in --dsn "
            f"or create it (createdb {name})"
        )
    if match := re.search(rf"no pg_hba.conf entry for host {_PG_QUOTED}, user {_PG_QUOTED}", text):
        return (
            f"{where} does not let user {match.group(2)!r} connect from {match.group(1)}: "
            "use another user in --dsn or add a pg_hba.conf entry"
        )
    if "permission denied to create database" in text:
        return (
            f"user {_user(target)!r} may not create databases on {where}: "
            "create the database in --dsn first, or grant CREATEDB"
        )
    if match := re.search(r"permission denied for (\w+) (\S+)", text):
        kind, name = match.groups()
        return (
            f"user {_user(target)!r} lacks a privilege on {kind} {name} in database "
            f"{_database(target)!r}: grant it (e.g. GRANT ALL ON {kind.upper()} {name} TO "
            f"{_user(target)}) or use another user in --dsn"
        )
    if "must be owner of" in text or getattr(exc, "sqlstate", None) == "42501":
        line = text.strip().splitlines()[0]
        return (
            f"user {_user(target)!r} lacks a privilege on {where} ({line}): "
            "grant it or use another user in --dsn"
        )
    if "too many clients" in text or "remaining connection slots are reserved" in text:
        return f"{where} has no free connection: lower --clients or raise max_connections"
    return None


# --- MySQL / MariaDB (PyMySQL) ------------------------------------------------

_MYSQL_QUOTED = r"'([^']*)'"
# getaddrinfo's words (glibc, macOS, Windows) inside PyMySQL's 2003 "Can't connect".
UNKNOWN_HOST = ("Name or service not known", "nodename nor servname", "getaddrinfo failed")


def _mysql(exc: BaseException, text: str, target: Target | None) -> str | None:
    if not type(exc).__module__.startswith("pymysql") or not exc.args:
        return None
    code = exc.args[0] if isinstance(exc.args[0], int) else None
    where = _where(target)
    if code == 2003 and any(words in text for words in UNKNOWN_HOST):
        return f"unknown host in --dsn ({where}): fix the host"
    if code == 2003:
        return f"{where} refused the connection: {CHECK_HOST_PORT}"
    if code == 2002:
        return (
            f"no MySQL/MariaDB socket where --dsn points ({where}): "
            "check ?unix_socket= or start the server"
        )
    if code == 2005:
        return f"unknown host in --dsn ({where}): fix the host"
    # 1698: MariaDB's answer to a user it does not know (or may not authenticate so)
    # when no password was given; 1045 otherwise.
    if code in (1045, 1698):
        user = re.search(r"for user '([^']*)'", text)
        name = user.group(1) if user else _user(target)
        with_password = "using password: YES" in text
        fix = "the user or the password" if with_password else "the user, or add its password"
        return f"{where} refused user {name!r}: fix {fix} in --dsn"
    if code == 1049:
        name = re.search(rf"Unknown database {_MYSQL_QUOTED}", text)
        db = _database(target, name.group(1) if name else None)
        return (
            f"{where} has no database {db!r}: fix the database in --dsn "
            f"or create it (CREATE DATABASE {db})"
        )
    if code == 1044:
        return (
            f"user {_user(target)!r} may not use database {_database(target)!r} on {where}: "
            f"GRANT ALL ON {_database(target)}.* TO the user, or use another user in --dsn"
        )
    if code in (1142, 1143, 1227, 1370):
        return (
            f"user {_user(target)!r} lacks a privilege on {where} ({text}): grant it "
            f"(GRANT ALL ON {_database(target)}.* TO the user) or use another user in --dsn"
        )
    if code == 1040:
        return f"{where} has no free connection: lower --clients or raise max_connections"
    return None


# --- Firebird (its command-line tools) -------------------------------------


def _firebird(exc: BaseException, text: str, target: Target | None) -> str | None:
    if type(exc).__name__ != "FirebirdError" and "SQLSTATE" not in text:
        return None
    if target is not None and target.engine != "firebird":
        return None
    where = _where(target)
    if "user name and password are not defined" in text:
        user = _user(target, "SYSDBA")
        return f"{where} refused user {user!r}: fix the user or the password in --dsn"
    if "Failed to locate host machine" in text:  # its resolver found no such name
        return f"unknown host in --dsn ({where}): fix the host"
    if "Unable to complete network request" in text or "SQLSTATE = 08006" in text:
        return f"{where} did not accept the connection: {CHECK_HOST_PORT}"
    if match := re.search(r'I/O error during "[^"]*" operation for file "([^"]*)"', text):
        reason = text.strip().splitlines()[-1].lstrip("-")
        return f"Firebird cannot open or create {match.group(1)} ({reason}): fix the path in --dsn"
    if match := re.search(r"no permission for (\w+) access to (\w+) (\S+)", text):
        access, kind, name = match.groups()
        return (
            f"user {_user(target, 'SYSDBA')!r} lacks {access} permission on {kind.lower()} "
            f"{name} on {where}: grant it or use another user in --dsn"
        )
    return None
