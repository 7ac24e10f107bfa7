"""A load's transactions on Firebird through the client library's own calls, few and direct.

firebird-driver wraps every call of the client library (libfbclient's OO API) in
Python: an execute builds new parameter metadata, packs each value through its
descriptors and checks the status through enums, about 700 Python calls for
select-update's SELECT, UPDATE and COMMIT, which cost the agent more CPU than the server
spends on them. A :class:`Session` makes the same calls of the library on the same
statements, prepared once by firebird-driver, with each statement's parameter layout
read once, its values packed with ``struct`` into a buffer kept for it, and the
library's functions looked up once.

A query that returns one row (a SELECT by primary key, an EXECUTE PROCEDURE) is run as
the library's singleton execute: the row comes back with the execute, one round trip,
as on the other engines, where firebird-driver opens a cursor and fetches from it.
Each transaction is started, run and committed on its own: nothing is batched.
"""

from __future__ import annotations

import struct
from ctypes import create_string_buffer
from decimal import Decimal
from typing import Any

from . import firebird_db

# SQL data types of the parameters a load sends (XSQLVAR types without the null bit).
_TEXT, _VARYING, _SHORT, _LONG, _INT64, _DOUBLE = 452, 448, 500, 496, 580, 480
_BOOLEAN = 32764
_ERRORS = 2  # IStatus::STATE_ERRORS
_NO_ROW = 335544374  # isc_stream_eof: a singleton query's execute found no row
_NULL = struct.Struct("<h")
_LENGTH = struct.Struct("<H")  # a VARCHAR's length, before its bytes
_INTEGERS = {_SHORT: struct.Struct("<h"), _LONG: struct.Struct("<i"), _INT64: struct.Struct("<q")}


class Unsupported(TypeError):
    """A statement whose parameters or columns this module does not pack."""


class Session:
    """One firebird-driver connection's transactions, through direct library calls.

    Not shared between threads: the session has its own status vector."""

    def __init__(self, raw: Any) -> None:
        from firebird.driver import interfaces

        self.raw = raw  # keeps the attachment, and frees it at close
        self.interfaces = interfaces
        self.status = interfaces._master.get_status()
        self._status = self.status._as_parameter_
        self._state = self.status.vtable.getState
        attachment = raw._att
        self._attachment = attachment._as_parameter_
        self._start = attachment.vtable.startTransaction
        self.tpb = firebird_db.transaction_parameters()
        self.transaction: Any = None  # the library's ITransaction, while one is open
        self._commit = self._rollback = None

    def prepare(self, cursor: Any, sql: str) -> Statement:
        return Statement(self, cursor.prepare(sql))

    def begin(self) -> None:
        transaction = self._start(self._attachment, self._status, len(self.tpb), self.tpb)
        self.check()
        if self._commit is None:  # every transaction of the library shares one table
            table = transaction.contents.vtable.contents
            self._commit, self._rollback = table.deprecatedCommit, table.deprecatedRollback
        self.transaction = transaction

    def commit(self) -> None:
        """Commit the open transaction, if there is one (the library releases it on
        success; given no transaction, it would crash the process)."""
        if self.transaction is None:
            return
        self._commit(self.transaction, self._status)
        if self._state(self._status) & _ERRORS:
            self.check()  # raises; the transaction stays open, to be rolled back
        self.transaction = None

    def rollback(self) -> None:
        """Roll back the open transaction, if there is one."""
        if self.transaction is None:
            return
        transaction, self.transaction = self.transaction, None
        self._rollback(transaction, self._status)
        self.check()

    def check(self) -> bool:
        """Raise firebird-driver's DatabaseError for the error the last call left; a
        singleton query that found no row is no error (True)."""
        if not self._state(self._status) & _ERRORS:
            return False
        errors = self.status.get_errors()
        api = self.interfaces.a.api
        state = create_string_buffer(6)
        api.fb_sqlstate(state, errors)
        message = self.interfaces._util.format_status(self.status)
        sqlcode = api.isc_sqlcode(errors)
        codes, index = [], 0
        while errors[index] != 0:
            if errors[index] == 1:  # isc_arg_gds: the code follows
                index += 1
                if errors[index] & 0x14000000 == 0x14000000:
                    codes.append(errors[index])
            index += 1
        self.status.init()
        if codes == [_NO_ROW]:
            return True
        raise self.interfaces.DatabaseError(
            message, sqlstate=state.value.decode(), gds_codes=tuple(codes), sqlcode=sqlcode
        )

    def close(self, cursor: Any, *statements: Statement) -> None:
        self.transaction = None  # rolled back by the close, as firebird-driver's own
        firebird_db.close(self.raw, *(s.prepared for s in statements), cursor)


class Statement:
    """A prepared statement, its input buffer, and how each parameter is packed."""

    def __init__(self, session: Session, prepared: Any) -> None:
        self.session, self.prepared = session, prepared
        statement = prepared._istmt
        self._statement = statement._as_parameter_
        self._execute = statement.vtable.execute
        self.inputs = _layout(prepared._in_meta) if prepared._in_cnt else []
        self._in_meta = prepared._in_meta._as_parameter_ if prepared._in_cnt else None
        self._in = prepared._in_buffer
        self.outputs = _layout(prepared._out_meta) if prepared._out_cnt else []
        self._out_meta = prepared._out_meta._as_parameter_ if prepared._out_cnt else None
        self._out = prepared._out_buffer

    def execute(self, parameters: tuple = ()) -> tuple | None:
        """Run the statement in the session's transaction (begun when none is open); the
        row a singleton query returns, or None (no row, or a statement without one)."""
        session = self.session
        if session.transaction is None:
            session.begin()
        buffer = self._in
        for (kind, offset, null_at, size, scale), value in zip(
            self.inputs, parameters, strict=True
        ):
            if value is None:
                _NULL.pack_into(buffer, null_at, -1)
                continue
            _NULL.pack_into(buffer, null_at, 0)
            if kind is str:
                data = value.encode()
                if len(data) > size:
                    raise ValueError(f"{value!r}: longer than the parameter's {size} bytes")
                struct.pack_into(f"<H{len(data)}s", buffer, offset, len(data), data)
            elif scale:
                kind.pack_into(buffer, offset, int(Decimal(value).scaleb(-scale)))
            else:
                kind.pack_into(buffer, offset, value)
        self._execute(
            self._statement, session._status, session.transaction,
            self._in_meta, buffer, self._out_meta, self._out,
        )  # fmt: skip
        if session.check() or not self.outputs:
            return None
        row = []
        out = self._out
        for kind, offset, null_at, _size, scale in self.outputs:
            if _NULL.unpack_from(out, null_at)[0]:
                row.append(None)
                continue
            if kind is str:
                (length,) = _LENGTH.unpack_from(out, offset)
                row.append(bytes(out[offset + 2 : offset + 2 + length]).decode())
                continue
            value = kind.unpack_from(out, offset)[0]
            row.append(Decimal(value).scaleb(scale) if scale else value)
        return tuple(row)


def _layout(meta: Any) -> list[tuple[Any, int, int, int, int]]:
    """(packer, offset, null offset, length, scale) of each field of a message; VARCHAR's
    packer is ``str``."""
    found = []
    for index in range(meta.get_count()):
        kind = int(meta.get_type(index))
        length = meta.get_length(index)
        if kind == _VARYING:
            packer: Any = str
        elif kind in _INTEGERS:
            packer = _INTEGERS[kind]
        else:
            raise Unsupported(f"Firebird type {kind} of field {index}: not packed here")
        found.append(
            (packer, meta.get_offset(index), meta.get_null_offset(index), length,
             meta.get_scale(index))
        )  # fmt: skip
    return found
