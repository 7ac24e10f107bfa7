"""select-update's PostgreSQL event loop on a scripted connection: what it sends, retries and
counts, statement by statement, without a server (the tests with one are in
test_select_update.py)."""

from __future__ import annotations

import random
import threading

import pytest
from benchhub_agent.benchmarks import _pg_event_loop as loop
from benchhub_agent.benchmarks._select_update_clients import PostgresClient
from psycopg import pq

OK, ROWS = int(pq.ExecStatus.COMMAND_OK), int(pq.ExecStatus.TUPLES_OK)
ERROR = int(pq.ExecStatus.FATAL_ERROR)


class Result:
    def __init__(self, status: int, rows: int = 0, sqlstate: bytes = b"") -> None:
        self.status, self.ntuples, self.sqlstate = status, rows, sqlstate

    def get_value(self, row: int, column: int) -> bytes:
        return b"41"

    def get_error_message(self) -> str:
        return f"ERROR: {self.sqlstate.decode()}"

    def error_field(self, field: object) -> bytes:
        return self.sqlstate


class Connection:
    """Answers each statement at once: from ``script`` (statement name → the results it
    gives, in turn) where given, else as a healthy server would. The answer is taken only
    after it was read (``consume_input``): ``get_result`` alone would poll the socket
    first, a system call more per round trip."""

    socket = 99
    status = pq.ConnStatus.OK

    def __init__(self, script: dict[bytes, list[Result]] | None = None) -> None:
        self.script = script or {}
        self.sent: list[tuple[bytes, object]] = []
        self.answers: list[Result | None] = []
        self.read = False

    def send_query_prepared(self, name: bytes, parameters: object) -> None:
        self.sent.append((name, parameters))
        planned = self.script.get(name)
        answer = planned.pop(0) if planned else self.healthy(name)
        self.answers = [answer, None]
        self.read = False

    @staticmethod
    def healthy(name: bytes) -> Result:
        return Result(ROWS, rows=1) if name == b"bh_select" else Result(OK)

    def consume_input(self) -> None:
        self.read = True

    def get_result(self) -> Result | None:
        assert self.read, "get_result before consume_input: libpq polls the socket first"
        return self.answers.pop(0)


def flow_on(connection: Connection, quota: int) -> loop.PostgresFlow:
    client = type("Client", (), {})()
    client.pgconn, client.keys = connection, [b"%d" % key for key in range(1, 101)]
    client.ok_status, client.tuples_status = OK, ROWS
    return loop.PostgresFlow(client, quota, (0.0, None), [0], 0, random.Random(3))


def run(flow: loop.PostgresFlow) -> loop.PostgresFlow:
    """Resume the flow until it ends, as the loop does once its socket is readable (here
    every answer is there at once)."""
    for _ in flow.steps():
        pass
    return flow


def names(connection: Connection) -> list[bytes]:
    return [name for name, _ in connection.sent]


def test_a_transaction_is_pgbenchs_four_statements_with_the_value_read_sent_back():
    connection = Connection()
    flow = run(flow_on(connection, quota=2))
    assert names(connection) == [b"bh_begin", b"bh_select", b"bh_update", b"bh_commit"] * 2
    (_, (key,)), (_, update) = connection.sent[1], connection.sent[2]
    assert update == (b"41", key)  # the UPDATE adds the 1 itself, as pgbench's script
    assert flow.tally.committed == 2 and flow.tally.histogram.count == 2


def test_a_lock_timeout_is_run_again_on_the_same_key_then_counted_as_an_error():
    timeout = Result(ERROR, sqlstate=b"55P03")
    connection = Connection({b"bh_select": [timeout] * loop.MAX_ATTEMPTS})
    flow = run(flow_on(connection, quota=2))
    attempt = [b"bh_begin", b"bh_select", b"bh_rollback"]
    done = [b"bh_begin", b"bh_select", b"bh_update", b"bh_commit"]
    assert names(connection) == attempt * loop.MAX_ATTEMPTS + done
    keys = {parameters for name, parameters in connection.sent[: 3 * loop.MAX_ATTEMPTS]
            if name == b"bh_select"}  # fmt: skip
    assert len(keys) == 1
    assert (flow.tally.retries, flow.tally.errors, flow.tally.committed) == (10, 1, 1)


def test_a_missing_row_is_rolled_back_and_counted_not_retried():
    connection = Connection({b"bh_select": [Result(ROWS, rows=0)]})
    flow = run(flow_on(connection, quota=1))
    assert names(connection) == [b"bh_begin", b"bh_select", b"bh_rollback"]
    assert (flow.tally.retries, flow.tally.errors, flow.tally.committed) == (0, 1, 0)


def test_a_lost_connection_stops_the_run_with_the_servers_reason():
    connection = Connection({b"bh_update": [Result(ERROR, sqlstate=b"57P01")]})
    with pytest.raises(ConnectionError, match="57P01"):
        run(flow_on(connection, quota=1))
    assert names(connection)[-1] == b"bh_update"  # nothing sent on a connection gone


def test_an_answer_missing_is_a_lost_connection():
    connection = Connection()
    steps = flow_on(connection, quota=1).steps()
    next(steps)
    connection.answers, connection.read = [None], True
    with pytest.raises(ConnectionError, match="not one answer"):
        next(steps)


def test_a_client_failing_too_often_in_a_row_stops_the_run_and_retries_do_not_count():
    tally = loop.ClientTally()
    in_a_row = 0
    for _ in range(loop.MAX_CONSECUTIVE_ERRORS - 1):
        in_a_row = loop.given_up(tally, "check violated", in_a_row)
    assert loop.given_up(tally, None, in_a_row) == in_a_row  # out of retries
    assert tally.errors == loop.MAX_CONSECUTIVE_ERRORS
    with pytest.raises(RuntimeError, match="1000 transactions failed in a row: check violated"):
        loop.given_up(tally, "check violated", in_a_row)


class Draws:
    """A random.Random whose draws are given: the edges of [0, 1) and between."""

    def __init__(self, draws: list[float]) -> None:
        self.random = iter(draws).__next__


class BlockingConnection(Connection):
    """The lone client's libpq calls: each statement sent and answered in one."""

    def exec_prepared(self, name: bytes, parameters: object) -> Result:
        self.send_query_prepared(name, parameters)
        return self.answers[0]


def lone_client_on(connection: BlockingConnection) -> PostgresClient:
    alone = object.__new__(PostgresClient)
    alone.pgconn, alone.keys, alone.pq = connection, [b"%d" % key for key in range(1, 101)], pq
    alone.ok_status, alone.tuples_status = OK, ROWS
    return alone


def test_the_lone_client_runs_a_lock_timeout_again_then_counts_it_as_an_error():
    timeout = Result(ERROR, sqlstate=b"55P03")
    connection = BlockingConnection({b"bh_select": [timeout] * loop.MAX_ATTEMPTS})
    alone = lone_client_on(connection)
    tally = alone.run_alone(2, (0.0, None), random.Random(3), [0], 0, threading.Event())
    attempt = [b"bh_begin", b"bh_select", b"bh_rollback"]
    done = [b"bh_begin", b"bh_select", b"bh_update", b"bh_commit"]
    assert names(connection) == attempt * loop.MAX_ATTEMPTS + done
    assert (tally.retries, tally.errors, tally.committed) == (10, 1, 1)


def test_the_lone_client_draws_the_keys_the_loop_draws_from_the_same_draws():
    # Each draws inline (no method call per transaction): they run pgbench's choice,
    # uniform over the rows, only if they agree draw for draw.
    draws = [0.0, 0.999999, 0.5, 0.123, 0.77, 0.0101, 0.31]
    looping = Connection()
    flow = flow_on(looping, quota=len(draws))
    flow.rng = Draws(draws)
    run(flow)
    lone = BlockingConnection()
    tally = lone_client_on(lone).run_alone(
        len(draws), (0.0, None), Draws(draws), [0], 0, threading.Event()
    )
    assert tally.committed == flow.tally.committed == len(draws)
    chosen = [parameters for name, parameters in looping.sent if name == b"bh_select"]
    assert chosen == [parameters for name, parameters in lone.sent if name == b"bh_select"]
    assert chosen[:2] == [(b"1",), (b"100",)]  # both ends of the rows, none past them
