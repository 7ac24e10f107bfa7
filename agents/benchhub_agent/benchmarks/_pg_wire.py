"""PostgreSQL's extended protocol on a connection libpq opened: the event loop's round trips
without libpq's parsing or psycopg's result objects.

With several connections per loop the agent's client CPU per transaction decides its
throughput where client and server share the cores. Through libpq each round trip was
four calls into psycopg (send, consume_input, get_result twice), a PGresult allocated,
parsed and freed and a psycopg object made for it: select-update's loop went from 36.4k
to 30.5k instructions a transaction at two connections without them, tpcb's from 64k
to 54k (docs/performance.md). Here a statement is one ``os.write`` of the bytes libpq would
send for ``PQsendQueryPrepared`` (Bind, Describe portal, Execute, Sync: the server does
the same work as for pgbench -M prepared), and its answer one ``os.read``, compared
with the bytes a success always is (``answer(...)``). Anything else (an error, a notice,
an answer split in transit, a message of the server's own) goes through :func:`parse`,
a plain reading of the protocol, which waits for the rest of a split answer.

Only where the bytes on the socket are the protocol's: no TLS or GSS encryption, and a
POSIX file descriptor (:func:`usable_fd`). libpq opened the connection and prepared the
statements; it is idle (every answer read) whenever these functions are used, and gets
the connection back idle.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

READ_SIZE = 400  # an answer here is under 200 bytes; a longer one is read in parts
CLOSED = "connection lost: the server closed it"

_INT32 = struct.Struct("!i")
_TUPLES_OK = 2  # libpq's PGRES_TUPLES_OK (psycopg is imported where the loops run)


def message(kind: bytes, body: bytes) -> bytes:
    return kind + _INT32.pack(len(body) + 4) + body


# What libpq's PQsendQueryPrepared sends after the Bind: Describe the unnamed portal,
# Execute it without a row limit, Sync.
DESCRIBE_EXECUTE_SYNC = (
    message(b"D", b"P\x00") + message(b"E", b"\x00\x00\x00\x00\x00") + message(b"S", b"")
)


def parameter(value: bytes) -> bytes:
    """A text parameter as Bind carries it: its length, then its bytes."""
    return _INT32.pack(len(value)) + value


def bind_head(name: bytes, parameters_length: int, count: int) -> bytes:
    """The start of a Bind of statement ``name`` whose ``count`` parameters take
    ``parameters_length`` bytes (lengths included): what precedes the parameters."""
    # Unnamed portal, the statement, no format codes (all text), the parameter count;
    # after the parameters one result format code, text (BIND_TAIL).
    body_length = 1 + len(name) + 1 + 2 + 2 + parameters_length + 4
    head = b"B" + _INT32.pack(body_length + 4) + b"\x00" + name + b"\x00\x00\x00"
    return head + struct.pack("!h", count)


BIND_TAIL = b"\x00\x01\x00\x00" + DESCRIBE_EXECUTE_SYNC


def execute(name: bytes, parameters: tuple[bytes, ...] = ()) -> bytes:
    """The bytes libpq sends for ``PQsendQueryPrepared(name, parameters)`` with text
    parameters and text results (test_pg_wire has libpq send one to a listener)."""
    encoded = b"".join(parameter(value) for value in parameters)
    return bind_head(name, len(encoded), len(parameters)) + encoded + BIND_TAIL


def answer(tag: bytes, status: bytes = b"T") -> bytes:
    """A statement's successful answer without rows: BindComplete, NoData (Describe of a
    portal that returns none), CommandComplete ``tag``, ReadyForQuery ``status``."""
    return (
        message(b"2", b"")
        + message(b"n", b"")
        + message(b"C", tag + b"\x00")
        + message(b"Z", status)
    )


def rows_tail(count: int) -> bytes:
    """What follows a SELECT's rows: CommandComplete, ReadyForQuery in a transaction."""
    return message(b"C", b"SELECT %d\x00" % count) + message(b"Z", b"T")


# A DataRow of one column with a value of n bytes starts with these 7 bytes (kind, length,
# one column); n < 100 covers every int and bigint as text.
ONE_COLUMN_ROW = {b"D" + struct.pack("!ih", 10 + n, 1): 11 + n for n in range(100)}

# The states of a statement's answer, as psycopg's pq.ExecStatus numbers them.
COMMAND_OK, TUPLES_OK, FATAL_ERROR = 1, 2, 7
ASYNC = frozenset(b"NSA")  # notice, parameter status, notification: at any time, skipped


@dataclass
class Answer:
    """One statement's whole answer, up to and with its ReadyForQuery."""

    status: int = COMMAND_OK
    rows: list[list[bytes | None]] = field(default_factory=list)
    head: bytes = b""  # a SELECT's BindComplete and RowDescription, as sent before its rows
    fields: dict[str, str] = field(default_factory=dict)  # an error's, by field code

    @property
    def sqlstate(self) -> str:
        return self.fields.get("C", "")

    def error_message(self) -> str:
        return f"{self.fields.get('S', 'ERROR')}:  {self.fields.get('M', '')}"


def parse(data: bytes) -> tuple[Answer, bytes] | None:
    """The answer ``data`` begins with and the bytes after it, or None while it is not
    whole (no ReadyForQuery yet). Messages the server sends on its own are skipped."""
    result = Answer()
    position, end = 0, len(data)
    while position + 5 <= end:
        kind = data[position]
        body_end = position + 1 + int.from_bytes(data[position + 1 : position + 5], "big")
        if body_end > end:
            return None
        body = data[position + 5 : body_end]
        if kind == 0x44:  # D: DataRow
            result.status = TUPLES_OK
            result.rows.append(_row(body))
        elif kind == 0x54:  # T: RowDescription, rows (perhaps none) follow
            result.status = TUPLES_OK
            # What a SELECT's answer starts with, whatever came before it on the socket.
            result.head = message(b"2", b"") + data[position:body_end]
        elif kind == 0x45:  # E: ErrorResponse
            result.status = FATAL_ERROR
            result.fields = _fields(body)
        elif kind == 0x5A:  # Z: ReadyForQuery, the answer is whole
            return result, data[body_end:]
        elif kind not in b"2nC1I" and kind not in ASYNC:
            raise ConnectionError(f"unexpected message {chr(kind)!r} from the server")
        position = body_end
    return None


def _row(body: bytes) -> list[bytes | None]:
    values: list[bytes | None] = []
    position = 2
    for _ in range(int.from_bytes(body[:2], "big")):
        length = int.from_bytes(body[position : position + 4], "big", signed=True)
        position += 4
        if length < 0:
            values.append(None)
            continue
        values.append(body[position : position + length])
        position += length
    return values


def _fields(body: bytes) -> dict[str, str]:
    fields = {}
    for item in body.split(b"\x00"):
        if item:
            fields[chr(item[0])] = item[1:].decode(errors="replace")
    return fields


class Wire:
    """One connection's socket, read and written directly, and what was read past the
    last answer (a message the server sent on its own, split by the read)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.carry = b""

    def rest(self, data: bytes) -> Generator[None, None, Answer]:
        """The answer ``data`` (just read) begins: the slow path, when ``data`` is not
        the success expected. Yields (the loop resumes it once the socket is readable
        again) while the answer is not whole; raises ConnectionError if the server
        closed the connection, with its reason when it gave one."""
        if not data:
            raise ConnectionError(_last_error(self.carry) or CLOSED)
        data = self.carry + data
        while (parsed := parse(data)) is None:
            yield
            more = os.read(self.fd, READ_SIZE)
            if not more:
                raise ConnectionError(_last_error(data) or CLOSED)
            data += more
        result, self.carry = parsed
        return result


def _last_error(data: bytes) -> str | None:
    """The message of the last whole ErrorResponse in ``data`` (a FATAL error the server
    sent before it closed the connection), if there is one."""
    reason, position = None, 0
    while position + 5 <= len(data):
        body_end = position + 1 + int.from_bytes(data[position + 1 : position + 5], "big")
        if body_end > len(data):
            break
        if data[position] == 0x45:  # E: ErrorResponse
            fields = _fields(data[position + 5 : body_end])
            reason = f"{fields.get('S', 'FATAL')}:  {fields.get('M', '')} ({fields.get('C', '')})"
        position = body_end
    return reason


def usable_fd(pgconn: Any) -> int | None:
    """The socket of ``pgconn`` if the protocol can be spoken on it directly: POSIX, no
    TLS, no GSSAPI, no GSS encryption (libpq would do either's wrapping); else None
    (libpq's calls)."""
    if os.name != "posix" or getattr(pgconn, "ssl_in_use", True):
        return None
    if getattr(pgconn, "used_gssapi", True) or _gss_encrypted(pgconn):
        return None
    return int(pgconn.socket)


def _gss_encrypted(pgconn: Any) -> bool:
    """Whether the connection is GSS-encrypted, which needs no GSSAPI authentication
    (``hostgssenc … trust``) and which psycopg cannot tell (libpq's ``PQgssEncInUse``
    is not wrapped). libpq tries it only over TCP and when ``gssencmode`` is not
    ``disable`` (its default where it was built without GSS); then the server is asked.
    A server before PostgreSQL 12 has no GSS encryption, nor the view."""
    if pgconn.host.startswith(b"/"):
        return False
    modes = [option.val for option in pgconn.info if option.keyword == b"gssencmode"]
    if modes in ([], [b"disable"]):
        return False
    result = pgconn.exec_(b"SELECT encrypted FROM pg_stat_gssapi WHERE pid = pg_backend_pid()")
    if result.status != _TUPLES_OK:  # an error: a server without the view
        return False
    return result.ntuples == 1 and result.get_value(0, 0) == b"t"
