"""select-update's PostgreSQL clients in the agent's compiled loop (``_pg_loop.c``), and the
layout that gives it the cores: one worker process, a thread per core, each running its
connections' round trips without the GIL, as pgbench -j runs its threads.

Python keeps what the Python loop (``_pg_event_loop.PostgresFlow._wire_steps``) does
besides the round trips: it draws each connection's keys (the same numbers in the same
order, a chunk at a time), reads an answer that was not the success expected with
``_pg_wire``, rolls back, retries or gives up, and counts, exactly as that loop. Where the
module was not built, or a connection's bytes are not the protocol's (TLS, GSS), each
thread runs the Python loop instead.
"""

from __future__ import annotations

import math
import os
import random
import select
import threading
import time
from collections import Counter
from collections.abc import Generator
from typing import Any

from . import _pg_wire
from ._engine_cpu import ThreadMeter, process_share, share
from ._pg_event_loop import (
    _WIRE_TRANSACTION,
    MAX_ATTEMPTS,
    ClientTally,
    PostgresFlow,
    _wire_failure,
    drive,
    given_up,
)

CHUNK = 16  # keys a connection is given at once: progress and stop are read between


def compiled_loop() -> Any:
    """The agent's compiled PostgreSQL loop (benchmarks/_pg_loop.c), or None where it was
    not built (no C compiler or Python headers at install, Windows)."""
    try:
        from . import _pg_loop
    except ImportError:
        return None
    return _pg_loop


def loop_note(client_loop: str) -> str:
    """Which loop ran a PostgreSQL run's transactions: the agent's CPU differs, not the
    server's work."""
    if client_loop != "events":
        return "PostgreSQL clients: a thread each, through libpq (--client-loop threads)."
    if compiled_loop() is None:
        return (
            "PostgreSQL clients: transactions run by the agent's Python loop (its compiled "
            "loop was not built when the agent was installed: no C compiler or Python headers)."
        )
    return (
        "PostgreSQL clients: transactions run by the agent's compiled loop (C), a thread per "
        "core in one worker process unless --processes says otherwise (the Python loop "
        "where a connection is encrypted: TLS or GSS)."
    )


def statements(flow: PostgresFlow) -> tuple[Any, ...]:
    """What the compiled loop sends and expects, as _wire_steps has them."""
    begin, commit, _rollback, began, updated, committed = _WIRE_TRANSACTION
    selects, keyed, key_lengths, update_heads = flow.wire_statements
    return (
        begin, commit, began, updated, committed, _pg_wire.rows_tail(1),
        tuple(selects), tuple(keyed), tuple(key_lengths), tuple(update_heads),
    )  # fmt: skip


class _Client:
    """One connection's count and keys between the compiled loop's returns."""

    def __init__(self, flow: PostgresFlow) -> None:
        self.flow, self.wire = flow, _pg_wire.Wire(flow.fd)
        self.rows, self.draw = float(len(flow.client.keys)), flow.rng.random
        self.keys: list[int] = []
        self.position = 0  # of the key the loop runs in its chunk
        self.latencies: Counter[int] = Counter()
        self.done = self.drawn = self.committed = self.attempts = self.failed_in_a_row = 0

    def next_keys(self) -> list[int] | None:
        """Its next chunk of key indexes, drawn as the Python loop draws them; None when
        its quota is done."""
        quota = self.flow.quota
        count = CHUNK if quota is None else min(CHUNK, quota - self.drawn)
        draw, rows, whole = self.draw, self.rows, math.floor
        self.keys = [whole(draw() * rows) for _ in range(count)]
        self.drawn += count
        self.position = 0
        return self.keys or None


def drive_compiled(module: Any, flows: list[PostgresFlow], stop: threading.Event) -> None:
    """Run every flow's transactions in ``module``'s loop until each has finished, or
    another thread of the process failed (``stop``)."""
    window_start, deadline = flows[0].window
    called = time.perf_counter()
    until = math.inf if deadline is None else deadline - called
    loop = module.Loop(
        tuple(flow.fd for flow in flows), statements(flows[0]), until, window_start - called
    )
    clients = [_Client(flow) for flow in flows]
    running = 0
    for index, client in enumerate(clients):
        if (keys := client.next_keys()) is not None:
            loop.keys(index, keys)
            running += 1
    while running and not stop.is_set():
        reports = loop.run()
        if not reports:
            raise RuntimeError("the compiled loop returned with no connection waiting")
        for index, reason, answer, micros in reports:
            client = clients[index]
            if micros:
                client.latencies.update(micros)
                client.committed += len(micros)
                client.done += len(micros)
                client.position += len(micros)
                client.attempts = client.failed_in_a_row = 0
            if reason == module.DONE:
                if (keys := client.next_keys()) is not None:
                    loop.keys(index, keys)
                else:
                    running -= 1
            elif reason == module.TIME_UP:
                running -= 1
            else:
                _answered(module, loop, index, client, reason, answer)
            client.flow.progress[client.flow.slot] = client.done
    ended = time.perf_counter()
    for client in clients:
        tally: ClientTally = client.flow.tally
        client.latencies.pop(-1, None)  # committed outside the window
        tally.committed = client.committed
        tally.histogram.record_counts(client.latencies)
        tally.ended_at = ended


def _answered(
    module: Any, loop: Any, index: int, client: _Client, statement: int, answer: bytes | int
) -> None:
    """An answer that was not the success expected, taken as the Python loop takes it: a
    success after all goes on; else roll back, then retry the key or give it up."""
    if isinstance(answer, int):  # the socket's write or read failed
        raise ConnectionError(f"connection lost: {os.strerror(answer)}")
    w, wire = _pg_wire, client.wire
    result = _whole(wire, answer)
    if statement == module.SELECT:
        if result.status == w.TUPLES_OK and len(result.rows) == 1:
            value = w.parameter(result.rows[0][0] or b"")
            loop.proceed(index, value, result.head)
            return
    elif result.status == w.COMMAND_OK:
        loop.proceed(index)
        return
    failure = _wire_failure(result, client.keys[client.position] + 1)
    os.write(wire.fd, _WIRE_TRANSACTION[2])  # ROLLBACK
    _whole(wire, _read(wire.fd))  # its answer, whatever it is
    if failure is None:  # retryable: the same key again, up to MAX_ATTEMPTS runs
        client.flow.tally.retries += 1
        client.attempts += 1
        if client.attempts < MAX_ATTEMPTS:
            loop.retry(index)
            return
    client.failed_in_a_row = given_up(client.flow.tally, failure, client.failed_in_a_row)
    client.done += 1
    client.position += 1
    client.attempts = 0
    loop.skip(index)


def _read(fd: int) -> bytes:
    _wait(fd)
    return os.read(fd, _pg_wire.READ_SIZE)


def _wait(fd: int) -> None:
    """Until ``fd`` is readable (poll: select() takes no descriptor past 1023)."""
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    waiting.poll()


def _whole(wire: _pg_wire.Wire, data: bytes) -> _pg_wire.Answer:
    """``wire.rest`` waited for here: the rest of an answer is already on its way (a
    split in transit), and ROLLBACK waits for no lock, so the thread's other connections
    lose no more than that wait."""
    steps: Generator[None, None, _pg_wire.Answer] = wire.rest(data)
    try:
        while True:
            next(steps)
            _wait(wire.fd)
    except StopIteration as finished:
        return finished.value


def run_threads(flows: list[PostgresFlow], threads: int) -> tuple[list[str], float]:
    """Every flow driven by ``threads`` threads of this process, each over a share of the
    connections: in the compiled loop where it is built and each connection's socket
    can take the protocol directly, else the Python loop. Returns the failures (the first
    stops the others at their next chunk) and the process's engine CPU share: the busiest
    compiled thread's (each holds a core, not the GIL), else the threads' sum."""
    module = compiled_loop()
    groups = [flows[start::threads] for start in range(min(threads, len(flows)))]
    failures: list[str] = []
    readings: list[tuple[float, float]] = []
    stop = threading.Event()
    compiled = module is not None and all(flow.fd is not None for flow in flows)

    def run(group: list[PostgresFlow]) -> None:
        meter = ThreadMeter()
        try:
            if compiled:
                drive_compiled(module, group, stop)
            elif len(group) == 1:  # libpq's blocking calls: no poll per round trip
                flow = group[0]
                flow.tally = flow.client.run_alone(
                    flow.quota, flow.window, flow.rng, flow.progress, flow.slot, stop
                )
            else:
                drive(group)
        except Exception as exc:  # reported to the parent
            failures.append(f"{type(exc).__name__}: {exc}")
            stop.set()
            for flow in group:  # its open transactions' locks go with the connections
                flow.client.close()
        readings.append(meter.stop())

    if len(groups) == 1:
        run(groups[0])
    else:
        started = [threading.Thread(target=run, args=(group,)) for group in groups]
        for thread in started:
            thread.start()
        for thread in started:
            thread.join()
    if compiled:
        return failures, max(share(busy, wall) for busy, wall in readings)
    return failures, process_share(readings)


def event_loop(
    clients: list[Any], plan: Any, start: Any, progress: Any
) -> tuple[list[ClientTally], list[str], float]:
    """Drive every connection of this worker process until each has finished, in
    ``plan.threads`` threads (:func:`run_threads`): the tallies, the failures and the
    process's engine CPU share."""
    window_start = start.value + plan.warmup
    window = (window_start, window_start + plan.duration if plan.duration is not None else None)
    try:
        flows = [
            PostgresFlow(
                client,
                plan.quotas[index],
                window,
                progress,
                plan.first_client + index,
                # A workload, not a secret; from the client's number, not its place.
                random.Random(plan.seed * 1000 + plan.first_client + index),  # noqa: S311
            )
            for index, client in enumerate(clients)
        ]
    except Exception as exc:  # reported to the parent
        return [], [f"{type(exc).__name__}: {exc}"], 0.0
    failures, engine_cpu = run_threads(flows, plan.threads)
    return [flow.tally for flow in flows], failures, engine_cpu
