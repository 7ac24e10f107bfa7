"""PostgreSQL's answers as a scripted server sends them, and the statements it reads, for
the tests of the loops that speak the protocol on the socket (test_pg_wire.py,
test_tpcb_wire.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from benchhub_agent.benchmarks import _pg_wire as wire


def bind(data: bytes) -> tuple[bytes, tuple[bytes, ...]]:
    """The statement and parameters of the Bind ``data`` begins with."""
    assert data[:1] == b"B"
    body = data[5 : 1 + int.from_bytes(data[1:5], "big")]
    portal_end = body.index(b"\x00")
    name_end = body.index(b"\x00", portal_end + 1)
    name = body[portal_end + 1 : name_end]
    position = name_end + 1 + 2  # no format codes
    count = int.from_bytes(body[position : position + 2], "big")
    position += 2
    parameters = []
    for _ in range(count):
        length = int.from_bytes(body[position : position + 4], "big")
        parameters.append(body[position + 4 : position + 4 + length])
        position += 4 + length
    assert body[position:] == b"\x00\x01\x00\x00"  # one result format: text
    return name, tuple(parameters)


ROW_DESCRIPTION = wire.message(
    b"T",
    b"\x00\x01c2\x00" + b"\x00\x00\x40\x00\x00\x02\x00\x00\x00\x17\x00\x04\xff\xff\xff\xff\x00\x00",
)


def select_answer(*values: bytes) -> bytes:
    rows = b"".join(wire.message(b"D", b"\x00\x01" + wire.parameter(value)) for value in values)
    return wire.message(b"2", b"") + ROW_DESCRIPTION + rows + wire.rows_tail(len(values))


def error(sqlstate: bytes, text: bytes = b"failed", severity: bytes = b"ERROR") -> bytes:
    fields = b"S" + severity + b"\x00C" + sqlstate + b"\x00M" + text + b"\x00\x00"
    return wire.message(b"E", fields)


def failed(sqlstate: bytes) -> bytes:
    """A statement's answer when it fails: its error, then ReadyForQuery in a failed
    transaction."""
    return wire.message(b"2", b"") + error(sqlstate) + wire.message(b"Z", b"E")


NOTICE = wire.message(b"N", b"SWARNING\x00C01000\x00Mtake note\x00\x00")


class ScriptedServer:
    """The server's end of a socket pair: reads each statement the flow sends and answers
    it as ``script`` says (statement name → answers for its next uses; None, or none left:
    the healthy answer, :meth:`healthy`)."""

    def __init__(self, script: dict[bytes, list[bytes | None]] | None = None) -> None:
        self.end, self.client = socket.socketpair()
        self.end.settimeout(5)  # a flow that sends nothing fails the test, not hangs it
        self.client.setblocking(False)  # as libpq leaves its socket
        self.script = script or {}
        self.sent: list[tuple[bytes, tuple[bytes, ...]]] = []

    def answer_next(self) -> bytes:
        data = self.end.recv(4096)
        assert data.endswith(wire.DESCRIBE_EXECUTE_SYNC)
        name, parameters = bind(data)
        self.sent.append((name, parameters))
        planned = self.script.get(name)
        answer = planned.pop(0) if planned else None
        return self.healthy(name, parameters) if answer is None else answer

    def healthy(self, name: bytes, parameters: tuple[bytes, ...]) -> bytes:
        raise NotImplementedError


def send_answer(end: socket.socket, steps: Iterator[None], answer: bytes, split: bool) -> None:
    """Send ``answer`` from the server's ``end`` and resume the flow's ``steps``, as its loop
    does once the socket is readable; ``split``: in two parts, the flow resumed after each
    (it reads the first and waits for the rest)."""
    if split:
        end.sendall(answer[:7])
        next(steps)
        answer = answer[7:]
    end.sendall(answer)
    next(steps)


def ended_by_the_server(server: ScriptedServer, steps: Iterator[None], answered: int) -> None:
    """``server`` answers ``answered`` statements, then the next with what its script says
    (a FATAL error), and closes the connection: the flow stops with the server's reason."""
    next(steps)
    for _ in range(answered):
        send_answer(server.end, steps, server.answer_next(), split=False)
    server.end.sendall(server.answer_next())
    server.end.close()
    with pytest.raises(ConnectionError, match="terminating connection"):
        next(steps)
        next(steps)
