"""select-update's PostgreSQL clients: one non-blocking event loop per worker process.

Threads cost a GIL hand-over per round trip; with 16 clients per process that
hand-over, not Python, is what limits the agent. So for PostgreSQL a worker
process drives all its connections from one loop, as pgbench's threads do:
each query is sent with ``send_query_prepared`` and the loop waits (epoll) for
whichever socket answers first. Still four round trips per transaction, like
pgbench, and the latency of a transaction is measured the same way.

Each connection's transactions are one generator (:meth:`Flow.steps`): it sends a
statement and yields; the loop resumes it when its socket is readable. Where the
transaction stands is the generator's own place in its code, its values are its
local variables: a round trip costs one resumption, not a method call that looks
its state up in attributes and dispatches on it (a third fewer instructions per
transaction than that state machine, docs/performance.md).

MariaDB/MySQL keep one thread per client (select_update._client_loop): PyMySQL
has no non-blocking API.
"""

from __future__ import annotations

import functools
import math
import os
import random
import select
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..histogram import Histogram
from . import _pg_wire

MAX_ATTEMPTS = 10  # a transaction retried this often counts as an error
MAX_CONSECUTIVE_ERRORS = 1000  # a client failing this often in a row stops the run
# PostgreSQL: serialization failure, deadlock, lock not available: run the transaction again.
RETRYABLE_SQLSTATES = (b"40001", b"40P01", b"55P03")
# Only another program touching the table makes a row vanish mid-run.
MISSING_ROW = "row c1=%d is missing: is another run using the table at the same time?"


def given_up(tally: ClientTally, failure: str | None, failed_in_a_row: int) -> int:
    """Counts a transaction given up (``failure`` None: out of attempts at a retryable
    error, which does not count in a row) and returns the failures in a row; too many
    in a row stop the run."""
    tally.errors += 1
    if failure is None:
        return failed_in_a_row
    failed_in_a_row += 1
    if failed_in_a_row >= MAX_CONSECUTIVE_ERRORS:
        raise RuntimeError(f"{failed_in_a_row} transactions failed in a row: {failure}")
    return failed_in_a_row


@dataclass
class ClientTally:
    histogram: Histogram = field(default_factory=Histogram)
    committed: int = 0  # all commits, warm-up included: what the table's sum must show
    errors: int = 0
    retries: int = 0
    ended_at: float = 0.0


NOT_ONE_ANSWER = "connection lost: not one answer to the statement"


class Flow:
    """A client of the loop: a libpq connection (``pgconn``) and its transactions.

    ``steps`` returns a generator that sends a statement with
    ``send_query_prepared`` and yields; resumed once the socket has data, it reads
    it (``consume_input``: one recv) and takes the statement's answer with two
    ``get_result`` calls (its result, then None), acts on it and sends the next
    statement, until the client has no more to run (the generator returns). So a
    round trip is three system calls, send, epoll_wait and recv, as few as
    pgbench's; ``get_result`` alone would poll the socket before reading it, a
    fourth (3-6 µs more CPU per transaction at 4 clients, docs/performance.md).
    The server sends a statement's whole answer (its result, then ReadyForQuery)
    in one write; one split in transit is waited for by ``get_result`` itself (the
    loop pauses for it; nothing is lost). A lost connection answers with an error
    result; none at all, or a second one to a single statement, raises
    ConnectionError(NOT_ONE_ANSWER).
    """

    pgconn: Any

    def steps(self) -> Iterator[None]:
        raise NotImplementedError


def drive(flows: list[Any]) -> None:
    """Run every flow until each has finished: epoll on Linux, select() elsewhere."""
    running: dict[int, Callable[[None], None]] = {}
    for flow in flows:
        # A generator's bound send() is called through vectorcall; its __next__ is a
        # slot wrapper, a call that builds an argument tuple each round trip.
        resume = flow.steps().send
        try:
            resume(None)  # sends its first statement
        except StopIteration:
            continue
        running[flow.pgconn.socket] = resume
    if not hasattr(select, "epoll"):
        while running:
            ready, _, _ = select.select(list(running), [], [], 1.0)
            for fd in ready:
                try:
                    running[fd](None)
                except StopIteration:
                    del running[fd]
        return
    with select.epoll() as poller:
        for fd in running:
            poller.register(fd, select.EPOLLIN)
        poll = poller.poll
        # No timeout: a timeout reads the clock twice per wait, and nothing in the loop
        # waits for time to pass. At most one event per connection: without that bound
        # each wait allocates and frees room for 1,023 events.
        room = len(running)
        while running:
            for fd, _events in poll(None, room):
                try:
                    running[fd](None)
                except StopIteration:
                    poller.unregister(fd)
                    del running[fd]


class PostgresFlow(Flow):
    """One client of the event loop: BEGIN, SELECT … FOR UPDATE, UPDATE, COMMIT, again.

    An error result on the way sends ROLLBACK; once that completes the
    transaction is run again with the same key (serialization failure, deadlock,
    lock timeout; up to MAX_ATTEMPTS) or counted as failed. A lost connection
    raises ConnectionError, which stops the run with its reason.
    """

    def __init__(
        self,
        client: Any,
        quota: int | None,
        window: tuple[float, float | None],
        progress: Any,
        slot: int,
        rng: random.Random,
    ) -> None:
        self.client = client
        self.pgconn = client.pgconn
        self.quota = quota
        self.window = window
        self.progress = progress
        self.slot = slot
        self.rng = rng
        self.tally = ClientTally()
        self.fd = _pg_wire.usable_fd(self.pgconn)
        if self.fd is not None:  # made here, before the run starts (once per process)
            self.wire_statements = _wire_statements(tuple(client.keys))

    def steps(self) -> Iterator[None]:
        """The protocol spoken on the socket where it can be (:mod:`._pg_wire`), else
        through libpq's calls: the same statements, answers and counts either way."""
        return self._libpq_steps() if self.fd is None else self._wire_steps(self.fd)

    def _wire_steps(self, fd: int) -> Iterator[None]:
        """:meth:`_libpq_steps` with each statement one write of the bytes libpq would
        send, and each answer one read compared with the bytes a success is; anything
        else is read out by ``wire.rest`` (an error, a notice, a split answer)."""
        w = _pg_wire
        tally, progress, slot, client = self.tally, self.progress, self.slot, self.client
        wire = w.Wire(fd)
        rest, write, read, size = wire.rest, os.write, os.read, w.READ_SIZE
        ok, rows_ok = w.COMMAND_OK, w.TUPLES_OK
        begin, commit, rollback, began, updated, committed = _WIRE_TRANSACTION
        rows = float(len(client.keys))
        selects, keyed, key_lengths, update_heads = self.wire_statements
        # The SELECT's answer: its head (BindComplete, RowDescription) learned from the
        # first one, one DataRow of one column, then SELECT 1's tail.
        head, head_length, tail = b"\xff", 1, w.rows_tail(1)
        one_row = w.ONE_COLUMN_ROW.get
        window_start, deadline = self.window
        if deadline is None:
            deadline = math.inf
        quota = self.quota
        draw = self.rng.random
        clock, whole = time.perf_counter, math.floor
        latencies: dict[int, int] = {}
        seen = latencies.get
        done = committed_count = failed_in_a_row = 0
        while quota is None or done < quota:
            if (started := clock()) >= deadline:
                break
            index = whole(draw() * rows)
            attempts = 0
            while True:
                write(fd, begin)
                yield
                if (data := read(fd, size)) == began or (
                    result := (yield from rest(data))
                ).status == ok:
                    write(fd, selects[index])
                    yield
                    data = read(fd, size)
                    if (
                        data[-20:] == tail
                        and data[:head_length] == head
                        and one_row(data[head_length : head_length + 7])
                        == len(data) - head_length - 20
                    ):
                        value = data[head_length + 7 : -20]
                    else:
                        result = yield from rest(data)
                        value = None
                        if result.status == rows_ok and len(result.rows) == 1:
                            value = w.parameter(result.rows[0][0] or b"")
                            head, head_length = result.head, len(result.head)
                    if value is not None:
                        write(
                            fd, update_heads[len(value) + key_lengths[index]] + value + keyed[index]
                        )
                        yield
                        if (data := read(fd, size)) == updated or (
                            result := (yield from rest(data))
                        ).status == ok:
                            write(fd, commit)
                            yield
                            if (data := read(fd, size)) == committed or (
                                result := (yield from rest(data))
                            ).status == ok:
                                ended = clock()
                                committed_count += 1
                                failed_in_a_row = 0
                                if window_start <= ended <= deadline:
                                    micros = whole((ended - started) * 1e6)
                                    latencies[micros] = seen(micros, 0) + 1
                                break
                failure = _wire_failure(result, index + 1)
                write(fd, rollback)
                yield
                yield from rest(read(fd, size))  # its answer, whatever it is
                if failure is None:  # retryable: the same key again, up to MAX_ATTEMPTS runs
                    tally.retries += 1
                    attempts += 1
                    if attempts < MAX_ATTEMPTS:
                        continue
                failed_in_a_row = given_up(tally, failure, failed_in_a_row)
                break
            done += 1
            if done & 15 == 0:
                progress[slot] = done
        progress[slot] = done
        tally.committed = committed_count
        tally.histogram.record_counts(latencies)
        tally.ended_at = clock()

    def _libpq_steps(self) -> Iterator[None]:
        client, tally, progress, slot = self.client, self.tally, self.progress, self.slot
        pgconn = self.pgconn
        send, read, get_result = pgconn.send_query_prepared, pgconn.consume_input, pgconn.get_result
        ok = client.ok_status
        # A float times a float is one specialised instruction, times an int a generic
        # call; floor() is a plain call where int() goes through its type (the same
        # values: drawn as the lone client draws them, test_pg_event_loop compares).
        keys, rows = client.keys, float(len(client.keys))
        selects = [(key,) for key in keys]  # the SELECT's parameters, made once per key
        window_start, deadline = self.window
        if deadline is None:  # one comparison per transaction instead of two
            deadline = math.inf
        quota = self.quota
        draw = self.rng.random  # uniform over the keys in one C call
        clock, whole = time.perf_counter, math.floor
        # Latencies counted exactly, one dict update each, folded into the histogram at
        # the end (Histogram.record_counts).
        latencies: dict[int, int] = {}
        seen = latencies.get
        done = committed = failed_in_a_row = 0
        while quota is None or done < quota:
            if (began := clock()) >= deadline:
                break
            index = whole(draw() * rows)
            param = keys[index]
            attempts = 0
            while True:
                send(b"bh_begin", None)
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status == ok:
                    send(b"bh_select", selects[index])
                    yield
                    read()
                    if (result := get_result()) is None or get_result() is not None:
                        raise ConnectionError(NOT_ONE_ANSWER)
                    # Only the SELECT that found its row counts one: an error counts 0 (_failure
                    # tells them apart). One attribute read less: psycopg's are generic
                    # lookups, not specialised ones (about 150 instructions each).
                    if result.ntuples == 1:
                        # The UPDATE adds the 1 (PostgresClient): the value goes back as sent.
                        send(b"bh_update", (result.get_value(0, 0), param))
                        yield
                        read()
                        if (result := get_result()) is None or get_result() is not None:
                            raise ConnectionError(NOT_ONE_ANSWER)
                        if result.status == ok:
                            send(b"bh_commit", None)
                            yield
                            read()
                            if (result := get_result()) is None or get_result() is not None:
                                raise ConnectionError(NOT_ONE_ANSWER)
                            if result.status == ok:
                                ended = clock()
                                committed += 1
                                failed_in_a_row = 0
                                if window_start <= ended <= deadline:
                                    micros = whole((ended - began) * 1e6)
                                    latencies[micros] = seen(micros, 0) + 1
                                break
                failure = self._failure(result, index + 1)
                send(b"bh_rollback", None)
                yield
                read()
                if get_result() is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if failure is None:  # retryable: the same key again, up to MAX_ATTEMPTS runs
                    tally.retries += 1
                    attempts += 1
                    if attempts < MAX_ATTEMPTS:
                        continue
                failed_in_a_row = given_up(tally, failure, failed_in_a_row)
                break
            done += 1
            if done & 15 == 0:
                progress[slot] = done
        progress[slot] = done
        tally.committed = committed
        tally.histogram.record_counts(latencies)
        tally.ended_at = clock()

    def _failure(self, result: Any, key: int) -> str | None:
        """Why the transaction whose statement gave ``result`` failed: None when it may be
        run again (serialization failure, deadlock, lock timeout). A lost connection
        raises ConnectionError."""
        from psycopg import pq

        if result.status == self.client.tuples_status:  # the SELECT found no row
            return MISSING_ROW % key
        message = result.get_error_message()
        sqlstate = result.error_field(pq.DiagnosticField.SQLSTATE) or b""
        if self.pgconn.status != pq.ConnStatus.OK or sqlstate[:2] in (b"08", b"57"):
            raise ConnectionError(message.strip() or "connection lost")
        return None if sqlstate in RETRYABLE_SQLSTATES else message


# select-update's statements without parameters, and the answers success gives to them.
_WIRE_TRANSACTION = (
    *(_pg_wire.execute(name) for name in (b"bh_begin", b"bh_commit", b"bh_rollback")),
    _pg_wire.answer(b"BEGIN"),
    _pg_wire.answer(b"UPDATE 1"),
    _pg_wire.answer(b"COMMIT", b"I"),
)


@functools.cache
def _wire_statements(
    keys: tuple[bytes, ...],
) -> tuple[list[bytes], list[bytes], list[int], list[bytes]]:
    """The SELECT for each key; the UPDATE's Bind in parts, made once per process: a head
    for the parameters' length, the value as the SELECT's DataRow carried it (its
    length, then its bytes), then the key's part and the rest of the messages."""
    w = _pg_wire
    selects = [w.execute(b"bh_select", (key,)) for key in keys]
    keyed = [w.parameter(key) + w.BIND_TAIL for key in keys]
    key_lengths = [len(w.parameter(key)) for key in keys]
    update_heads = [w.bind_head(b"bh_update", n, 2) for n in range(256)]
    return selects, keyed, key_lengths, update_heads


def _wire_failure(result: _pg_wire.Answer, key: int) -> str | None:
    """:meth:`PostgresFlow._failure` for an answer read off the socket."""
    if result.status == _pg_wire.TUPLES_OK:  # the SELECT found no row
        return MISSING_ROW % key
    sqlstate = result.sqlstate
    message = result.error_message()
    if sqlstate[:2] in ("08", "57"):
        raise ConnectionError(f"{message} ({sqlstate})")
    return None if sqlstate.encode() in RETRYABLE_SQLSTATES else message
