"""The PostgreSQL protocol spoken on the socket (_pg_wire): the bytes libpq would send, and
select-update's loop against a scripted server on a socket pair (what it sends, retries
and counts when answers are split, preceded by a notice, errors, or the connection ends).
The tests against a real server are in test_select_update.py and test_tpcb.py."""

from __future__ import annotations

import os
import random
import select
import socket
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from _pg_protocol import (
    NOTICE,
    ScriptedServer,
    ended_by_the_server,
    error,
    failed,
    select_answer,
    send_answer,
)
from benchhub_agent.benchmarks import _pg_event_loop as loop
from benchhub_agent.benchmarks import _pg_wire as wire
from psycopg import pq


def test_a_statement_is_the_bytes_libpq_sends_for_it():
    # libpq connected to a listener that says yes to everything, then asked to send a
    # prepared statement with two parameters and one without: the bytes it wrote.
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / ".s.PGSQL.5432"
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.listen(1)
        listener.settimeout(5)
        received: list[bytes] = []

        def serve() -> None:
            server, _ = listener.accept()
            server.settimeout(5)
            startup = server.recv(4096)  # length-prefixed: no SSL or GSS request on a socket
            assert int.from_bytes(startup[:4], "big") == len(startup)
            server.sendall(wire.message(b"R", b"\x00\x00\x00\x00") + wire.message(b"Z", b"I"))
            expected = len(wire.execute(b"bh_x", (b"12", b"345")))
            data = b""
            while len(data) < expected:
                data += server.recv(4096)
            received.append(data)
            server.close()

        thread = threading.Thread(target=serve)
        thread.start()
        # Connected step by step: PGconn.connect holds the GIL, and the listener is a thread.
        pgconn = pq.PGconn.connect_start(f"host={directory} user=x dbname=x".encode())
        while (state := pgconn.connect_poll()) not in (
            pq.PollingStatus.OK,
            pq.PollingStatus.FAILED,
        ):
            wait = [pgconn.socket]
            select.select(wait if state == pq.PollingStatus.READING else [], wait, [], 5)
        assert pgconn.status == pq.ConnStatus.OK, pgconn.get_error_message()
        assert wire.usable_fd(pgconn) == pgconn.socket  # a Unix socket: no TLS, no GSS
        pgconn.send_query_prepared(b"bh_x", [b"12", b"345"])
        pgconn.flush()
        # libpq waits for the first answer before it sends again; the bytes are what count.
        pgconn.finish()
        thread.join(5)
        listener.close()
    sent = wire.execute(b"bh_x", (b"12", b"345"))
    assert received[0].startswith(sent)


class Server(ScriptedServer):
    """Answers each statement as PostgreSQL would, or as its script says. Each row's value
    is kept, so the UPDATE must send back the value the SELECT read."""

    def __init__(self, script: dict[bytes, list[bytes | None]] | None = None) -> None:
        super().__init__(script)
        self.values = {b"%d" % key: b"%d" % (key * 10) for key in range(1, 101)}

    def healthy(self, name: bytes, parameters: tuple[bytes, ...]) -> bytes:
        if name == b"bh_select":
            return select_answer(self.values[parameters[0]])
        if name == b"bh_update":
            value, key = parameters
            assert value == self.values[key], "the UPDATE sends the value the SELECT read"
            self.values[key] = b"%d" % (int(value) + 1)
            return wire.answer(b"UPDATE 1")
        tag = {b"bh_begin": b"BEGIN", b"bh_commit": b"COMMIT", b"bh_rollback": b"ROLLBACK"}
        return wire.answer(tag[name], b"T" if name == b"bh_begin" else b"I")


def flow_on(server: Server, quota: int) -> loop.PostgresFlow:
    client = type("Client", (), {})()
    client.pgconn, client.keys = object(), [b"%d" % key for key in range(1, 101)]
    client.ok_status, client.tuples_status = 1, 2
    flow = loop.PostgresFlow(client, quota, (0.0, None), [0], 0, random.Random(3))
    assert flow.fd is None  # no socket of libpq's: given the pair's below
    flow.fd = server.client.fileno()
    flow.wire_statements = loop._wire_statements(tuple(client.keys))
    return flow


def run(server: Server, flow: loop.PostgresFlow, split_every: int = 0) -> loop.PostgresFlow:
    """Answer each statement the flow sends and resume it, as the loop does once its
    socket is readable; with ``split_every`` n, every n-th answer comes in two parts."""
    steps = flow.steps()
    try:
        next(steps)
        answered = 0
        while True:
            answer = server.answer_next()
            answered += 1
            send_answer(server.end, steps, answer, split_every > 0 and answered % split_every == 0)
    except StopIteration:
        return flow


def names(server: Server) -> list[bytes]:
    return [name for name, _ in server.sent]


def test_a_transaction_is_pgbenchs_four_statements_with_the_value_read_sent_back():
    server = Server()
    flow = run(server, flow_on(server, quota=3))
    assert names(server) == [b"bh_begin", b"bh_select", b"bh_update", b"bh_commit"] * 3
    (_, (key,)), (_, update) = server.sent[1], server.sent[2]
    assert update == (b"%d" % (int(key) * 10), key)  # the UPDATE adds the 1 itself
    assert flow.tally.committed == 3 and flow.tally.histogram.count == 3


def test_split_answers_and_messages_of_the_servers_own_change_nothing():
    # Every third answer arrives in two reads; a notice comes before a BEGIN's answer and
    # one is left after a COMMIT's, read with the next answer.
    script = {
        b"bh_begin": [NOTICE + wire.answer(b"BEGIN")],
        b"bh_commit": [wire.answer(b"COMMIT", b"I") + NOTICE],
    }
    server = Server(script)
    flow = run(server, flow_on(server, quota=6), split_every=3)
    assert names(server) == [b"bh_begin", b"bh_select", b"bh_update", b"bh_commit"] * 6
    assert (flow.tally.committed, flow.tally.errors, flow.tally.retries) == (6, 0, 0)
    assert sum(int(v) for v in server.values.values()) == sum(k * 10 for k in range(1, 101)) + 6


def test_a_lock_timeout_is_run_again_on_the_same_key_then_counted_as_an_error():
    server = Server({b"bh_select": [failed(b"55P03")] * loop.MAX_ATTEMPTS})
    flow = run(server, flow_on(server, quota=2))
    attempt = [b"bh_begin", b"bh_select", b"bh_rollback"]
    done = [b"bh_begin", b"bh_select", b"bh_update", b"bh_commit"]
    assert names(server) == attempt * loop.MAX_ATTEMPTS + done
    keys = {parameters for name, parameters in server.sent[: 3 * loop.MAX_ATTEMPTS]
            if name == b"bh_select"}  # fmt: skip
    assert len(keys) == 1
    assert (flow.tally.retries, flow.tally.errors, flow.tally.committed) == (10, 1, 1)


def test_a_failed_update_is_rolled_back_and_counted_with_the_servers_message():
    server = Server({b"bh_update": [failed(b"23514")]})
    flow = run(server, flow_on(server, quota=1))
    assert names(server) == [b"bh_begin", b"bh_select", b"bh_update", b"bh_rollback"]
    assert (flow.tally.retries, flow.tally.errors, flow.tally.committed) == (0, 1, 0)


def test_a_missing_row_is_rolled_back_and_counted_not_retried():
    server = Server({b"bh_select": [select_answer()]})
    flow = run(server, flow_on(server, quota=1))
    assert names(server) == [b"bh_begin", b"bh_select", b"bh_rollback"]
    assert (flow.tally.retries, flow.tally.errors, flow.tally.committed) == (0, 1, 0)


def test_a_server_shutting_down_stops_the_run_with_its_reason():
    # A FATAL error, then the server closes the connection: no ReadyForQuery.
    server = Server({b"bh_update": [error(b"57P01", b"terminating connection", b"FATAL")]})
    flow = flow_on(server, quota=1)
    ended_by_the_server(server, flow.steps(), answered=2)  # BEGIN, SELECT; the UPDATE fails
    assert names(server)[-1] == b"bh_update"  # nothing sent on a connection gone


def test_a_connection_closed_without_a_word_is_a_lost_connection():
    server = Server()
    steps = flow_on(server, quota=1).steps()
    next(steps)
    server.answer_next()  # read (else closing resets the connection: also a ConnectionError)
    server.end.close()
    with pytest.raises(ConnectionError, match="connection lost"):
        next(steps)


def test_only_a_plain_posix_socket_is_spoken_on_directly():
    plain = type(
        "PGconn",
        (),
        {"ssl_in_use": False, "used_gssapi": False, "socket": 7, "host": b"/tmp", "info": []},
    )()
    assert wire.usable_fd(plain) == (7 if os.name == "posix" else None)
    plain.ssl_in_use = True
    assert wire.usable_fd(plain) is None
    plain.ssl_in_use, plain.used_gssapi = False, True
    assert wire.usable_fd(plain) is None


class GssOverTcp:
    """A connection as libpq built with GSS reports it over TCP (``gssencmode`` prefer),
    its statements run by ``pgconn`` when given one, else answered ``encrypted``."""

    def __init__(self, pgconn=None, encrypted=b"f", status=2, host=b"db.example"):
        self.pgconn, self.encrypted, self.status, self.host = pgconn, encrypted, status, host
        self.ssl_in_use = self.used_gssapi = False
        self.socket = 9
        self.info = [SimpleNamespace(keyword=b"gssencmode", val=b"prefer")]
        self.asked: list[bytes] = []
        self.answers: list = []

    def exec_(self, sql):
        self.asked.append(sql)
        if self.pgconn is not None:
            self.answers.append(self.pgconn.exec_(sql))
            return self.answers[-1]
        return SimpleNamespace(status=self.status, ntuples=1, get_value=lambda *_: self.encrypted)


@pytest.mark.skipif(os.name != "posix", reason="the socket is spoken on only on POSIX")
def test_a_gss_encrypted_connection_is_left_to_libpq_whatever_its_authentication():
    assert wire.usable_fd(GssOverTcp(encrypted=b"t")) is None
    assert wire.usable_fd(GssOverTcp(encrypted=b"f")) == 9
    assert wire.usable_fd(GssOverTcp(status=7)) == 9  # FATAL_ERROR: a server before 12
    local = GssOverTcp(encrypted=b"t", host=b"/var/run/postgresql")
    assert wire.usable_fd(local) == 9 and local.asked == []  # never tried on a Unix socket


@pytest.mark.skipif(os.name != "posix", reason="the socket is spoken on only on POSIX")
def test_the_server_is_asked_whether_a_tcp_connection_is_gss_encrypted(pg_dsn):
    """The question is real SQL on a real server (PostgreSQL 12 or later has the view);
    this server has no GSS, so the answer is no and the socket is used."""
    pgconn = pq.PGconn.connect(pg_dsn.encode())
    try:
        assert pgconn.status == pq.ConnStatus.OK, pgconn.get_error_message()
        if pgconn.host.startswith(b"/"):
            pytest.skip("the test server is reached over a Unix socket: GSS is TCP's only")
        asking = GssOverTcp(pgconn)
        assert wire.usable_fd(asking) == 9
        (answer,) = asking.answers
        assert answer.status == pq.ExecStatus.TUPLES_OK, answer.get_error_message()
        assert (answer.ntuples, answer.get_value(0, 0)) == (1, b"f")
        plain = wire.usable_fd(pgconn)  # gssencmode as this libpq sets it
        assert plain == pgconn.socket
    finally:
        pgconn.finish()
