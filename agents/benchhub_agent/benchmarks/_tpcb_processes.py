"""tpcb's MySQL/MariaDB load: threads in a few processes, through PyMySQL.

PyMySQL has no non-blocking API, so the event loop PostgreSQL gets
(:mod:`._tpcb_event_loop`) is not open to it: the clients are threads spread
over up to min(clients, CPUs, 8) processes, each running pgbench's built-in
tpcb-like transaction, and the parent merges their histograms.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import threading
import time
from typing import Any

from ..histogram import Histogram
from . import _connections as dbc
from ._tpcb_event_loop import ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH
from .base import Target

WORKER_START_TIMEOUT_S = 60.0


TPCB_STATEMENTS = (
    "UPDATE pgbench_accounts SET abalance = abalance + %(delta)s WHERE aid = %(aid)s",
    "SELECT abalance FROM pgbench_accounts WHERE aid = %(aid)s",
    "UPDATE pgbench_tellers SET tbalance = tbalance + %(delta)s WHERE tid = %(tid)s",
    "UPDATE pgbench_branches SET bbalance = bbalance + %(delta)s WHERE bid = %(bid)s",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime)"
    " VALUES (%(tid)s, %(bid)s, %(aid)s, %(delta)s, CURRENT_TIMESTAMP)",
)


def _transaction_parameters(rng: random.Random, scale: int) -> dict[str, int]:
    # The same random choices as pgbench's built-in tpcb-like script.
    return {
        "aid": rng.randint(1, ACCOUNTS_PER_BRANCH * scale),
        "bid": rng.randint(1, scale),
        "tid": rng.randint(1, TELLERS_PER_BRANCH * scale),
        "delta": rng.randint(-5000, 5000),
    }


def _run_transaction(conn: Any, engine: str, params: dict[str, int]) -> None:
    with conn.cursor() as cur:
        for statement in TPCB_STATEMENTS:
            if engine == "postgresql":
                # Server-side prepared statements, as pgbench -M prepared.
                cur.execute(statement, params, prepare=True)
            else:
                cur.execute(statement, params)
            if statement.startswith("SELECT"):
                cur.fetchall()
    conn.commit()


def _client(
    target: Target,
    scale: int,
    timing: tuple[float, float],
    seed: int,
    barrier: Any,
    reports: list[tuple[Histogram, int, str | None]],
) -> None:
    """One client: connect, wait for the others, loop until the deadline, report."""
    warmup_s, duration_s = timing
    histogram = Histogram()
    failed = 0
    error: str | None = None
    try:
        conn = dbc.connect(target, autocommit=False)
        rng = random.Random(seed)  # noqa: S311 - load, not secrets
        barrier.wait(WORKER_START_TIMEOUT_S)
        measure_from = time.perf_counter() + warmup_s
        deadline = measure_from + duration_s
        while True:
            started = time.perf_counter()
            if started >= deadline:
                break
            try:
                _run_transaction(conn, target.engine, _transaction_parameters(rng, scale))
            except Exception:  # a failed transaction is counted, not fatal
                conn.rollback()
                if started >= measure_from:
                    failed += 1
                continue
            if started >= measure_from:
                histogram.record(int((time.perf_counter() - started) * 1_000_000))
        conn.close()
    except Exception as exc:  # reported to the parent, which raises
        error = f"{type(exc).__name__}: {exc}"
    reports.append((histogram, failed, error))


def _worker(
    target: Target,
    scale: int,
    timing: tuple[float, float],
    seeds: list[int],
    barrier: Any,
    results: Any,
) -> None:
    """One process: a thread per client (PyMySQL releases the GIL while it waits on its
    socket), their histograms merged into one report."""
    reports: list[tuple[Histogram, int, str | None]] = []
    threads = [
        threading.Thread(target=_client, args=(target, scale, timing, seed, barrier, reports))
        for seed in seeds
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [error for _, _, error in reports if error]
    merged = Histogram.merged([histogram for histogram, _, _ in reports])
    results.put((merged, sum(failed for _, failed, _ in reports), errors[0] if errors else None))


def run_agent_load(
    target: Target, clients: int, scale: int, warmup_s: float, duration_s: float, seed: int
) -> tuple[Histogram, int]:
    """``clients`` connections over min(clients, CPUs, 8) processes; merged histogram and
    failure count. One process per client cost more than the database on a small machine
    (0.17 x sysbench at 32 clients on 2 vCPUs)."""
    processes = max(1, min(clients, os.cpu_count() or 1, 8))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(clients)
    results = context.Queue()
    seeds = [seed * 1000 + i for i in range(clients)]
    workers = [
        context.Process(
            target=_worker,
            args=(target, scale, (warmup_s, duration_s), seeds[i::processes], barrier, results),
            daemon=True,
        )
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    merged, failed, errors = Histogram(), 0, []
    deadline = time.monotonic() + WORKER_START_TIMEOUT_S + warmup_s + duration_s + 60.0
    for _ in workers:
        histogram, worker_failed, error = _next_result(results, workers, deadline)
        merged.merge(histogram)
        failed += worker_failed
        if error:
            errors.append(error)
    for worker in workers:
        worker.join(10)
    if errors:
        raise RuntimeError(f"tpcb: {len(errors)} client(s) could not run: {errors[0]}")
    return merged, failed


def _next_result(results: Any, workers: list[Any], deadline: float) -> Any:
    """The next worker's report; fails fast when a worker died without reporting."""
    while True:
        try:
            return results.get(timeout=0.5)
        except queue.Empty:
            pass
        crashed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
        if crashed or all(w.exitcode is not None for w in workers):
            # A worker flushes its report before it exits, so the queue would not be empty.
            raise RuntimeError(f"tpcb: client processes exited without reporting {crashed}")
        if time.monotonic() > deadline:
            raise RuntimeError("tpcb: the client processes did not finish in time")
