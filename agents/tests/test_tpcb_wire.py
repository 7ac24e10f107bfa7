"""tpcb's loop on the socket (TpcbFlow._wire_steps) against a scripted server on a socket
pair: pgbench's seven statements with the choices drawn as pgbench draws them, a failed
statement rolled back and counted, answers split or preceded by a notice, a connection
that ends. The tests against a real server are in test_tpcb.py."""

from __future__ import annotations

import math
import random

from _pg_protocol import (
    NOTICE,
    ScriptedServer,
    ended_by_the_server,
    error,
    failed,
    select_answer,
    send_answer,
)
from benchhub_agent.benchmarks import _pg_wire as wire
from benchhub_agent.benchmarks import _tpcb_event_loop as tpcb
from benchhub_agent.histogram import Histogram

SCALE = 3  # three branches, thirty tellers: an id drawn wrong shows
SEED = 11
TRANSACTION = [name for name, _, _ in tpcb.SCRIPT]
TAGS = {
    b"tb_begin": wire.answer(b"BEGIN"),
    b"tb_accounts": wire.answer(b"UPDATE 1"),
    b"tb_select": select_answer(b"-4077"),
    b"tb_tellers": wire.answer(b"UPDATE 1"),
    b"tb_branches": wire.answer(b"UPDATE 1"),
    b"tb_history": wire.answer(b"INSERT 0 1"),
    b"tb_end": wire.answer(b"COMMIT", b"I"),
    b"tb_rollback": wire.answer(b"ROLLBACK", b"I"),
}


class Server(ScriptedServer):
    """Answers each statement as PostgreSQL would (``TAGS``), or as its script says."""

    def healthy(self, name: bytes, parameters: tuple[bytes, ...]) -> bytes:
        return TAGS[name]


def flow_on(server: Server) -> tpcb.TpcbFlow:
    """A TpcbFlow at scale ``SCALE`` on the pair's socket, without a server to connect to
    (what TpcbFlow.__init__ sets for the wire path)."""
    flow = tpcb.TpcbFlow.__new__(tpcb.TpcbFlow)
    flow.scale = SCALE
    flow.accounts, flow.tellers = tpcb.ACCOUNTS_PER_BRANCH * SCALE, tpcb.TELLERS_PER_BRANCH * SCALE
    flow.draw = random.Random(SEED).random
    flow.measure_from, flow.deadline = 0.0, math.inf
    flow.latencies, flow.failed, flow.histogram = {}, 0, Histogram()
    flow.wire_tables = tpcb.wire_tables(flow.tellers, SCALE)
    flow.fd = server.client.fileno()
    return flow


def run(server: Server, flow: tpcb.TpcbFlow, ends: int, split_every: int = 0) -> None:
    """Answer the flow's statements until ``ends`` transactions have ended (committed or
    rolled back); with ``split_every`` n, every n-th answer comes in two parts."""
    steps = flow._wire_steps(flow.fd)
    next(steps)
    answered = 0
    while sum(name in (b"tb_end", b"tb_rollback") for name, _ in server.sent) < ends:
        answer = server.answer_next()
        answered += 1
        send_answer(server.end, steps, answer, split_every > 0 and answered % split_every == 0)


def pgbench_choices(count: int) -> list[tuple[bytes, bytes, bytes, bytes]]:
    """(aid, bid, tid, delta) of ``count`` transactions as pgbench's tpcb-like script
    draws them: uniform over 1..accounts, 1..branches, 1..tellers, -5000..5000."""
    draw = random.Random(SEED).random
    accounts, tellers = tpcb.ACCOUNTS_PER_BRANCH * SCALE, tpcb.TELLERS_PER_BRANCH * SCALE
    return [
        (
            b"%d" % (math.floor(draw() * accounts) + 1),
            b"%d" % (math.floor(draw() * SCALE) + 1),
            b"%d" % (math.floor(draw() * tellers) + 1),
            b"%d" % (math.floor(draw() * 10_001) - 5000),
        )
        for _ in range(count)
    ]


def statements(aid: bytes, bid: bytes, tid: bytes, delta: bytes) -> list[tuple]:
    return [
        (b"tb_begin", ()),
        (b"tb_accounts", (delta, aid)),
        (b"tb_select", (aid,)),
        (b"tb_tellers", (delta, tid)),
        (b"tb_branches", (delta, bid)),
        (b"tb_history", (tid, bid, aid, delta)),
        (b"tb_end", ()),
    ]


def test_a_transaction_is_pgbenchs_seven_statements_with_pgbenchs_choices():
    server = Server()
    flow = flow_on(server)
    run(server, flow, ends=40)
    choices = pgbench_choices(40)
    assert server.sent == [step for choice in choices for step in statements(*choice)]
    assert {bid for _, bid, _, _ in choices} == {b"1", b"2", b"3"}  # every branch drawn
    assert (sum(flow.latencies.values()), flow.failed) == (40, 0)


def test_a_failed_statement_rolls_back_is_counted_and_the_next_transaction_goes_on():
    # The second transaction's teller update fails (a serialization failure), the fourth's
    # history insert (a check violation): each is rolled back where it failed. Every answer
    # comes in two reads.
    server = Server({b"tb_tellers": [None, failed(b"40001")], b"tb_history": [None, None,
                    failed(b"23514")]})  # fmt: skip
    flow = flow_on(server)
    run(server, flow, ends=5, split_every=1)
    first, second, third, fourth, fifth = pgbench_choices(5)
    assert server.sent == [
        *statements(*first),
        *statements(*second)[:4],
        (b"tb_rollback", ()),
        *statements(*third),
        *statements(*fourth)[:6],
        (b"tb_rollback", ()),
        *statements(*fifth),
    ]
    assert (sum(flow.latencies.values()), flow.failed) == (3, 2)


def test_split_answers_and_messages_of_the_servers_own_change_nothing():
    # Every third answer in two reads; a notice before a BEGIN's answer, one left after an
    # END's (read with the next answer), a SELECT's answer with a longer row.
    script = {
        b"tb_begin": [None, NOTICE + TAGS[b"tb_begin"]],
        b"tb_end": [TAGS[b"tb_end"] + NOTICE],
        b"tb_select": [None, None, select_answer(b"12345678")],
    }
    server = Server(script)
    flow = flow_on(server)
    run(server, flow, ends=6, split_every=3)
    assert server.sent == [step for choice in pgbench_choices(6) for step in statements(*choice)]
    assert (sum(flow.latencies.values()), flow.failed) == (6, 0)


def test_a_server_that_ends_the_connection_stops_the_run_with_its_reason():
    server = Server({b"tb_branches": [error(b"57P01", b"terminating connection", b"FATAL")]})
    flow = flow_on(server)
    # BEGIN, the accounts' UPDATE, the SELECT, the tellers' UPDATE; then the branches' fails.
    ended_by_the_server(server, flow._wire_steps(flow.fd), answered=4)
    assert [name for name, _ in server.sent] == TRANSACTION[:5]  # nothing sent after
    assert flow.failed == 0  # a lost connection stops the run, it is not a failure
