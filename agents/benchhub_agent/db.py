"""Connections to the databases the benchmarks drive, and what a server says about itself.

Every benchmark connects through here so that the document always records the
same things the same way: the server's own version text, the settings that
decide its speed, the protocol the connection really used (asked of the
server or of the socket, never guessed from the DSN) and the data directory
for storage detection.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from .target import Target

POSTGRESQL_SETTINGS = (
    "shared_buffers",
    "fsync",
    "synchronous_commit",
    "wal_sync_method",
    "full_page_writes",
    "wal_level",
    "max_wal_size",
    "checkpoint_timeout",
    "work_mem",
    "effective_io_concurrency",
    "max_connections",
    "default_transaction_isolation",
    # decides select-update's plan: a generic plan made on the fresh 100-row table
    # is a sequential scan (docs/performance.md, "Agent overhead")
    "plan_cache_mode",
)

MYSQL_SETTINGS = (
    "innodb_buffer_pool_size",
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "innodb_flush_method",
    "innodb_log_file_size",
    "innodb_doublewrite",
    "log_bin",
    "max_connections",
    "transaction_isolation",
    "tx_isolation",
)

# Where mysql clients look for the server's socket when the DSN names no host.
MYSQL_SOCKETS = (
    "/run/mysqld/mysqld.sock",
    "/var/run/mysqld/mysqld.sock",
    "/tmp/mysql.sock",  # noqa: S108 — only read: the socket a server built with defaults opens
)


class DriverMissing(RuntimeError):
    """The Python driver for an engine is not installed."""


@dataclass
class ServerInfo:
    """The document's ``database`` and ``client`` sections, plus the data directory."""

    engine: str
    version_string: str
    settings: dict[str, str | int | float | bool] = field(default_factory=dict)
    protocol: str = "unknown"
    driver: str = ""
    driver_version: str = ""
    data_directory: str | None = None
    server_pid: int | None = None
    architecture: str | None = None  # Firebird: superserver, superclassic or classic

    def database_section(self) -> dict[str, Any]:
        section: dict[str, Any] = {"version_string": self.version_string[:500]}
        section["engine"] = self.engine
        if self.architecture:
            section["architecture"] = self.architecture
        if self.settings:
            section["settings"] = self.settings
        return section

    def client_section(self, load_engine: str = "benchhub-agent") -> dict[str, Any]:
        section: dict[str, Any] = {"protocol": self.protocol, "load_engine": load_engine}
        if self.driver:
            section["driver"] = self.driver
            section["driver_version"] = self.driver_version
        return section

    @property
    def is_local(self) -> bool:
        return self.protocol in ("unix_socket", "tcp_loopback", "local", "embedded")


def protocol_for_address(address: str | None) -> str:
    """unix_socket when there is no IP address, else loopback or remote.

    An address of one of this machine's own interfaces counts as loopback:
    the kernel routes it locally and the server shares this machine's disks.
    """
    if not address:
        return "unix_socket"
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return "unknown"
    if ip.is_loopback or _is_local_address(str(ip)):
        return "tcp_loopback"
    return "tcp_remote"


def _is_local_address(address: str) -> bool:
    # Binding succeeds only to an address this host owns; nothing is sent.
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False


# --- PostgreSQL -------------------------------------------------------------


def postgresql_module() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise DriverMissing(
            "PostgreSQL needs psycopg: pip install 'benchhub-agent[postgresql]'"
        ) from exc
    return psycopg


def postgresql_conninfo(target: Target) -> dict[str, Any]:
    params: dict[str, Any] = {"dbname": target.database}
    host = target.socket or target.host
    if host:
        params["host"] = host
    if target.port:
        params["port"] = target.port
    if target.user:
        params["user"] = target.user
    if target.password:
        params["password"] = target.password
    params.update(target.options)
    return params


def connect_postgresql(target: Target, *, autocommit: bool = True) -> Any:
    psycopg = postgresql_module()
    return psycopg.connect(**postgresql_conninfo(target), autocommit=autocommit)


def describe_postgresql(conn: Any) -> ServerInfo:
    psycopg = postgresql_module()
    with conn.cursor() as cur:
        cur.execute("SELECT version(), host(inet_server_addr()), pg_backend_pid()")
        version, address, backend_pid = cur.fetchone()
        cur.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
            (list(POSTGRESQL_SETTINGS),),
        )
        settings = dict(cur.fetchall())
        data_directory = _optional_setting(conn, "SELECT current_setting('data_directory')")
    return ServerInfo(
        engine="postgresql",
        version_string=version,
        settings={name: settings[name] for name in POSTGRESQL_SETTINGS if name in settings},
        protocol=protocol_for_address(address),
        driver="psycopg",
        driver_version=psycopg.__version__,
        data_directory=data_directory,
        server_pid=backend_pid,
    )


def _optional_setting(conn: Any, sql: str) -> str | None:
    # data_directory is readable only by superusers and pg_read_all_settings.
    try:
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchone()[0]
    except Exception:  # any refusal just means "not readable"
        return None


# --- MySQL / MariaDB ----------------------------------------------------------


def mysql_module() -> Any:
    try:
        import pymysql
    except ImportError as exc:
        raise DriverMissing(
            "MySQL/MariaDB needs PyMySQL: pip install 'benchhub-agent[mysql]'"
        ) from exc
    return pymysql


def mysql_connect_args(target: Target) -> dict[str, Any]:
    args: dict[str, Any] = {"database": target.database, "password": target.password or ""}
    if target.user:
        args["user"] = target.user
    if target.socket:
        args["unix_socket"] = target.socket
    elif target.host:
        args["host"] = target.host
        args["port"] = target.port or 3306
    else:
        # Like the mysql client: no host means the local server's socket.
        found = next((path for path in MYSQL_SOCKETS if os.path.exists(path)), None)
        if found:
            args["unix_socket"] = found
        else:
            args["host"] = "localhost"
    return args


def connect_mysql(target: Target, *, autocommit: bool = True) -> Any:
    pymysql = mysql_module()
    return pymysql.connect(**mysql_connect_args(target), autocommit=autocommit)


def describe_mysql(conn: Any) -> ServerInfo:
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION(), @@version_comment, @@datadir, @@pid_file")
        version, comment, datadir, pid_file = cur.fetchone()
        cur.execute("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        row = cur.fetchone()
        placeholders = ", ".join(["%s"] * len(MYSQL_SETTINGS))
        cur.execute(
            f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({placeholders})", MYSQL_SETTINGS
        )
        settings = dict(cur.fetchall())
    version_string = f"{version} {comment}".strip() if comment else version
    return ServerInfo(
        engine="mariadb" if "mariadb" in version_string.lower() else "mysql",
        version_string=version_string,
        settings={name: settings[name] for name in MYSQL_SETTINGS if name in settings},
        protocol=_mysql_protocol(row[0] if row else None),
        driver="PyMySQL",
        # pymysql.__version__ mimics MySQLdb's; the distribution knows the real one.
        driver_version=metadata.version("PyMySQL"),
        data_directory=datadir,
        server_pid=_read_pid(pid_file),
    )


def _mysql_protocol(processlist_host: str | None) -> str:
    # The server lists a socket connection as 'localhost' and a TCP one as 'ip:port'.
    if processlist_host is None:
        return "unknown"
    if processlist_host == "localhost":
        return "unix_socket"
    address = processlist_host.rsplit(":", 1)[0].strip("[]")
    return protocol_for_address(address)


def _read_pid(path: str | None) -> int | None:
    if not path:
        return None
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


# --- any engine -------------------------------------------------------------


# --- Firebird -----------------------------------------------------------------------------


def connect_firebird(target: Target, *, autocommit: bool = True) -> Any:
    from . import firebird_db

    try:
        return firebird_db.connect(target, autocommit=autocommit)
    except firebird_db.DriverMissing as exc:
        raise DriverMissing(str(exc)) from exc


def describe_firebird(conn: Any, target: Target) -> ServerInfo:
    from . import firebird_db

    facts = firebird_db.server_facts(conn, target)
    return ServerInfo(
        engine="firebird",
        version_string=facts["version_string"],
        settings=facts["settings"],
        protocol=facts["protocol"],
        driver="firebird-driver",
        driver_version=firebird_db.driver_version(),
        data_directory=facts["data_directory"],
        server_pid=facts["server_pid"],
        architecture=facts["architecture"],
    )


# Firebird 3 sets no limit of its own on connections (memory and the OS do): what
# require_connections compares with.
FIREBIRD_CONNECTIONS = 10_000


# --- any engine -------------------------------------------------------------


def connect(target: Target, *, autocommit: bool = True) -> Any:
    if target.engine == "postgresql":
        return connect_postgresql(target, autocommit=autocommit)
    if target.engine in ("mysql", "mariadb"):
        return connect_mysql(target, autocommit=autocommit)
    if target.engine == "firebird":
        return connect_firebird(target, autocommit=autocommit)
    raise ValueError(f"no driver for engine {target.engine!r} in the agent")


def describe(target: Target) -> ServerInfo:
    """Connect once and ask the server what it is."""
    conn = connect(target)
    try:
        if target.engine == "postgresql":
            return describe_postgresql(conn)
        if target.engine == "firebird":
            return describe_firebird(conn, target)
        return describe_mysql(conn)
    finally:
        conn.close()


def free_connections(target: Target) -> int:
    """How many more connections the server will accept from this user now."""
    if target.engine == "firebird":
        return FIREBIRD_CONNECTIONS
    conn = connect(target)
    try:
        cursor = conn.cursor()
        if target.engine == "postgresql":
            # Superusers may also use the slots reserved for them.
            cursor.execute(
                "SELECT current_setting('max_connections')::int"
                " - CASE WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
                " THEN 0 ELSE current_setting('superuser_reserved_connections')::int END"
                " - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')"
            )
            free = int(cursor.fetchone()[0])
        else:
            cursor.execute("SELECT @@max_connections")
            limit = int(cursor.fetchone()[0])
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
            free = limit - int(cursor.fetchone()[1])
    finally:
        conn.close()
    return free + 1  # the connection that asked is closed again


def require_connections(target: Target, needed: int, option: str = "--clients") -> None:
    """Refuse before a long run what would fail at its last point: a sweep
    whose largest client count the server cannot connect."""
    free = free_connections(target)
    if needed > free:
        raise ValueError(
            f"{option} needs {needed} connections at once, but the server accepts only "
            f"{free} more now (max_connections {max_connections(target)}, minus reserved and "
            f"open connections): lower {option} or raise max_connections"
        )


def max_connections(target: Target) -> int:
    """The server's max_connections setting, as it reports it."""
    if target.engine == "firebird":
        return FIREBIRD_CONNECTIONS
    conn = connect(target)
    try:
        cursor = conn.cursor()
        if target.engine == "postgresql":
            cursor.execute("SELECT current_setting('max_connections')::int")
        else:
            cursor.execute("SELECT @@max_connections")
        return int(cursor.fetchone()[0])
    finally:
        conn.close()
