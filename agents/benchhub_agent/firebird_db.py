"""Firebird through firebird-driver, spoken the way the benchmarks speak to the other engines.

The benchmarks write their SQL once, with ``%s`` placeholders, ``LIMIT n``, ``FOR UPDATE``
and ``DROP TABLE IF EXISTS``; :func:`firebird_sql` turns those few phrases into Firebird
3's (``?``, ``ROWS n``, ``FOR UPDATE WITH LOCK``, a block that drops the table when
it is there), so that a transaction means the same on every engine, statement for
statement. :class:`Connection` adds the autocommit of the other drivers on top of
Firebird's always-open transactions.

Every transaction is READ COMMITTED (record version) and waits for locks without a
timeout, as PostgreSQL's default: a statement sees what others committed before it
began. Unlike PostgreSQL, Firebird 3 does not re-read a row a concurrent transaction
changed and committed while it waited: it fails with an update conflict (SQLSTATE
40001), which the benchmarks retry as they retry a serialization failure.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import threading
import time
from collections.abc import Iterable
from decimal import Decimal
from importlib import metadata
from pathlib import Path
from typing import Any

from .benchmarks import _firebird as fb
from .target import Target

# SQLSTATE of Firebird's deadlock, update conflict and lock time-out.
RETRYABLE_SQLSTATES = frozenset({"40001"})
# The settings recorded for every Firebird run: how the server runs, how it caches pages
# and where and how much it sorts outside memory.
CONFIG_SETTINGS = ("ServerMode", "TempDirectories", "TempCacheLimit", "DefaultDbCachePages")
CONFIG_DEFAULTS = {"ServerMode": "Super", "TempCacheLimit": "64M", "DefaultDbCachePages": "2048"}
# Where the server writes its sort files when TempDirectories is not set (firebird.conf).
TEMP_ENVIRONMENT = ("FIREBIRD_TMP", "TEMP", "TMP")


class DriverMissing(RuntimeError):
    """firebird-driver or the Firebird client library is not installed."""


def client_library_missing(exc: Exception) -> DriverMissing:
    """What the user is told when libfbclient cannot be loaded, through firebird-driver or
    directly (firebird_isc)."""
    return DriverMissing(
        f"Firebird: the client library could not be loaded ({exc}); "
        "Debian: apt-get install libfbclient2"
    )


def module() -> Any:
    try:
        from firebird import driver
    except ImportError as exc:
        raise DriverMissing(
            "Firebird needs firebird-driver: pip install 'benchhub-agent[firebird]' "
            "(and the client library: Debian's libfbclient2)"
        ) from exc
    return driver


def driver_version() -> str:
    return metadata.version("firebird-driver")


# --- SQL ---------------------------------------------------------------------------------

_DROP_IF_EXISTS = re.compile(r"^\s*DROP TABLE IF EXISTS (\w+)\s*$", re.IGNORECASE)
_LIMIT = re.compile(r"\bLIMIT (\d+)\b", re.IGNORECASE)
_FOR_UPDATE = re.compile(r"\bFOR UPDATE\b(?! WITH LOCK)", re.IGNORECASE)
# Firebird's column definitions know NOT NULL only; nullable is the default anyway.
_NULLABLE = re.compile(r"\b(timestamp) NULL\b", re.IGNORECASE)


def firebird_sql(sql: str) -> str:
    """``sql`` as the other engines take it, as Firebird 3 takes it."""
    dropped = _DROP_IF_EXISTS.match(sql)
    if dropped:
        # \w+ only: a name without quotes to escape.
        name = dropped.group(1).upper()
        exists = f"SELECT 1 FROM rdb$relations WHERE rdb$relation_name = '{name}'"  # noqa: S608
        return (
            f"EXECUTE BLOCK AS BEGIN IF (EXISTS({exists})) THEN"
            f" EXECUTE STATEMENT 'DROP TABLE {name}'; END"
        )
    sql = sql.replace("%s", "?")
    sql = _LIMIT.sub(r"ROWS \1", sql)
    sql = _FOR_UPDATE.sub("FOR UPDATE WITH LOCK", sql)
    return _NULLABLE.sub(r"\1", sql)


# --- connections -------------------------------------------------------------------------


def transaction_parameters() -> bytes:
    driver = module()
    return driver.tpb(driver.Isolation.READ_COMMITTED_RECORD_VERSION, lock_timeout=-1)


# firebird-driver loads the client library's interfaces on a process's first connect,
# unguarded: threads connecting at once found them half loaded ("'NoneType' object has
# no attribute 'get_xpb_builder'"), and the clients of a multi-threaded load never ran.
_CONNECTING = threading.Lock()


def connect_raw(target: Target) -> Any:
    """A firebird-driver connection whose transactions are READ COMMITTED and wait."""
    driver = module()
    database = fb.FirebirdDatabase.from_target(target)
    try:
        with _CONNECTING:
            conn = driver.connect(
                database.tcp(), user=database.user, password=database.password, charset="UTF8"
            )
    except driver.DatabaseError:
        raise
    except Exception as exc:  # ctypes: libfbclient.so not found
        raise client_library_missing(exc) from exc
    conn.default_tpb = transaction_parameters()
    conn.main_transaction.default_tpb = conn.default_tpb
    return conn


def rollback(raw: Any) -> None:
    """Roll back the open transaction, if there is one (firebird-driver fails without)."""
    if raw.main_transaction.is_active():
        raw.rollback()


def close(raw: Any, *resources: Any) -> None:
    """Free prepared statements and cursors, then close: freed after the close, they fail.
    A connection that is already gone is closed enough."""
    with contextlib.suppress(module().DatabaseError):
        for resource in resources:
            resource.free() if hasattr(resource, "free") else resource.close()
        rollback(raw)
        raw.close()


def connect(target: Target, *, autocommit: bool = True) -> Connection:
    return Connection(connect_raw(target), autocommit)


class Connection:
    """The DB-API the benchmarks use on the other engines: ``cursor()`` as a context
    manager, ``%s`` placeholders, ``rowcount``, and autocommit: each statement that
    returns no rows is committed at once, a query when the next statement or the close
    comes (its rows are read by then)."""

    def __init__(self, raw: Any, autocommit: bool) -> None:
        self.raw = raw
        self.autocommit = autocommit
        # Outside autocommit (the load's terminals) every statement is prepared once per
        # connection, as the other engines' prepared statements; autocommit connections
        # set tables up, and a prepared statement would keep its table from being dropped.
        self.prepared: dict[str, Any] | None = None if autocommit else {}
        self._preparer: Any = None

    def statement(self, sql: str) -> Any:
        """``sql`` in Firebird's words, prepared once when this connection caches."""
        translated = firebird_sql(sql)
        if self.prepared is None:
            return translated
        found = self.prepared.get(translated)
        if found is None:
            if self._preparer is None:
                self._preparer = self.raw.cursor()
            found = self.prepared[translated] = self._preparer.prepare(translated)
        return found

    def cursor(self) -> Cursor:
        return Cursor(self)

    def commit(self) -> None:
        if self.raw.main_transaction.is_active():
            self.raw.commit()

    def rollback(self) -> None:
        if self.raw.main_transaction.is_active():
            self.raw.rollback()

    def close(self) -> None:
        if self.raw.is_closed():
            return
        errors = module().DatabaseError
        # A connection cut in the middle of a call (Ctrl-C) fails every call after: it is
        # closed enough, and the error that stopped the run is the one to report.
        with contextlib.suppress(errors):
            if self.autocommit:
                self.commit()
            else:
                self.rollback()
        with contextlib.suppress(errors):
            for statement in (self.prepared or {}).values():
                statement.free()
            if self._preparer is not None:
                self._preparer.close()
        with contextlib.suppress(errors):
            self.raw.close()


class Cursor:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.raw = connection.raw.cursor()

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def execute(self, sql: str, parameters: Any = None) -> Cursor:
        if self.connection.autocommit:
            self.connection.commit()  # the last query's rows were read
        self.raw.execute(self.connection.statement(sql), tuple(parameters or ()))
        if self.connection.autocommit and self.raw.description is None:
            self.connection.commit()
        return self

    def executemany(self, sql: str, rows: Any) -> None:
        self.raw.executemany(firebird_sql(sql), [tuple(row) for row in rows])
        if self.connection.autocommit:
            self.connection.commit()

    @property
    def rowcount(self) -> int:
        return self.raw.affected_rows

    @property
    def description(self) -> Any:
        return self.raw.description

    def fetchone(self) -> Any:
        return self.raw.fetchone()

    def fetchall(self) -> list[Any]:
        return self.raw.fetchall()

    def fetchmany(self, size: int) -> list[Any]:
        return self.raw.fetchmany(size)

    def close(self) -> None:
        with contextlib.suppress(module().DatabaseError):  # see Connection.close
            self.raw.close()


# Rows per block: a block's text stays far below Firebird 3's limits on statement length
# and on the size of the compiled block.
INSERT_BLOCK_ROWS = 200


def insert_rows(conn: Connection, table: str, rows: Iterable[tuple]) -> None:
    """Insert ``rows`` in blocks of INSERT statements with the values written out:
    firebird-driver builds each execute's message in Python through ctypes, which costs
    more than the row itself; a block costs one round trip and one parse for all."""
    with conn.cursor() as cur:
        batch: list[str] = []
        for row in rows:
            values = ", ".join(literal(value) for value in row)
            batch.append(f"INSERT INTO {table} VALUES ({values});")  # noqa: S608 - literals
            if len(batch) == INSERT_BLOCK_ROWS:
                cur.raw.execute("EXECUTE BLOCK AS BEGIN " + " ".join(batch) + " END")
                batch = []
        if batch:
            cur.raw.execute("EXECUTE BLOCK AS BEGIN " + " ".join(batch) + " END")


def literal(value: Any) -> str:
    """``value`` as a Firebird SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return format(value, ".10f") if "e" in text else text
    if isinstance(value, dt.datetime):
        # Firebird keeps tenths of milliseconds.
        return f"TIMESTAMP '{value:%Y-%m-%d %H:%M:%S}.{value.microsecond // 100:04d}'"
    return "'" + str(value).replace("'", "''") + "'"


def set_statistics(cursor: Cursor) -> None:
    """Firebird's ANALYZE: the selectivity of every index, computed on the filled tables
    (an index made on an empty table keeps a selectivity that misleads the optimizer)."""
    cursor.execute("SELECT TRIM(rdb$index_name) FROM rdb$indices WHERE rdb$system_flag = 0")
    for (index,) in cursor.fetchall():
        cursor.execute(f"SET STATISTICS INDEX {index}")


# --- what the server says about itself ---------------------------------------------------


def server_facts(conn: Connection, target: Target) -> dict[str, Any]:
    """Version, protocol, server process, page size and buffers, and the configuration
    that decides sorting and caching (firebird.conf: Firebird 3 reports it nowhere else,
    so only a server on this machine has it recorded)."""
    raw = conn.raw
    with conn.cursor() as cur:
        cur.execute(
            "SELECT a.mon$remote_protocol, a.mon$remote_address, a.mon$server_pid,"
            " d.mon$page_size, d.mon$page_buffers FROM mon$attachments a CROSS JOIN mon$database d"
            " WHERE a.mon$attachment_id = CURRENT_CONNECTION"
        )
        protocol, address, pid, page_size, page_buffers = cur.fetchone()
    database = fb.FirebirdDatabase.from_target(target)
    local = database.is_local_file
    settings: dict[str, Any] = {"page_size": int(page_size), "page_buffers": int(page_buffers)}
    version = raw.info.firebird_version.splitlines()[0].split("/", 1)[0]
    config = server_configuration(conn)
    if not config and local:
        config = configuration(int(pid) if pid else None, version)
    settings.update(config)
    address = (address or "").split("/", 1)[0] or None
    return {
        "version_string": version,
        "protocol": _protocol(protocol, address),
        "server_pid": int(pid) if pid and local else None,
        "settings": settings,
        "data_directory": str(Path(database.path).parent) if local else None,
        "architecture": _ARCHITECTURES.get(str(config.get("ServerMode", "")).lower()),
    }


_ARCHITECTURES = {"super": "superserver", "superclassic": "superclassic", "classic": "classic"}


def _protocol(remote_protocol: str | None, address: str | None) -> str:
    if not remote_protocol:
        return "embedded"
    if remote_protocol.upper().startswith("TCP"):
        from .db import protocol_for_address

        return protocol_for_address(address) if address else "tcp_loopback"
    return "unknown"


def server_configuration(conn: Connection) -> dict[str, str]:
    """The settings as the server itself reports them: RDB$CONFIG, Firebird 4 and later
    (also of a remote server); empty on Firebird 3, which has no such table."""
    marks = ", ".join(["%s"] * len(CONFIG_SETTINGS))
    query = f"SELECT TRIM(rdb$config_name), rdb$config_value FROM rdb$config WHERE rdb$config_name IN ({marks})"  # noqa: E501, S608 - placeholders only
    try:
        with conn.cursor() as cur:
            cur.execute(query, CONFIG_SETTINGS)
            return {name: str(value) for name, value in cur.fetchall() if value is not None}
    except module().DatabaseError:
        conn.rollback()
        return {}


def configuration(server_pid: int | None, version: str | None = None) -> dict[str, str]:
    """ServerMode, TempDirectories, TempCacheLimit and DefaultDbCachePages as the server's
    firebird.conf sets them (or their documented defaults), TempDirectories resolved as
    the server does when it is not set: its FIREBIRD_TMP, TEMP or TMP, else /tmp. The file
    is the one in the server's root directory (its FIREBIRD), else Debian's for the
    server's ``version``."""
    environment = _server_environment(server_pid)
    root = environment.get("FIREBIRD")
    path = Path(root) / "firebird.conf" if root else fb.debian_config_file(version)
    try:
        text = path.read_text()
    except OSError:
        return {}
    found: dict[str, str] = {}
    for name in CONFIG_SETTINGS:
        match = re.search(rf"^\s*{name}\s*=\s*(.*?)\s*(#.*)?$", text, re.MULTILINE)
        value = match.group(1) if match else CONFIG_DEFAULTS.get(name)
        if value:
            found[name] = value
    if "TempDirectories" not in found:
        temp = next((environment[name] for name in TEMP_ENVIRONMENT if environment.get(name)), None)
        found["TempDirectories"] = temp or "/tmp"  # noqa: S108 - the server's own default
    return found


def _server_environment(server_pid: int | None) -> dict[str, str]:
    """The server process's environment, where this user may read it."""
    environment: dict[str, str] = {}
    if not server_pid:
        return environment
    try:
        raw = Path(f"/proc/{server_pid}/environ").read_bytes()
    except OSError:
        return environment
    for entry in raw.split(b"\0"):
        name, _, value = entry.decode(errors="replace").partition("=")
        environment[name] = value
    return environment


def temp_directories(settings: dict[str, Any]) -> list[Path]:
    """The folders the server sorts into, from the recorded TempDirectories."""
    value = str(settings.get("TempDirectories") or "")
    return [Path(part.strip()) for part in value.split(";") if part.strip()]


# --- the sort files ------------------------------------------------------------------------

SORT_FILE_PREFIX = "fb_sort_"
WATCH_INTERVAL_S = 0.002


class SortFiles:
    """The sort files the server writes while a statement runs, watched from outside.

    Firebird keeps a sort's runs in memory up to TempCacheLimit and writes the rest to
    ``fb_sort_*`` files in TempDirectories, each unlinked as soon as it is made: no folder
    listing shows them, but the server's open files in /proc/<pid>/fd do, with their
    size. A file grows as the sort writes it, so its largest size seen is the bytes it
    wrote. Needs the server on this machine and /proc/<pid>/fd readable (root, or the
    server's own user): :attr:`readable` says whether they are.

    Linux counts no reads per file, and Firebird counts none of its sort files: what
    the server read meanwhile is its process's ``rchar`` (/proc/<pid>/io), which
    :func:`sort_files_read` takes the database pages it read from.
    """

    def __init__(self, server_pid: int | None, directories: list[Path]) -> None:
        self.fd_dir = Path(f"/proc/{server_pid}/fd") if server_pid else None
        self.io_file = Path(f"/proc/{server_pid}/io") if server_pid else None
        self.directories = [str(path).rstrip("/") + "/" for path in directories]
        self.sizes: dict[str, int] = {}
        self.server_read: int | None = None  # bytes the server process read meanwhile
        self._read_before: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def readable(self) -> bool:
        return self.fd_dir is not None and os.access(self.fd_dir, os.R_OK | os.X_OK)

    def __enter__(self) -> SortFiles:
        self.sizes = {}
        self.server_read, self._read_before = None, self._bytes_read()
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._look()  # what was written after the last look
        after = self._bytes_read()
        if self._read_before is not None and after is not None:
            self.server_read = after - self._read_before

    def _bytes_read(self) -> int | None:
        """The server process's rchar: every byte its read() and pread() calls returned,
        from files of any kind (its sockets are read with recv(), which this leaves out)."""
        if self.io_file is None:
            return None
        try:
            text = self.io_file.read_text()
        except OSError:
            return None
        match = re.search(r"^rchar:\s*(\d+)", text, re.MULTILINE)
        return int(match.group(1)) if match else None

    @property
    def written(self) -> int:
        return sum(self.sizes.values())

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._look()
            time.sleep(WATCH_INTERVAL_S)

    def _look(self) -> None:
        if self.fd_dir is None:
            return
        try:
            descriptors = os.listdir(self.fd_dir)
        except OSError:
            return
        for descriptor in descriptors:
            link = self.fd_dir / descriptor
            try:
                target = os.readlink(link)
                if not self._is_sort_file(target):
                    continue
                size = os.stat(link).st_size
            except OSError:  # closed between the listing and the look
                continue
            if size > self.sizes.get(target, -1):
                self.sizes[target] = size

    def _is_sort_file(self, target: str) -> bool:
        name = target.removesuffix(" (deleted)")
        if not os.path.basename(name).startswith(SORT_FILE_PREFIX):
            return False
        return not self.directories or any(name.startswith(d) for d in self.directories)


def page_reads(conn: Connection) -> tuple[int, int]:
    """The database's page reads since it was opened (MON$IO_STATS, every attachment
    to this file) and its page size."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT i.mon$page_reads, d.mon$page_size FROM mon$database d"
            " JOIN mon$io_stats i ON i.mon$stat_id = d.mon$stat_id"
        )
        reads, page_size = cur.fetchone()
    return int(reads), int(page_size)


def sort_files_read(server_read: int | None, pages_read: int, page_size: int) -> int | None:
    """The bytes a sort read back from its files: what the server process read while it
    ran, less the database pages it read (each a pread of one page)."""
    if server_read is None:
        return None
    return max(0, server_read - pages_read * page_size)
