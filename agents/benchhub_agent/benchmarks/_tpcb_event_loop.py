"""tpcb's PostgreSQL load: non-blocking libpq, many connections per worker process.

The same engine as select-update's (:mod:`._pg_event_loop`): each worker
process drives its share of the clients from one epoll loop (a lone client
through libpq's blocking calls, as select-update's: ``run_alone``), sending each
statement of pgbench's built-in tpcb-like script with ``send_query_prepared``
(as ``pgbench -M prepared`` does) and reading whichever socket answers first.
Seven round trips per transaction, like pgbench: BEGIN, three UPDATEs, a
SELECT, an INSERT, END. A failed statement rolls the transaction back and
counts it as failed, as pgbench counts its failures.
"""

from __future__ import annotations

import functools
import gc
import math
import multiprocessing
import os
import queue
import random
import time
from collections.abc import Iterator
from typing import Any

from .. import db
from ..histogram import Histogram
from . import _pg_wire
from ._engine_cpu import ThreadMeter, share
from ._pg_event_loop import NOT_ONE_ANSWER, Flow, drive
from ._worker_processes import start_as_worker, stop
from .base import Target

ACCOUNTS_PER_BRANCH = 100_000
TELLERS_PER_BRANCH = 10
READY_TIMEOUT_S = 120.0

# (name, SQL, the transaction's parameters it takes), in pgbench's order.
SCRIPT: tuple[tuple[bytes, bytes, tuple[str, ...]], ...] = (
    (b"tb_begin", b"BEGIN", ()),
    (
        b"tb_accounts",
        b"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
        ("delta", "aid"),
    ),
    (b"tb_select", b"SELECT abalance FROM pgbench_accounts WHERE aid = $1", ("aid",)),
    (
        b"tb_tellers",
        b"UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
        ("delta", "tid"),
    ),
    (
        b"tb_branches",
        b"UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
        ("delta", "bid"),
    ),
    (
        b"tb_history",
        b"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)"
        b" VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
        ("tid", "bid", "aid", "delta"),
    ),
    (b"tb_end", b"END", ()),
)
NAMES = tuple(name for name, _, _ in SCRIPT)
# pgbench's delta, uniform over -5000..5000, and the ids as parameters: made once, taken
# by index (a formatting each per transaction is what they save).
DELTA_COUNT = 10_001
DELTAS = tuple(b"%d" % (index - 5000) for index in range(DELTA_COUNT))
ONE_PASS = (None,)


@functools.cache
def numbered(count: int) -> tuple[bytes, ...]:
    """b"1" … b"count": the tellers' or branches' ids, the index drawn 0 … count - 1."""
    return tuple(b"%d" % (index + 1) for index in range(count))


# The statements without parameters and the answers success gives, on the wire.
_WIRE_FIXED = (
    *(_pg_wire.execute(name) for name in (b"tb_begin", b"tb_end", b"tb_rollback")),
    _pg_wire.answer(b"BEGIN"),
    _pg_wire.answer(b"UPDATE 1"),
    _pg_wire.answer(b"INSERT 0 1"),
    _pg_wire.answer(b"COMMIT", b"I"),  # END's tag is COMMIT's
)


def wire_tables(tellers: int, scale: int) -> tuple[tuple[Any, ...], ...]:
    """What the loop on the socket takes its Bind messages from (``TpcbFlow._wire_steps``):
    the statements' heads, the tellers', branches' and deltas' parameters."""
    return (_wire_heads(), _wire_numbered(tellers), _wire_numbered(scale), _wire_numbered_deltas())


@functools.cache
def _wire_heads() -> tuple[list[bytes], ...]:
    """For each statement with parameters, in SCRIPT's order, its Bind's head by the
    parameters' length (made once per process: a Bind is its head, the parameters
    as Bind carries them, then _pg_wire.BIND_TAIL)."""
    return tuple(
        [_pg_wire.bind_head(name, length, len(takes)) for length in range(128)]
        for name, _, takes in SCRIPT
        if takes
    )


@functools.cache
def _wire_numbered(count: int) -> tuple[bytes, ...]:
    """numbered(count) as Bind parameters: each its length, then its bytes."""
    return tuple(_pg_wire.parameter(value) for value in numbered(count))


@functools.cache
def _wire_numbered_deltas() -> tuple[bytes, ...]:
    return tuple(_pg_wire.parameter(value) for value in DELTAS)


class TpcbFlow(Flow):
    """One client connection and its transactions: pgbench's tpcb-like script, repeated."""

    def __init__(
        self, target: Target, scale: int, rng: random.Random, window: tuple[float, float]
    ) -> None:
        from psycopg import pq

        self.conn = db.connect_postgresql(target, autocommit=True)
        self.pgconn = self.conn.pgconn
        for name, sql, _ in (*SCRIPT, (b"tb_rollback", b"ROLLBACK", ())):
            result = self.pgconn.prepare(name, sql)
            if result.status != pq.ExecStatus.COMMAND_OK:
                raise RuntimeError(result.get_error_message())
        ok, tuples = int(pq.ExecStatus.COMMAND_OK), int(pq.ExecStatus.TUPLES_OK)
        # The status each step's result must have: rows for the SELECT, OK for the rest.
        self.expected = tuple(tuples if name == b"tb_select" else ok for name in NAMES)
        self.bad_connection = pq.ConnStatus.BAD
        self.send = self.pgconn.send_query_prepared
        self.get_result = self.pgconn.get_result
        self.draw = rng.random  # uniform draws in one C call each (see _choose)
        self.accounts, self.tellers = ACCOUNTS_PER_BRANCH * scale, TELLERS_PER_BRANCH * scale
        self.scale = scale
        self.teller_ids, self.branch_ids = numbered(self.tellers), numbered(scale)
        self.measure_from, self.deadline = window
        self.histogram = Histogram()
        # Latencies counted exactly, one dict update each; folded into the histogram
        # when the run ends (Histogram.record_counts).
        self.latencies: dict[int, int] = {}
        self.failed = 0
        self.began = 0.0
        self.fd = _pg_wire.usable_fd(self.pgconn)
        if self.fd is not None:  # made here, before the run starts (once per process)
            self.wire_tables = wire_tables(self.tellers, self.scale)

    def steps(self) -> Iterator[None]:
        """The protocol spoken on the socket where it can be (:mod:`._pg_wire`), else
        through libpq's calls: the same statements, answers and counts either way."""
        return self._libpq_steps() if self.fd is None else self._wire_steps(self.fd)

    def _wire_steps(self, fd: int) -> Iterator[None]:
        """:meth:`_libpq_steps` with each statement one write of the bytes libpq would
        send, each answer one read compared with the bytes a success is; anything else
        is read out by ``wire.rest`` (an error, a notice, a split answer)."""
        w = _pg_wire
        rest, write, read, size = w.Wire(fd).rest, os.write, os.read, w.READ_SIZE
        ok, rows_ok = w.COMMAND_OK, w.TUPLES_OK
        begin, end, rollback, began_ok, updated, inserted, ended_ok = _WIRE_FIXED
        heads, teller_ids, branch_ids, delta_values = self.wire_tables
        accounts_heads, select_heads, tellers_heads = heads[:3]
        branches_heads, history_heads = heads[3:]
        tail = w.BIND_TAIL
        # The SELECT's answer: its head (BindComplete, RowDescription) learned from the
        # first one, then one row and SELECT 1's tail; the row itself is not used.
        head, head_length, row_tail = b"\xff", 1, w.rows_tail(1)
        draw, clock, whole, number = self.draw, time.perf_counter, math.floor, w.parameter
        accounts, tellers, scale = float(self.accounts), float(self.tellers), float(self.scale)
        deltas = float(DELTA_COUNT)
        measure_from, deadline = self.measure_from, self.deadline
        latencies = self.latencies
        seen = latencies.get
        while (began := clock()) < deadline:
            # pgbench's choices, drawn as _libpq_steps draws them, encoded as Bind carries them.
            aid = number(b"%d" % (whole(draw() * accounts) + 1))
            bid = branch_ids[whole(draw() * scale)]
            tid = teller_ids[whole(draw() * tellers)]
            delta = delta_values[whole(draw() * deltas)]
            for _ in ONE_PASS:  # left at the first statement that fails
                write(fd, begin)
                yield
                if (data := read(fd, size)) != began_ok and (
                    result := (yield from rest(data))
                ).status != ok:
                    break
                write(fd, accounts_heads[len(delta) + len(aid)] + delta + aid + tail)
                yield
                if (data := read(fd, size)) != updated and (
                    result := (yield from rest(data))
                ).status != ok:
                    break
                write(fd, select_heads[len(aid)] + aid + tail)
                yield
                data = read(fd, size)
                if data[-20:] != row_tail or data[:head_length] != head:
                    if (result := (yield from rest(data))).status != rows_ok:
                        break
                    head, head_length = result.head, len(result.head)
                write(fd, tellers_heads[len(delta) + len(tid)] + delta + tid + tail)
                yield
                if (data := read(fd, size)) != updated and (
                    result := (yield from rest(data))
                ).status != ok:
                    break
                write(fd, branches_heads[len(delta) + len(bid)] + delta + bid + tail)
                yield
                if (data := read(fd, size)) != updated and (
                    result := (yield from rest(data))
                ).status != ok:
                    break
                write(
                    fd,
                    history_heads[len(tid) + len(bid) + len(aid) + len(delta)]
                    + tid + bid + aid + delta + tail,
                )  # fmt: skip
                yield
                if (data := read(fd, size)) != inserted and (
                    result := (yield from rest(data))
                ).status != ok:
                    break
                write(fd, end)
                yield
                if (data := read(fd, size)) != ended_ok and (
                    result := (yield from rest(data))
                ).status != ok:
                    break
            else:
                if began >= measure_from:
                    micros = whole((clock() - began) * 1e6)
                    latencies[micros] = seen(micros, 0) + 1
                continue
            # A lost connection raised ConnectionError in rest(): this is a failed statement.
            if began >= measure_from:
                self.failed += 1
            write(fd, rollback)
            yield
            yield from rest(read(fd, size))  # its answer, whatever it is
        self._fold()

    def _libpq_steps(self) -> Iterator[None]:
        """This client's transactions until the deadline, one yield per round trip
        (:class:`._pg_event_loop.Flow`). A failed statement rolls the transaction back
        and counts it, as the lone client's path (run_alone) does.

        The seven statements are written out, each answer checked where it is read: a
        loop over SCRIPT indexed three tables and called the parameter-choosing method
        per transaction, a fifth of the loop's instructions (docs/performance.md)."""
        pgconn = self.pgconn
        send, read, get_result = self.send, pgconn.consume_input, self.get_result
        ok, rows = self.expected[0], self.expected[2]
        draw, clock, whole = self.draw, time.perf_counter, math.floor
        # Floats: a float times a float is one specialised instruction, times an int a
        # generic call (the same product: these ints are exact as floats).
        accounts, tellers, scale = float(self.accounts), float(self.tellers), float(self.scale)
        deltas = float(DELTA_COUNT)
        teller_ids, branch_ids = self.teller_ids, self.branch_ids
        measure_from, deadline = self.measure_from, self.deadline
        latencies = self.latencies
        seen = latencies.get
        while (began := clock()) < deadline:
            # pgbench's choices, drawn as the lone client's (_choose; test_tpcb compares).
            aid = b"%d" % (whole(draw() * accounts) + 1)
            bid = branch_ids[whole(draw() * scale)]
            tid = teller_ids[whole(draw() * tellers)]
            delta = DELTAS[whole(draw() * deltas)]
            for _ in ONE_PASS:  # left at the first statement that fails
                send(b"tb_begin", None)
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status != ok:
                    break
                send(b"tb_accounts", (delta, aid))
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status != ok:
                    break
                send(b"tb_select", (aid,))
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status != rows:
                    break
                send(b"tb_tellers", (delta, tid))
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status != ok:
                    break
                send(b"tb_branches", (delta, bid))
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status != ok:
                    break
                send(b"tb_history", (tid, bid, aid, delta))
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status != ok:
                    break
                send(b"tb_end", None)
                yield
                read()
                if (result := get_result()) is None or get_result() is not None:
                    raise ConnectionError(NOT_ONE_ANSWER)
                if result.status != ok:
                    break
            else:
                if began >= measure_from:
                    micros = whole((clock() - began) * 1e6)
                    latencies[micros] = seen(micros, 0) + 1
                continue
            if pgconn.status == self.bad_connection:
                raise ConnectionError(result.get_error_message().strip() or "connection lost")
            if began >= measure_from:
                self.failed += 1
            send(b"tb_rollback", None)
            yield
            read()
            if get_result() is None or get_result() is not None:
                raise ConnectionError(NOT_ONE_ANSWER)
        self._fold()

    def _fold(self) -> None:
        self.histogram.record_counts(self.latencies)
        self.latencies = {}

    def run_alone(self) -> None:
        """A lone client's loop: libpq's blocking call per statement. The event loop
        gains nothing with one socket (a blocking call is a loop over it already) and
        costs an epoll call and a non-blocking read per round trip: seven per
        transaction, 0.88 x pgbench at one client where this path is at par. The seven
        calls are written out (no loop over the script, statuses compared as plain
        ints): at one client every instruction here is on the transaction's path."""
        execute = self.pgconn.exec_prepared
        ok, rows = self.expected[0], self.expected[2]
        clock = time.perf_counter
        latencies = self.latencies
        seen = latencies.get
        while (parameters := self._choose()) is not None:
            _, accounts, select, tellers, branches, history, _ = parameters
            if (
                (result := execute(b"tb_begin", None)).status == ok
                and (result := execute(b"tb_accounts", accounts)).status == ok
                and (result := execute(b"tb_select", select)).status == rows
                and (result := execute(b"tb_tellers", tellers)).status == ok
                and (result := execute(b"tb_branches", branches)).status == ok
                and (result := execute(b"tb_history", history)).status == ok
                and (result := execute(b"tb_end", None)).status == ok
            ):
                if self.began >= self.measure_from:
                    micros = int((clock() - self.began) * 1_000_000)
                    latencies[micros] = seen(micros, 0) + 1
                continue
            if self.pgconn.status == self.bad_connection:
                raise ConnectionError(result.get_error_message().strip() or "connection lost")
            if self.began >= self.measure_from:
                self.failed += 1
            execute(b"tb_rollback", None)
        self._fold()

    def _choose(self) -> tuple[tuple[bytes, ...] | None, ...] | None:
        """The next transaction's parameters, step by step; None once the deadline has passed."""
        began = time.perf_counter()
        if began >= self.deadline:
            return None
        self.began = began
        draw = self.draw
        # The same choices as pgbench's built-in tpcb-like script, uniform over the same
        # ranges (random() * n, floored: one C call where randint makes three Python
        # ones), and each step's parameters made once per transaction (this loop's CPU
        # is the engine's overhead).
        floor = math.floor  # an int as int() makes it, from a plain call, not a type's
        aid = b"%d" % (floor(draw() * self.accounts) + 1)
        bid = self.branch_ids[floor(draw() * self.scale)]
        tid = self.teller_ids[floor(draw() * self.tellers)]
        delta = DELTAS[floor(draw() * DELTA_COUNT)]
        # In SCRIPT's order, each with the parameters it takes (test_tpcb checks the two agree).
        return (None, (delta, aid), (aid,), (delta, tid), (delta, bid),
                (tid, bid, aid, delta), None)  # fmt: skip

    def close(self) -> None:
        self.conn.close()


def _worker(
    target: Target,
    scale: int,
    clients: int,
    seed: int,
    timing: tuple[float, float],
    go: Any,
    start: Any,
    results: Any,
) -> None:
    start_as_worker()
    warmup_s, duration_s = timing
    try:
        rngs = [random.Random(seed * 1000 + i) for i in range(clients)]  # noqa: S311 - load
        window = (0.0, 0.0)  # set once the start time is known
        flows = [TpcbFlow(target, scale, rng, window) for rng in rngs]
    except Exception as exc:  # reported to the parent, which raises
        results.put(("error", f"{type(exc).__name__}: {exc}"))
        return
    results.put(("ready", os.getpid()))
    go.wait()
    measure_from = start.value + warmup_s
    for flow in flows:
        flow.measure_from, flow.deadline = measure_from, measure_from + duration_s
    meter = ThreadMeter()
    # The loop allocates a few small objects per round trip and frees them at once
    # (reference counting); the cyclic collector would only walk them again.
    gc.disable()
    try:
        if len(flows) == 1:
            flows[0].run_alone()
        else:
            drive(flows)
    except Exception as exc:  # reported to the parent
        results.put(("error", f"{type(exc).__name__}: {exc}"))
        return
    finally:
        for flow in flows:
            flow.close()
    busy = share(*meter.stop())
    merged = Histogram.merged([flow.histogram for flow in flows])
    results.put(("done", (merged.to_dict(), sum(flow.failed for flow in flows), busy)))


def split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def run_load(
    target: Target, clients: int, scale: int, warmup_s: float, duration_s: float, seed: int
) -> tuple[Histogram, int, float]:
    """``clients`` connections over up to min(clients, CPUs, 8) worker processes: the merged
    histogram, the failed transactions and the busiest worker's CPU share (%)."""
    processes = max(1, min(clients, os.cpu_count() or 1, 8))
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    go, start, results = context.Event(), context.Value("d", 0.0), context.Queue()
    workers = [
        context.Process(
            target=_worker,
            args=(target, scale, n, seed * 100 + i, (warmup_s, duration_s), go, start, results),
            daemon=True,
        )
        for i, n in enumerate(split(clients, processes))
    ]
    for worker in workers:
        worker.start()
    try:
        _expect(results, workers, "ready", READY_TIMEOUT_S)
        start.value = time.perf_counter()
        go.set()
        reports = _expect(results, workers, "done", READY_TIMEOUT_S + warmup_s + duration_s)
    finally:
        stop(workers)
    histogram = Histogram.merged([Histogram.from_dict(h) for h, _, _ in reports])
    return histogram, sum(failed for _, failed, _ in reports), max(cpu for _, _, cpu in reports)


def _expect(results: Any, workers: list[Any], kind: str, timeout: float) -> list[Any]:
    found: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(found) < len(workers):
        try:
            got, payload = results.get(timeout=0.5)
        except queue.Empty:
            # A process writes its report before it exits: one that exited with an
            # error, or all of them gone with reports missing, will never report.
            crashed = any(w.exitcode not in (None, 0) for w in workers)
            gone = all(w.exitcode is not None for w in workers)
            if time.monotonic() > deadline or crashed or gone:
                raise RuntimeError(f"tpcb: a client process did not report ({kind})") from None
            continue
        if got == "error":
            raise RuntimeError(f"tpcb: a client could not run: {payload}")
        found.append(payload)
    return found
