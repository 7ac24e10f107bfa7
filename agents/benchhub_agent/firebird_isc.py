"""A load's transactions on Firebird through the client library's ISC API, few calls each.

firebird-driver wraps each call of the client library in Python (about 700 Python calls
for select-update's SELECT, UPDATE and COMMIT), which cost the agent more CPU than the
server spends on them. A :class:`Session` is an attachment of its own through
libfbclient's documented ISC functions (ibase.h: ``isc_attach_database``,
``isc_start_multiple``, ``isc_dsql_prepare``, ``isc_dsql_execute2``,
``isc_commit_transaction``), called through ctypes with every argument made once: each
statement is prepared once, with XSQLDA descriptors pointing into a buffer of its own,
so that an execute is its values packed into that buffer by one ``struct`` call and one
call of the library.

The round trips are those of the other clients: start, one per statement, commit. A
query that returns one row (a SELECT by primary key, an EXECUTE PROCEDURE) is run as a
singleton execute: the row comes back with the execute. Errors are raised as
firebird-driver's ``DatabaseError``, with the server's SQLSTATE, as the rest of the
agent's Firebird code raises them. A session is not shared between threads.

A load whose values are all integers can bind them as C does (``prepare(sql,
integers=…)``): every parameter and column a 32-bit integer in a slot of one array that
statements share, and its loop calls the library itself (``begin_call``, ``Statement.run``,
``commit_call``): select-update's transaction is then four library calls, two integers
written and one read, as firebird_floor.c's.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import re
import struct
import threading
from collections.abc import Sequence
from decimal import Decimal
from functools import partial
from typing import Any

from . import firebird_db
from .benchmarks import _firebird as fb
from .target import Target

# XSQLVAR data types (the null flag is the low bit) and what the library calls them.
_VARYING, _TEXT, _DOUBLE, _LONG, _SHORT, _INT64 = 448, 452, 480, 496, 500, 580
_INTEGERS = {_SHORT: "h", _LONG: "i", _INT64: "q"}
_DIALECT = 3
_DROP = 2  # DSQL_drop
STREAM_EOF = 335544374  # isc_stream_eof: a singleton query found no row
# ibase.h's parameter blocks: the attachment's user, password and character set; a
# transaction READ COMMITTED (record version) that waits for locks, as firebird_db's.
# Written out: firebird-driver's builder loads the library's interfaces on first use,
# unguarded, and the threads of a load starting at once found them half loaded.
_DPB_VERSION, _DPB_USER, _DPB_PASSWORD, _DPB_CHARSET = 1, 28, 29, 48
# isc_tpb_version3, isc_tpb_write, isc_tpb_read_committed, isc_tpb_rec_version, isc_tpb_wait
TPB = bytes([3, 9, 15, 17, 6])
# Status vector arguments: the words each takes after its tag.
_ARG_END, _ARG_GDS, _ARG_CSTRING = 0, 1, 3


class _Var(ctypes.Structure):
    _fields_ = [
        ("sqltype", ctypes.c_short),
        ("sqlscale", ctypes.c_short),
        ("sqlsubtype", ctypes.c_short),
        ("sqllen", ctypes.c_short),
        ("sqldata", ctypes.c_void_p),
        ("sqlind", ctypes.c_void_p),
        ("sqlname_length", ctypes.c_short),
        ("sqlname", ctypes.c_char * 32),
        ("relname_length", ctypes.c_short),
        ("relname", ctypes.c_char * 32),
        ("ownname_length", ctypes.c_short),
        ("ownname", ctypes.c_char * 32),
        ("aliasname_length", ctypes.c_short),
        ("aliasname", ctypes.c_char * 32),
    ]


def _sqlda(fields: int) -> Any:
    class XSQLDA(ctypes.Structure):
        _fields_ = [
            ("version", ctypes.c_short),
            ("sqldaid", ctypes.c_char * 8),
            ("sqldabc", ctypes.c_int),
            ("sqln", ctypes.c_short),
            ("sqld", ctypes.c_short),
            ("sqlvar", _Var * max(fields, 1)),
        ]

    area = XSQLDA()
    area.version, area.sqln = 1, fields  # SQLDA_VERSION1
    return area


class _TEB(ctypes.Structure):
    """isc_start_multiple's transaction existence block: one database, its TPB."""

    _fields_ = [
        ("database", ctypes.c_void_p),
        ("tpb_length", ctypes.c_int),
        ("tpb", ctypes.c_char_p),
    ]


DRIVER = "libfbclient (ISC API)"  # what the document names the load's driver
_library: Any = None
_LOADING = threading.Lock()


def library() -> Any:
    """libfbclient, its functions returning the status (ISC_STATUS, a word)."""
    global _library
    with _LOADING:
        if _library is not None:
            return _library
        name = ctypes.util.find_library("fbclient") or "libfbclient.so.2"
        try:
            found = ctypes.CDLL(name)
        except OSError as exc:
            raise firebird_db.client_library_missing(exc) from exc
        for function in (
            "isc_attach_database", "isc_detach_database", "isc_start_multiple",
            "isc_commit_transaction", "isc_rollback_transaction", "isc_dsql_allocate_statement",
            "isc_dsql_prepare", "isc_dsql_describe", "isc_dsql_describe_bind",
            "isc_dsql_execute2", "isc_dsql_free_statement",
        ):  # fmt: skip
            getattr(found, function).restype = ctypes.c_ssize_t
        found.isc_sqlcode.restype = ctypes.c_int
        _library = found
    return _library


def client_version() -> str:
    """The client library's Firebird version, e.g. 3.0.11.33637, from
    ``isc_get_client_version``'s "LI-V6.3.11.33637 Firebird 3.0" (6.3: InterBase's)."""
    text = ctypes.create_string_buffer(256)
    library().isc_get_client_version(text)
    found = re.search(rb"V\d+\.\d+\.(\d+\.\d+) Firebird (\d+\.\d+)", text.value)
    if not found:
        return text.value.decode(errors="replace")
    return f"{found.group(2).decode()}.{found.group(1).decode()}"


class Session:
    """One attachment and its open transaction, if any."""

    def __init__(self, target: Target) -> None:
        lib = library()
        self.errors = firebird_db.module()  # firebird-driver: the exceptions raised
        database = fb.FirebirdDatabase.from_target(target)
        self.status = (ctypes.c_ssize_t * 20)()
        # Passed by reference: an array argument costs ctypes a new object at each call.
        status = ctypes.byref(self.status)
        self.database = ctypes.c_uint(0)
        self.transaction = ctypes.c_uint(0)
        self.closed = False
        self.open = False  # a transaction is open
        dpb = bytes([_DPB_VERSION])
        for tag, value in (
            (_DPB_USER, database.user),
            (_DPB_PASSWORD, database.password),
            (_DPB_CHARSET, "UTF8"),
        ):
            data = value.encode()
            dpb += bytes([tag, len(data)]) + data
        address = database.tcp().encode()
        self._check(
            lib.isc_attach_database(
                status, len(address), address, ctypes.byref(self.database), len(dpb), dpb
            )
        )
        self.tpb = TPB
        self._teb = _TEB(ctypes.addressof(self.database), len(self.tpb), self.tpb)
        # Each call with its arguments, made once. The library's calls alone, for a load's
        # own loop: 0, or not and the error in the status vector (error() reads it).
        self._transaction_ref = ctypes.byref(self.transaction)
        self.begin_call = partial(
            lib.isc_start_multiple, status, self._transaction_ref, 1, ctypes.byref(self._teb)
        )
        self.commit_call = partial(lib.isc_commit_transaction, status, self._transaction_ref)
        self._rollback = partial(lib.isc_rollback_transaction, status, self._transaction_ref)
        self.statements: list[Statement] = []

    def call_addresses(self) -> tuple[int, ...]:
        """For a loop in C (benchmarks/_firebird_loop.c): the addresses of the library's
        isc_start_multiple, isc_dsql_execute2 and isc_commit_transaction, then of this
        session's status vector, transaction handle and transaction existence block."""
        lib = library()
        return (
            *(
                _address(function)
                for function in (
                    lib.isc_start_multiple,
                    lib.isc_dsql_execute2,
                    lib.isc_commit_transaction,
                )
            ),
            ctypes.addressof(self.status),
            ctypes.addressof(self.transaction),
            ctypes.addressof(self._teb),
        )

    def prepare(self, sql: str, integers: Integers | None = None) -> Statement:
        """A statement prepared once; with ``integers`` (the array, the slots of the
        parameters, those of the row's columns), its values are bound there as C's ints."""
        began = not self.open
        if began:
            self.begin()
        statement = Statement(self, sql, integers)
        if began:
            self.commit()
        self.statements.append(statement)
        return statement

    def begin(self) -> None:
        if self.begin_call():
            self._raise()
        self.open = True

    def commit(self) -> None:
        """Commit the open transaction, if there is one; one that fails stays open, to
        be rolled back."""
        if self.open:
            if self.commit_call():
                self._raise()
            self.open = False

    def rollback(self) -> None:
        """Roll back the open transaction, if there is one: begun by begin() or by a
        load's own begin_call (the library's handle says)."""
        self.open = False
        if self.transaction.value:
            self._check(self._rollback())

    def close(self) -> None:
        """Free the statements, roll back, detach; a connection already gone is closed
        enough."""
        if self.closed:
            return
        lib = library()
        with contextlib.suppress(self.errors.DatabaseError):
            for statement in self.statements:
                self._check(lib.isc_dsql_free_statement(self.status, statement.handle_ref, _DROP))
            self.rollback()
        self.closed = True
        with contextlib.suppress(self.errors.DatabaseError):
            self._check(lib.isc_detach_database(self.status, ctypes.byref(self.database)))

    def _check(self, result: int) -> None:
        if result:
            self._raise()

    def _raise(self) -> None:
        raise self.error()

    def error(self) -> Any:
        """The error the last call left in the status vector, as firebird-driver's."""
        lib = library()
        codes, index, status = [], 0, self.status
        while status[index] != _ARG_END and index < len(status) - 1:
            tag = status[index]
            if tag == _ARG_GDS:
                codes.append(status[index + 1])
            index += 3 if tag == _ARG_CSTRING else 2
        state = ctypes.create_string_buffer(6)
        lib.fb_sqlstate(state, status)
        sqlcode = lib.isc_sqlcode(status)
        lines, text = [], ctypes.create_string_buffer(1024)
        vector = ctypes.pointer(ctypes.cast(status, ctypes.POINTER(ctypes.c_ssize_t)))
        while lib.fb_interpret(text, len(text), vector) > 0:
            lines.append(text.value.decode(errors="replace"))
        return self.errors.DatabaseError(
            "\n".join(lines) or f"Firebird error {codes}",
            sqlstate=state.value.decode(),
            gds_codes=tuple(codes),
            sqlcode=sqlcode,
        )


def _address(function: Any) -> int:
    return ctypes.cast(function, ctypes.c_void_p).value or 0


class Unsupported(TypeError):
    """A statement whose parameters or columns this module does not pack."""


class _Message:
    """One XSQLDA and the buffer its fields point into: all values first, each at its
    alignment, then the null indicators, so that a message of integers without NULLs is
    packed and read by one ``struct`` call."""

    def __init__(self, area: Any) -> None:
        self.area = area
        fields = [area.sqlvar[index] for index in range(area.sqld)]
        formats, kinds, offset = [], [], 0
        for field in fields:
            kind = field.sqltype & ~1
            if kind in _INTEGERS:
                code = _INTEGERS[kind]
                size = struct.calcsize(code)
                kinds.append((code, field.sqlscale))
            elif kind == _VARYING:
                code, size = "H", 2 + field.sqllen  # a length, then the bytes
                kinds.append((str, field.sqllen))
            else:
                raise Unsupported(f"Firebird type {kind}: not packed here")
            offset += -offset % struct.calcsize(code)
            formats.append((offset, code, size))
            offset += size
        offset += -offset % 2
        self.nulls_at = offset
        self.buffer = ctypes.create_string_buffer(max(offset + 2 * len(fields), 1))
        base = ctypes.addressof(self.buffer)
        for index, (field, (at, _code, _size)) in enumerate(zip(fields, formats, strict=True)):
            field.sqltype |= 1  # every field with its null indicator
            field.sqldata = base + at
            field.sqlind = base + offset + 2 * index
        self.kinds = kinds
        self.offsets = [at for at, _code, _size in formats]
        # The fast path: integers of scale 0 only, laid out as one struct.
        plain = all(code is not str and not scale for code, scale in kinds)
        layout = "<" + "".join(
            f"{'x' * (at - end)}{code}"
            for (at, code, _size), end in zip(
                formats, [0] + [at + size for at, _code, size in formats], strict=False
            )
        )
        self.plain = struct.Struct(layout) if plain else None
        self.nulls = struct.Struct(f"<{len(fields)}h")
        self.no_nulls = bytes(2 * len(fields))
        self.has_nulls = False

    def pack(self, values: tuple) -> None:
        buffer = self.buffer
        if self.has_nulls:
            self.buffer[self.nulls_at : self.nulls_at + len(self.no_nulls)] = self.no_nulls
            self.has_nulls = False
        if self.plain is not None and None not in values:
            self.plain.pack_into(buffer, 0, *values)
            return
        if len(values) != len(self.kinds):
            raise ValueError(f"{len(values)} values for {len(self.kinds)} parameters")
        for index, ((code, scale), at, value) in enumerate(
            zip(self.kinds, self.offsets, values, strict=True)
        ):
            if value is None:
                struct.pack_into("<h", buffer, self.nulls_at + 2 * index, -1)
                self.has_nulls = True
            elif code is str:
                data = value.encode()
                if len(data) > scale:
                    raise ValueError(f"{value!r}: longer than the parameter's {scale} bytes")
                struct.pack_into(f"<H{len(data)}s", buffer, at, len(data), data)
            elif scale:
                struct.pack_into("<" + code, buffer, at, int(Decimal(value).scaleb(-scale)))
            else:
                struct.pack_into("<" + code, buffer, at, value)

    def unpack(self) -> tuple:
        buffer = self.buffer
        nulls = self.nulls.unpack_from(buffer, self.nulls_at)
        if self.plain is not None and not any(nulls):
            return self.plain.unpack_from(buffer)
        row: list[Any] = []
        for (code, scale), at, null in zip(self.kinds, self.offsets, nulls, strict=True):
            if null:
                row.append(None)
            elif code is str:
                (length,) = struct.unpack_from("<H", buffer, at)
                row.append(bytes(buffer[at + 2 : at + 2 + length]).decode())
            else:
                (value,) = struct.unpack_from("<" + code, buffer, at)
                row.append(Decimal(value).scaleb(scale) if scale else value)
        return tuple(row)


# An array of C ints (ctypes.c_int * n), the slots of a statement's parameters in it, those
# of its row's columns.
Integers = tuple[ctypes.Array, Sequence[int], Sequence[int]]


class _Integers:
    """A message whose fields are C ints in slots of an array that statements share, without
    null indicators (firebird_floor.c's binding; the server converts to the columns'
    types): a parameter is one item written, a column one item read. Only for columns that
    cannot be NULL: without an indicator the library writes a NULL as 0."""

    def __init__(self, area: Any, values: ctypes.Array, slots: Sequence[int]) -> None:
        if area.sqld != len(slots) or ctypes.sizeof(values) != len(values) * 4:
            raise Unsupported(f"{area.sqld} fields for {len(slots)} slots of C ints")
        base = ctypes.addressof(values)
        for index, slot in enumerate(slots):
            if not 0 <= slot < len(values):
                raise IndexError(f"slot {slot} outside {len(values)} values")
            field = area.sqlvar[index]
            field.sqltype, field.sqlscale, field.sqllen = _LONG, 0, 4
            field.sqldata, field.sqlind = base + 4 * slot, None
        self.view = memoryview(values).cast("B").cast("i")  # item access without ctypes
        self.slots = tuple(slots)

    def pack(self, values: tuple) -> None:
        view = self.view
        for slot, value in zip(self.slots, values, strict=True):
            view[slot] = value

    def unpack(self) -> tuple:
        view = self.view
        return tuple(view[slot] for slot in self.slots)


class Statement:
    """A statement prepared once in a session; its input and output messages."""

    def __init__(self, session: Session, sql: str, integers: Integers | None = None) -> None:
        lib = library()
        self.session = session
        self.handle = ctypes.c_uint(0)
        self.handle_ref = ctypes.byref(self.handle)
        status, check = ctypes.byref(session.status), session._check
        check(
            lib.isc_dsql_allocate_statement(status, ctypes.byref(session.database), self.handle_ref)
        )
        text = sql.encode()
        outputs = _sqlda(1)
        transaction = session._transaction_ref
        check(lib.isc_dsql_prepare(
            status, transaction, self.handle_ref, len(text), text, _DIALECT, ctypes.byref(outputs)
        ))  # fmt: skip
        if outputs.sqld > outputs.sqln:
            outputs = _sqlda(outputs.sqld)
            check(lib.isc_dsql_describe(status, self.handle_ref, _DIALECT, ctypes.byref(outputs)))
        inputs = _sqlda(1)
        check(lib.isc_dsql_describe_bind(status, self.handle_ref, _DIALECT, ctypes.byref(inputs)))
        if inputs.sqld > inputs.sqln:
            inputs = _sqlda(inputs.sqld)
            check(
                lib.isc_dsql_describe_bind(status, self.handle_ref, _DIALECT, ctypes.byref(inputs))
            )
        self.inputs: _Message | _Integers
        self.outputs: _Message | _Integers | None
        if integers is None:
            self.inputs = _Message(inputs)
            self.outputs = _Message(outputs) if outputs.sqld else None
        else:
            values, parameters, columns = integers
            self.inputs = _Integers(inputs, values, parameters)
            self.outputs = _Integers(outputs, values, columns) if outputs.sqld else None
        self.areas = (inputs if inputs.sqld else None, outputs if outputs.sqld else None)
        execute = lib.isc_dsql_execute2
        arguments = (
            status, session._transaction_ref, self.handle_ref, _DIALECT,
            ctypes.byref(inputs) if inputs.sqld else None,
            ctypes.byref(outputs) if outputs.sqld else None,
        )  # fmt: skip
        # The library's call alone, for a load's own loop: 0, or not and the error in the
        # status vector (isc_stream_eof: a singleton query found no row).
        self.run = partial(execute, *arguments)

    def addresses(self) -> tuple[int, int, int]:
        """For a loop in C: the addresses of this statement's handle, its parameters'
        descriptor and its row's (0 where it has none), as isc_dsql_execute2 takes them."""
        return (
            ctypes.addressof(self.handle),
            *(ctypes.addressof(area) if area is not None else 0 for area in self.areas),
        )

    def execute(self, parameters: tuple = ()) -> tuple | None:
        """Run the statement in the session's transaction (begun when none is open); the
        row a singleton query returns, or None (no row, or a statement without one)."""
        session = self.session
        if not session.open:
            session.begin()
        self.inputs.pack(parameters)
        if self.run():
            if session.status[1] == STREAM_EOF:
                return None
            session._raise()
        return self.outputs.unpack() if self.outputs is not None else None
