"""select-update's compiled PostgreSQL loop (benchmarks/_pg_loop.c) and its layout: its
contract without a server, then on the real PostgreSQL beside the Python loop it replaces
(the failure paths on both loops are in test_select_update.py)."""

from __future__ import annotations

import math
import random
import re
import socket
import threading
import time
import types

import pytest
from _compiled import built
from benchhub_agent import db
from benchhub_agent.benchmarks import _pg_compiled, _pg_event_loop, _pg_wire, select_update
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.placement import UNPINNED

KEYS = tuple(b"%d" % key for key in range(1, select_update.ROWS + 1))


def compiled_loop():
    """The agent's compiled PostgreSQL loop, or the test skipped where it was not built."""
    return built(_pg_compiled.compiled_loop)


@pytest.fixture(params=["compiled loop", "Python loop"])
def loop(request, monkeypatch):
    """Each test twice: the round trips in the compiled loop (one process, a thread per
    core), and in the Python loop that runs where it was not built (a process per core).
    Forked workers inherit the choice."""
    if request.param == "Python loop":
        monkeypatch.setattr(_pg_compiled, "compiled_loop", lambda: None)
    else:
        compiled_loop()
    return request.param


def statements() -> tuple:
    flow = types.SimpleNamespace(wire_statements=_pg_event_loop._wire_statements(KEYS))
    return _pg_compiled.statements(flow)


def select_answer(value: bytes) -> tuple[bytes, bytes]:
    """What a server sends for the SELECT before its tail: the head (BindComplete and a
    one-column RowDescription) and the row holding ``value``."""
    head = _pg_wire.message(b"2", b"") + _pg_wire.message(b"T", b"\x00\x01c2\x00" + bytes(18))
    return head, _pg_wire.message(b"D", b"\x00\x01" + _pg_wire.parameter(value))


def test_the_compiled_loop_refuses_what_it_cannot_run_before_any_io():
    """Every argument is checked before a byte is written: the socket's other end reads
    nothing after each refusal."""
    module = compiled_loop()
    ours, server = socket.socketpair()
    server.setblocking(False)
    good = statements()
    fd = ours.fileno()
    try:
        made = [
            (((), good), ValueError, "fds: 0 sockets"),
            (((-1,), good), ValueError, "fds: item 0 is -1"),
            (((fd,), good[:9]), ValueError, "not a tuple of 10"),
            (((fd,), ("BEGIN", *good[1:])), TypeError, "begin is not bytes"),
            (((fd,), (b"", *good[1:])), ValueError, "begin has 0 bytes"),
            (((fd,), (*good[:6], good[6][:5], *good[7:])), ValueError, "keyed is not a tuple"),
            (((fd,), (*good[:8], (10_000,) * 100, good[9])), ValueError, "key_lengths[0] is 10000"),
            (((fd,), (*good[:9], good[9][:100])), ValueError, "key_lengths[0] is 5"),
        ]
        for (fds, statements_), error, message in made:
            with pytest.raises(error, match=re.escape(message)):
                module.Loop(fds, statements_, 1.0, 0.0)
        loop = module.Loop((fd,), good, 1.0, 0.0)
        refused = [
            (loop.keys, (1, [0]), IndexError, "connection 1: not 0 to 0"),
            (loop.keys, (0, []), ValueError, "keys: 0, not 1 to 64"),
            (loop.keys, (0, [0] * 65), ValueError, "keys: 65, not 1 to 64"),
            (loop.keys, (0, [0, 100]), ValueError, "keys: item 1 is 100, not 0 to 99"),
            (loop.keys, (0, [-1]), ValueError, "keys: item 0 is -1"),
            (loop.keys, (0, (0,)), TypeError, "must be list"),
            (loop.proceed, (0,), ValueError, "connection 0: not waiting for proceed"),
            (loop.retry, (0,), ValueError, "connection 0: not waiting for retry"),
            (loop.skip, (0,), ValueError, "connection 0: not waiting for skip"),
        ]
        for call, args, error, message in refused:
            with pytest.raises(error, match=re.escape(message)):
                call(*args)
        with pytest.raises(BlockingIOError):
            server.recv(1)  # nothing was sent
        assert loop.run() == []  # no keys given: nothing to run, nothing sent
        with pytest.raises(BlockingIOError):
            server.recv(1)
    finally:
        ours.close()
        server.close()


def test_a_connection_whose_server_hung_up_is_a_lost_connection():
    """The other end closed: the BEGIN's answer is the end of the stream, which goes to
    Python as an empty answer, as the Python loop's read would have it."""
    module = compiled_loop()
    ours, server = socket.socketpair()
    server.close()
    try:
        loop = module.Loop((ours.fileno(),), statements(), math.inf, -math.inf)
        loop.keys(0, [3, 4])
        [(index, reason, answer, micros)] = loop.run()
    finally:
        ours.close()
    assert (index, micros) == (0, [])
    assert reason == module.BEGIN
    assert answer == b"" or answer in (32, 104)  # the end, or EPIPE / ECONNRESET on write


def test_a_chunk_is_the_statements_libpq_would_send_until_an_answer_is_not_a_success():
    """A scripted server over a socket pair: it answers BEGIN, SELECT (once learned, its
    head), UPDATE and COMMIT with their success bytes, then an error to a BEGIN."""
    module = compiled_loop()
    ours, server = socket.socketpair()
    good = statements()
    begin, commit, began, updated, committed, tail = good[:6]
    head, row = select_answer(b"41")
    error = _pg_wire.message(b"E", b"SERROR\x00C40001\x00Mconflict\x00\x00") + _pg_wire.message(
        b"Z", b"E"
    )
    try:
        loop = module.Loop((ours.fileno(),), good, math.inf, -math.inf)
        loop.keys(0, [6, 9])
        received: list[bytes] = []

        def serve() -> None:
            answers = [began, head + row + tail, updated, committed, began]
            answers += [head + row + tail, updated, committed, error]
            for answer in answers:
                received.append(server.recv(400))
                server.sendall(answer)

        thread = threading.Thread(target=serve)
        thread.start()
        [(_, reason, answer, micros)] = loop.run()  # the first SELECT's head is unknown
        assert (reason, answer, micros) == (module.SELECT, head + row + tail, [])
        loop.proceed(0, _pg_wire.parameter(b"41"), head)
        [(_, reason, answer, micros)] = loop.run()  # the second key done
        assert (reason, answer, len(micros)) == (module.DONE, None, 2)
        assert all(0 <= m < 10_000_000 for m in micros)
        loop.keys(0, [0])
        [(_, reason, answer, micros)] = loop.run()
        assert (reason, answer, micros) == (module.BEGIN, error, [])
        thread.join()
    finally:
        ours.close()
        server.close()
    update = _pg_wire.bind_head(b"bh_update", 6 + 4 + len(KEYS[6]), 2) + _pg_wire.parameter(b"41")
    update += _pg_wire.parameter(KEYS[6]) + _pg_wire.BIND_TAIL
    assert received[:4] == [begin, _pg_wire.execute(b"bh_select", (KEYS[6],)), update, commit]
    assert received[5] == _pg_wire.execute(b"bh_select", (KEYS[9],))
    assert received[8] == begin


def run_point(target: Target, clients: int, transactions: int, processes=None):
    return select_update.run_point(
        target,
        clients=clients,
        transactions=transactions,
        duration=None,
        warmup=0.0,
        locking="for_update",
        processes=processes,
        pin=UNPINNED,
        progress=SilentProgress(),
        label="compiled",
        seed=7,
    )


def table_rows(target: Target) -> list[int]:
    conn = db.connect(target, autocommit=True)
    try:
        rows = conn.execute(f"SELECT c2 FROM {select_update.TABLE} ORDER BY c1").fetchall()
    finally:
        conn.close()
    return [value for (value,) in rows]


def test_both_loops_run_the_same_keys_in_any_layout(pg_dsn, monkeypatch):
    """The compiled loop draws its keys in chunks in one process's threads, the Python
    loop one at a time in a process per core: a seed must still make the same
    transactions (each row's c2 counts the times its key was drawn; 203 transactions on 4
    clients, not a multiple of a chunk; in two processes of two where there are two CPUs)."""
    compiled_loop()
    target = Target.parse(pg_dsn)
    point = run_point(target, 4, 203)
    compiled = table_rows(target)
    assert (point.committed, point.errors, sum(compiled)) == (203, 0, 203)
    monkeypatch.setattr(_pg_compiled, "compiled_loop", lambda: None)
    for processes in (None, 1, 4):
        point = run_point(target, 4, 203, processes)
        assert (point.committed, point.errors) == (203, 0)
        assert table_rows(target) == compiled


NOTICE = """
CREATE FUNCTION benchhub_notice() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE NOTICE 'row % changed', NEW.c1; RETURN NEW; END $$;
CREATE TRIGGER on_update AFTER UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION benchhub_notice();
CREATE CONSTRAINT TRIGGER on_commit AFTER UPDATE ON {table} DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION benchhub_notice();
"""


def test_notices_in_the_answers_are_read_and_the_transactions_go_on(pg_dsn, loop, monkeypatch):
    """A notice before the UPDATE's answer and before the COMMIT's (a deferred trigger):
    not the success bytes, so each goes to Python, which reads the answer whole and lets
    the transaction go on; every transaction commits once and is measured once."""
    handed_back: list[int] = []
    answered = _pg_compiled._answered

    def spy(module, loop, index, client, statement, answer):
        handed_back.append(statement)
        answered(module, loop, index, client, statement, answer)

    monkeypatch.setattr(_pg_compiled, "_answered", spy)
    target = Target.parse(pg_dsn)
    select_update.reset_table(target)
    setup = db.connect(target, autocommit=True)
    setup.execute("DROP FUNCTION IF EXISTS benchhub_notice() CASCADE")
    setup.execute(NOTICE.format(table=select_update.TABLE))
    clients = []
    try:
        clients = [select_update.PostgresClient(target, "for_update") for _ in range(3)]
        flows = [
            _pg_event_loop.PostgresFlow(
                client, 40, (0.0, None), [0] * 3, index, random.Random(index)
            )
            for index, client in enumerate(clients)
        ]
        failures, _cpu = _pg_compiled.run_threads(flows, 2)
        assert failures == []
        assert [flow.tally.committed for flow in flows] == [40, 40, 40]
        assert [flow.tally.histogram.count for flow in flows] == [40, 40, 40]
        assert [(flow.tally.errors, flow.tally.retries) for flow in flows] == [(0, 0)] * 3
        assert sum(table_rows(target)) == 120
        if loop == "compiled loop":  # each connection's first SELECT (its head), each notice
            module = _pg_compiled.compiled_loop()
            assert sorted(handed_back) == sorted(
                [module.SELECT] * 3 + [module.UPDATE] * 120 + [module.COMMIT] * 120
            )
    finally:
        for client in clients:
            client.close()
        setup.execute("DROP FUNCTION benchhub_notice() CASCADE")
        setup.close()


def test_a_time_based_run_ends_at_its_deadline_and_counts_its_window(pg_dsn, loop):
    target = Target.parse(pg_dsn)
    select_update.reset_table(target)
    clients = [select_update.PostgresClient(target, "for_update") for _ in range(4)]
    try:
        now = time.perf_counter()
        window = (now + 0.2, now + 0.6)
        flows = [
            _pg_event_loop.PostgresFlow(client, None, window, [0] * 4, index, random.Random(index))
            for index, client in enumerate(clients)
        ]
        failures, cpu = _pg_compiled.run_threads(flows, 2)
    finally:
        for client in clients:
            client.close()
    assert failures == []
    assert 0 <= cpu <= 100
    for flow in flows:
        assert 0 < flow.tally.histogram.count < flow.tally.committed  # not the warm-up's
        assert window[1] <= flow.tally.ended_at < window[1] + 1.0
    assert sum(table_rows(target)) == sum(flow.tally.committed for flow in flows)


def test_the_run_says_which_loop_ran(pg_dsn, loop):
    result = select_update.run(
        Target.parse(pg_dsn),
        select_update_options(),
        SilentProgress(),
    )
    (note,) = [n for n in result.notes if n.startswith("PostgreSQL clients")]
    assert ("compiled loop (C)" in note) == (loop == "compiled loop")


def select_update_options():
    import argparse

    return argparse.Namespace(
        clients=[2], transactions=50, duration=None, warmup=None, repeat=1,
        locking="for_update", processes=None, pin=None, keep=False,
    )  # fmt: skip


def test_an_answer_split_in_transit_is_waited_for_and_the_transaction_goes_on():
    """A scripted server over a socket pair sends BEGIN's answer in two parts: the first
    part is not the success bytes, so Python reads the rest (a short wait) and the loop
    goes on; a lock timeout (55P03) is then rolled back and run again, and the key's
    latency counts from its first attempt."""
    module = compiled_loop()
    ours, server = socket.socketpair()
    good = statements()
    begin, commit, began, updated, committed, tail = good[:6]
    head, row = select_answer(b"7")
    timeout = _pg_wire.message(b"E", b"SERROR\x00C55P03\x00Mlock timeout\x00\x00")
    rolled_back = _pg_wire.answer(b"ROLLBACK", b"I")
    script = [
        [began[:5], began[5:]], [timeout + _pg_wire.message(b"Z", b"E")], [rolled_back],
        [began], [head + row + tail], [updated], [committed],
    ]  # fmt: skip
    received: list[bytes] = []

    def serve() -> None:
        for parts in script:
            received.append(server.recv(400))
            for part in parts:
                server.sendall(part)
                time.sleep(0.05)

    flow = _pg_event_loop.PostgresFlow.__new__(_pg_event_loop.PostgresFlow)
    flow.fd, flow.wire_statements = ours.fileno(), _pg_event_loop._wire_statements(KEYS)
    flow.client = types.SimpleNamespace(keys=KEYS)
    flow.quota, flow.window, flow.progress, flow.slot = 1, (0.0, None), [0], 0
    flow.rng, flow.tally = random.Random(5), _pg_event_loop.ClientTally()
    thread = threading.Thread(target=serve)
    thread.start()
    try:
        _pg_compiled.drive_compiled(module, [flow], threading.Event())
    finally:
        thread.join()
        ours.close()
        server.close()
    key = KEYS[math.floor(random.Random(5).random() * 100)]
    select = _pg_wire.execute(b"bh_select", (key,))
    rollback = _pg_wire.execute(b"bh_rollback")
    assert received[:5] == [begin, select, rollback, begin, select]
    assert received[6] == commit
    tally = flow.tally
    assert (tally.committed, tally.retries, tally.errors, tally.histogram.count) == (1, 1, 0, 1)
    # Each answer but the first waited 50 ms for the server: 7 from the first attempt's
    # BEGIN (the split included), 4 from the retry's.
    assert tally.histogram.max_ms() >= 300
    assert flow.progress == [1]
