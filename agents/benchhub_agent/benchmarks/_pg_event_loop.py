"""select-update's PostgreSQL clients: one non-blocking event loop per worker process.

Threads cost a GIL hand-over per round trip; with 16 clients per process that
hand-over, not Python, is what limits the agent. So for PostgreSQL a worker
process drives all its connections from one loop, as pgbench's threads do:
each query is sent with ``send_query_prepared`` and the loop waits (epoll) for
whichever socket answers first. Still four round trips per transaction, like
pgbench, and the latency of a transaction is measured the same way.

MariaDB/MySQL keep one thread per client (select_update._client_loop): PyMySQL
has no non-blocking API.
"""

from __future__ import annotations

import random
import select
import time
from dataclasses import dataclass, field
from typing import Any

from ..histogram import Histogram

MAX_ATTEMPTS = 10  # a transaction retried this often counts as an error
MAX_CONSECUTIVE_ERRORS = 1000  # a client failing this often in a row stops the run
# PostgreSQL: serialization failure, deadlock, lock not available: run the transaction again.
RETRYABLE_SQLSTATES = (b"40001", b"40P01", b"55P03")
# Only another program touching the table makes a row vanish mid-run.
MISSING_ROW = "row c1=%d is missing: is another run using the table at the same time?"


@dataclass
class ClientTally:
    histogram: Histogram = field(default_factory=Histogram)
    committed: int = 0  # all commits, warm-up included: what the table's sum must show
    errors: int = 0
    retries: int = 0
    ended_at: float = 0.0


BEGIN, SELECT, UPDATE, COMMIT, ROLLBACK = range(5)


NOT_ONE_ANSWER = "connection lost: not one answer to the statement"


class Flow:
    """A client of the loop: a libpq connection (``pgconn``) with one statement in flight.

    Subclasses send the first statement in ``start`` (False: nothing more to run), and
    ``readable``, called once the socket has data, takes the statement's answer with
    two ``get_result`` calls (its result, then None) and acts on it (False: finished).
    The server sends a statement's whole answer (its result, then ReadyForQuery) in one
    write, so once the socket is readable ``get_result`` reads it without waiting: two
    libpq calls per round trip where consume_input, is_busy and get_result twice took
    five, each giving up and taking back the GIL. An answer split in transit is waited
    for by ``get_result`` itself (the loop pauses for it; nothing is lost). The answer
    is taken in ``readable`` itself, not in a shared method: one Python call less per
    round trip. A lost connection answers with an error result; none at all, or a
    second one to a single statement, raises ConnectionError(NOT_ONE_ANSWER).
    """

    pgconn: Any

    def start(self) -> bool:
        raise NotImplementedError

    def readable(self) -> bool:
        raise NotImplementedError


def drive(flows: list[Any]) -> None:
    """Run every flow until each has finished: epoll on Linux, select() elsewhere."""
    running = {flow.pgconn.socket: flow.readable for flow in flows if flow.start()}
    if not hasattr(select, "epoll"):
        while running:
            ready, _, _ = select.select(list(running), [], [], 1.0)
            for fd in ready:
                if not running[fd]():
                    del running[fd]
        return
    with select.epoll() as poller:
        for fd in running:
            poller.register(fd, select.EPOLLIN)
        poll = poller.poll
        while running:
            for fd, _events in poll(1.0):
                if not running[fd]():
                    poller.unregister(fd)
                    del running[fd]


class PostgresFlow(Flow):
    """One client of the event loop: its connection and where its transaction stands.

    idle → BEGIN → SELECT → UPDATE → COMMIT → idle. An error result on the way
    sends ROLLBACK; once that completes the transaction is run again with the
    same key (serialization failure, deadlock, lock timeout; up to MAX_ATTEMPTS)
    or counted as failed. A lost connection raises ConnectionError, which stops
    the run with its reason.
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
        self.send = client.pgconn.send_query_prepared
        self.get_result = client.pgconn.get_result
        self.keys = client.keys
        self.selects = [(key,) for key in client.keys]  # the SELECT's parameters, made once
        self.ok_status = client.ok_status
        self.tuples_status = client.tuples_status
        self.quota = quota
        self.window_start, self.deadline = window
        self.progress = progress
        self.slot = slot
        self.draw = rng.random  # uniform over the keys in one C call
        self.tally = ClientTally()
        # Latencies counted exactly, one dict update each, folded into the histogram at
        # the end (Histogram.record_counts).
        self.latencies: dict[int, int] = {}
        self.done = 0
        self.consecutive_errors = 0
        self.state = BEGIN
        self.key = 0
        self.param = b""
        self.began = 0.0
        self.attempts = 0
        self.failure: str | None = None  # why the transaction being rolled back failed

    def start(self) -> bool:
        """Begin the next transaction; False when this client has no more to run."""
        began = time.perf_counter()
        if (self.quota is not None and self.done >= self.quota) or (
            self.deadline is not None and began >= self.deadline
        ):
            self.progress[self.slot] = self.done
            self.tally.ended_at = began
            self.tally.histogram.record_counts(self.latencies)
            return False
        self.began = began
        index = int(self.draw() * len(self.keys))
        self.key = index + 1
        self.param = self.keys[index]
        self.attempts = 0
        self.state = BEGIN
        self.send(b"bh_begin", None)
        return True

    def readable(self) -> bool:
        get_result = self.get_result
        result = get_result()
        if result is None or get_result() is not None:
            raise ConnectionError(NOT_ONE_ANSWER)
        state = self.state
        if state == ROLLBACK:
            return self._rolled_back()
        if result.status != (self.tuples_status if state == SELECT else self.ok_status):
            return self._error(result)
        if state == BEGIN:
            self.state = SELECT
            self.send(b"bh_select", self.selects[self.key - 1])
        elif state == SELECT:
            if result.ntuples != 1:
                self.failure = MISSING_ROW % self.key
                self.state = ROLLBACK
                self.send(b"bh_rollback", None)
            else:
                self.state = UPDATE  # the UPDATE adds the 1 (PostgresClient)
                self.send(b"bh_update", (result.get_value(0, 0), self.param))
        elif state == UPDATE:
            self.state = COMMIT
            self.send(b"bh_commit", None)
        else:  # COMMIT
            ended = time.perf_counter()
            self.tally.committed += 1
            self.consecutive_errors = 0
            if self.deadline is None or self.window_start <= ended <= self.deadline:
                micros = int((ended - self.began) * 1_000_000)
                self.latencies[micros] = self.latencies.get(micros, 0) + 1
            return self._next()
        return True

    def _error(self, result: Any) -> bool:
        from psycopg import pq

        message = result.get_error_message()
        sqlstate = result.error_field(pq.DiagnosticField.SQLSTATE) or b""
        if self.pgconn.status != pq.ConnStatus.OK or sqlstate[:2] in (b"08", b"57"):
            raise ConnectionError(message.strip() or "connection lost")
        self.failure = None if sqlstate in RETRYABLE_SQLSTATES else message
        self.state = ROLLBACK
        self.send(b"bh_rollback", None)
        return True

    def _rolled_back(self) -> bool:
        tally = self.tally
        if self.failure is None:  # retryable
            tally.retries += 1
            self.attempts += 1
            if self.attempts < MAX_ATTEMPTS:
                self.state = BEGIN
                self.send(b"bh_begin", None)
                return True
            tally.errors += 1
        else:
            tally.errors += 1
            self.consecutive_errors += 1
            if self.consecutive_errors >= MAX_CONSECUTIVE_ERRORS:
                raise RuntimeError(
                    f"{self.consecutive_errors} transactions failed in a row: {self.failure}"
                )
        return self._next()

    def _next(self) -> bool:
        self.done += 1
        if self.done & 15 == 0:
            self.progress[self.slot] = self.done
        return self.start()


def event_loop(clients: list[Any], plan: Any, start: Any, progress: Any) -> list[ClientTally]:
    """Drive every connection of this worker process until each has finished."""
    window_start = start.value + plan.warmup
    window = (window_start, window_start + plan.duration if plan.duration is not None else None)
    flows = [
        PostgresFlow(
            client,
            plan.quotas[index],
            window,
            progress,
            plan.first_client + index,
            random.Random(plan.seed * 1000 + index),  # noqa: S311 — a workload, not a secret
        )
        for index, client in enumerate(clients)
    ]
    drive(flows)
    return [flow.tally for flow in flows]
