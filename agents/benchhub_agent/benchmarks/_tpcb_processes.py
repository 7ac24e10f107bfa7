"""tpcb's MySQL/MariaDB and Firebird load: threads in a few processes.

The clients are threads spread over up to min(clients, CPUs, 8) processes, each running
pgbench's built-in tpcb-like transaction in a loop as sysbench runs it (BEGIN, the three
UPDATEs, the SELECT, the INSERT, COMMIT: seven round trips over the text protocol), and
the parent merges their histograms.

The driver decides how much of a core each round trip costs the engine:
``mysqlclient`` (MySQLdb, MariaDB's C client library: C parsing, the GIL released for the
whole round trip) when it is installed, as sysbench's C client; PyMySQL, pure Python,
otherwise (0.74 x sysbench at 32 clients on 2 vCPUs: its protocol code, under the GIL,
cost more than the database). ``mysql_driver`` names the one used; ``--mysql-driver``
chooses. Firebird's clients call libfbclient's ISC API through ctypes (:mod:`..firebird_isc`,
the GIL released for each call), with the statements prepared once.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import threading
import time
from typing import Any

from .. import db
from ..histogram import Histogram
from ._connections import mysql_driver
from ._engine_cpu import ThreadMeter, process_share
from ._tpcb_event_loop import ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH
from ._worker_processes import start_as_worker, stop
from .base import Target

WORKER_START_TIMEOUT_S = 60.0

# The statements of one transaction, filled in with %-formatting of integers only.
BEGIN, COMMIT, ROLLBACK = b"BEGIN", b"COMMIT", b"ROLLBACK"
ACCOUNTS = b"UPDATE pgbench_accounts SET abalance = abalance + %d WHERE aid = %d"
SELECT = b"SELECT abalance FROM pgbench_accounts WHERE aid = %d"
TELLERS = b"UPDATE pgbench_tellers SET tbalance = tbalance + %d WHERE tid = %d"
BRANCHES = b"UPDATE pgbench_branches SET bbalance = bbalance + %d WHERE bid = %d"
HISTORY = (
    b"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)"
    b" VALUES (%d, %d, %d, %d, CURRENT_TIMESTAMP)"
)


class Client:
    """One connection running the transaction; ``run`` raises on a failed statement."""

    def __init__(self, target: Target, driver: str) -> None:
        args = db.mysql_connect_args(target)
        if driver == "mysqlclient":
            import MySQLdb

            self.conn = MySQLdb.connect(**args, autocommit=True)
            self.query = self.conn.query
            # Bound once: each attribute read on a MySQLdb connection goes through its own
            # getattro, on every transaction's path otherwise.
            store_result = self.conn.store_result
            self.rows = lambda: store_result().fetch_row()
        else:
            self.conn = db.mysql_module().connect(**args, autocommit=True)
            # PyMySQL's own round trip; the result set is read with the answer.
            self.query = self.conn.query
            self.rows = lambda: None

    def run(self, aid: int, bid: int, tid: int, delta: int) -> None:
        query = self.query
        query(BEGIN)
        query(ACCOUNTS % (delta, aid))
        query(SELECT % aid)
        self.rows()
        query(TELLERS % (delta, tid))
        query(BRANCHES % (delta, bid))
        query(HISTORY % (tid, bid, aid, delta))
        query(COMMIT)

    def rollback(self) -> None:
        self.query(ROLLBACK)

    def close(self) -> None:
        self.conn.close()


class FirebirdClient:
    """One firebird-driver connection, the five statements prepared once. A transaction
    that meets an update conflict (another client changed the branch or teller row and
    committed while this one waited: Firebird 3 does not re-read it as PostgreSQL does)
    is rolled back and run again with the same values, as pgbench --max-tries retries a
    serialization failure; each retry is counted."""

    MAX_TRIES = 10

    def __init__(self, target: Target) -> None:
        from .. import firebird_db, firebird_isc

        self.errors = firebird_db.module()
        self.retryable = firebird_db.RETRYABLE_SQLSTATES
        self.session = firebird_isc.Session(target)  # the library's ISC calls, direct
        self.statements = [
            self.session.prepare(firebird_db.firebird_sql(sql.decode().replace("%d", "%s")))
            for sql in (ACCOUNTS, SELECT, TELLERS, BRANCHES, HISTORY)
        ]
        self.retries = 0

    def run(self, aid: int, bid: int, tid: int, delta: int) -> None:
        accounts, select, tellers, branches, history = self.statements
        for attempt in range(self.MAX_TRIES):
            try:
                accounts.execute((delta, aid))
                select.execute((aid,))  # the row comes with the execute
                tellers.execute((delta, tid))
                branches.execute((delta, bid))
                history.execute((tid, bid, aid, delta))
                self.session.commit()
                return
            except self.errors.DatabaseError as exc:
                if exc.sqlstate not in self.retryable or attempt + 1 == self.MAX_TRIES:
                    raise  # the caller rolls back, as for the MySQL/MariaDB client
                self.rollback()  # what ran before the conflict is not applied twice
                self.retries += 1

    def rollback(self) -> None:
        self.session.rollback()

    def close(self) -> None:
        self.session.close()


def _open(target: Target, driver: str) -> Client | FirebirdClient:
    return FirebirdClient(target) if target.engine == "firebird" else Client(target, driver)


def _client(
    target: Target,
    driver: str,
    scale: int,
    timing: tuple[float, float],
    seed: int,
    barrier: Any,
    reports: list[tuple[Histogram, int, str | None, tuple[float, float], int]],
) -> None:
    """One client: connect, wait for the others, loop until the deadline, report."""
    warmup_s, duration_s = timing
    histogram = Histogram()
    failed = 0
    error: str | None = None
    reading = (0.0, 0.0)
    retries = 0
    try:
        client = _open(target, driver)
        draw = random.Random(seed).random  # noqa: S311 - load, not secrets
        accounts, tellers = ACCOUNTS_PER_BRANCH * scale, TELLERS_PER_BRANCH * scale
        latencies: dict[int, int] = {}  # exact µs → count, folded into the histogram after
        clock = time.perf_counter
        barrier.wait(WORKER_START_TIMEOUT_S)
        meter = ThreadMeter()
        measure_from = clock() + warmup_s
        deadline = measure_from + duration_s
        while True:
            started = clock()
            if started >= deadline:
                break
            # The same random choices as pgbench's built-in tpcb-like script, uniform over
            # the same ranges: random() scaled and floored, one C call where randint makes
            # three Python ones (this loop's CPU is the engine's overhead).
            aid, bid = int(draw() * accounts) + 1, int(draw() * scale) + 1
            tid, delta = int(draw() * tellers) + 1, int(draw() * 10_001) - 5000
            try:
                client.run(aid, bid, tid, delta)
            except Exception:  # a failed transaction is counted, not fatal
                client.rollback()
                if started >= measure_from:
                    failed += 1
                continue
            if started >= measure_from:
                micros = int((clock() - started) * 1_000_000)
                latencies[micros] = latencies.get(micros, 0) + 1
        reading = meter.stop()
        histogram.record_counts(latencies)
        retries = getattr(client, "retries", 0)
        client.close()
    except Exception as exc:  # reported to the parent, which raises
        error = f"{type(exc).__name__}: {exc}"
    reports.append((histogram, failed, error, reading, retries))


def _worker(
    target: Target,
    driver: str,
    scale: int,
    timing: tuple[float, float],
    seeds: list[int],
    barrier: Any,
    results: Any,
) -> None:
    """One process: a thread per client (both drivers release the GIL while they wait on
    the socket), their histograms merged into one report."""
    start_as_worker()
    reports: list[tuple[Histogram, int, str | None, tuple[float, float], int]] = []
    threads = [
        threading.Thread(
            target=_client, args=(target, driver, scale, timing, seed, barrier, reports)
        )
        for seed in seeds
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [report[2] for report in reports if report[2]]
    merged = Histogram.merged([report[0] for report in reports])
    cpu = process_share(report[3] for report in reports)
    failed = sum(report[1] for report in reports)
    retries = sum(report[4] for report in reports)
    results.put((merged, failed, errors[0] if errors else None, cpu, retries))


def run_agent_load(
    target: Target,
    clients: int,
    scale: int,
    warmup_s: float,
    duration_s: float,
    seed: int,
    driver: str | None = None,
) -> tuple[Histogram, int, float, int]:
    """``clients`` connections over min(clients, CPUs, 8) processes: the merged histogram,
    the failed transactions, the busiest process's CPU share (%) and the retried update
    conflicts (Firebird). One process per client cost more than the database on a small
    machine (0.17 x sysbench at 32 clients on 2 vCPUs)."""
    driver = "firebird-driver" if target.engine == "firebird" else mysql_driver(driver)
    processes = max(1, min(clients, os.cpu_count() or 1, 8))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(clients)
    results = context.Queue()
    seeds = [seed * 1000 + i for i in range(clients)]
    timing = (warmup_s, duration_s)
    workers = [
        context.Process(
            target=_worker,
            args=(target, driver, scale, timing, seeds[i::processes], barrier, results),
            daemon=True,
        )
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    merged, failed, errors, busiest, retries = Histogram(), 0, [], 0.0, 0
    deadline = time.monotonic() + WORKER_START_TIMEOUT_S + warmup_s + duration_s + 60.0
    try:
        for _ in workers:
            histogram, worker_failed, error, cpu, worker_retries = _next_result(
                results, workers, deadline
            )
            merged.merge(histogram)
            failed += worker_failed
            retries += worker_retries
            busiest = max(busiest, cpu)
            if error:
                errors.append(error)
        for worker in workers:
            worker.join(10)
    finally:
        stop(workers)
    if errors:
        raise RuntimeError(f"tpcb: {len(errors)} client(s) could not run: {errors[0]}")
    return merged, failed, busiest, retries


def _next_result(results: Any, workers: list[Any], deadline: float) -> Any:
    """The next worker's report; fails fast when a worker died without reporting."""
    while True:
        try:
            return results.get(timeout=0.5)
        except queue.Empty:
            pass
        crashed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
        if crashed or all(w.exitcode is not None for w in workers):
            # A worker flushes its report before it exits: one that exited
            # since the wait above left it in the queue, read now.
            try:
                return results.get(timeout=1.0)
            except queue.Empty:
                pass
            raise RuntimeError(f"tpcb: client processes exited without reporting {crashed}")
        if time.monotonic() > deadline:
            raise RuntimeError("tpcb: the client processes did not finish in time")
