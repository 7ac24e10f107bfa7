"""select-update (seed 004): SELECT a random row by key, UPDATE it to the value read + 1, COMMIT.

A table of 100 rows ``(c1 int primary key, c2 int)``; a fixed number of
transactions (10,000 by default) shared by N concurrent clients, N swept; or,
with ``--duration``, as many as fit in a fixed time after a warm-up.

So that the figures describe the database and not the agent, the clients run
in several worker processes (one Python interpreter cannot drive a fast server
from many threads; PostgreSQL's compiled loop runs a thread per core in one, as
pgbench -j), PostgreSQL statements are server-side prepared, and every client
records latencies into its own histogram, merged afterwards (never averaged).

On PostgreSQL the statements are prepared on the freshly reset table, so the
generic plan each connection caches after five executions is a sequential
scan of its one page, and it stays while updates grow the table; a client
that connects later, on the grown table, gets an index scan and other
figures (docs/performance.md, "Agent overhead").

With ``--locking for_update`` (default) the row is locked by the SELECT, so
the sum of c2 must equal the committed transactions; a mismatch aborts the
run. With ``--locking none`` two clients may read the same value and one
increment is lost; the run reports how many.

Over 500 lines because the worker-process orchestration (plans, start, collection,
the table check) and the result building belong to this one workload; the engines'
clients and the PostgreSQL event loop are in ``_select_update_clients`` and
``_pg_event_loop``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import multiprocessing
import os
import queue
import random
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import db, placement
from ..histogram import Histogram
from ..output import say
from . import _connections as dbc
from . import _pg_compiled
from ._engine_cpu import ThreadMeter, point_note, process_share
from ._pg_compiled import event_loop, loop_note
from ._pg_event_loop import MAX_ATTEMPTS, MAX_CONSECUTIVE_ERRORS, ClientTally
from ._select_update_clients import (  # TABLE: part of this module's interface
    ROWS,
    TABLE,
    Failed,
    FirebirdClient,
    MySQLClient,
    PostgresClient,
    Retryable,
    firebird_loop_note,
    invariant_note,
    open_client,
    reset_table,
    table_total,
)
from ._worker_processes import start_as_worker, stop
from .base import BenchmarkResult, Measurement, Progress, Target

NAME = "select-update"
OWN_TABLES = (TABLE,)  # MySQL/MariaDB: dropped after the run unless --keep
VERSION = "1"
ENGINES = frozenset({"postgresql", "mysql", "mariadb", "firebird"})
LOAD_OPTIONS = frozenset({"clients", "transactions", "duration", "warmup", "pin"})
# MySQL/MariaDB: the table is made in Target.data_directory when one is given (a study).
DATA_DIRECTORY = True

DEFAULT_CLIENTS = (1, 2, 4, 8, 16, 20, 40, 80, 100)
DEFAULT_TRANSACTIONS = 10_000
READY_TIMEOUT_S = 120.0

# How a worker process drives its clients (PostgreSQL; MariaDB/MySQL always use threads).
CLIENT_LOOPS = ("events", "threads")

LATENCY_METRICS = ("latency_mean", "latency_p50", "latency_p95", "latency_p99", "latency_max")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--locking",
        choices=("for_update", "none"),
        default="for_update",
        help="lock the row with SELECT … FOR UPDATE (default) or not, and count lost updates",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        help="worker processes the clients are spread over (default: min(clients, CPUs, 8); "
        "1 with a thread per CPU where PostgreSQL's compiled loop runs)",
    )
    parser.add_argument(
        "--client-loop",
        choices=CLIENT_LOOPS,
        default="events",
        help="PostgreSQL: one non-blocking event loop per worker process over its connections "
        "(default) or one thread per client; MariaDB/MySQL always use threads",
    )
    parser.add_argument(
        "--mysql-driver",
        choices=dbc.MYSQL_DRIVERS,
        default=None,
        help="MySQL/MariaDB clients through mysqlclient (C, the default when installed) or PyMySQL",
    )


# --- one measurement point: N clients over P worker processes ----------------


@dataclass
class PointPlan:
    target: Target
    locking: str
    quotas: list[int | None]  # per client of this process; None = until the deadline
    warmup: float
    duration: float | None
    client_cpus: frozenset[int]
    server_cpus: frozenset[int]
    first_client: int  # this process' clients own progress slots first_client…
    seed: int
    client_loop: str = "threads"  # "events" only for PostgreSQL
    threads: int = 1  # "events": the threads each driving a share of the clients
    mysql_driver: str = "pymysql"  # MySQL/MariaDB clients: mysqlclient or PyMySQL


def _client_loop(
    client: PostgresClient | MySQLClient | FirebirdClient,
    quota: int | None,
    plan: PointPlan,
    start: Any,
    progress: Any,
    slot: int,
    rng: random.Random,
    stop: threading.Event,
) -> ClientTally:
    window_start = start.value + plan.warmup
    deadline = window_start + plan.duration if plan.duration is not None else None
    if isinstance(client, PostgresClient | FirebirdClient):  # the same loop, the calls inline
        return client.run_alone(quota, (window_start, deadline), rng, progress, slot, stop)
    tally = ClientTally()
    clock = time.perf_counter
    latencies: dict[int, int] = {}  # exact µs → count, folded in at the end
    draw = rng.random  # uniform over the rows, in one C call (randint makes three)
    transaction = client.transaction
    stopped = stop.is_set
    done = 0
    consecutive_errors = 0
    while quota is None or done < quota:
        began = clock()
        if (deadline is not None and began >= deadline) or (done & 15 == 0 and stopped()):
            break
        key = int(draw() * ROWS) + 1
        for _attempt in range(MAX_ATTEMPTS):
            try:
                transaction(key)
            except Retryable:
                tally.retries += 1
                continue
            except Failed as exc:
                tally.errors += 1
                consecutive_errors += 1
                if consecutive_errors >= MAX_CONSECUTIVE_ERRORS:
                    raise RuntimeError(
                        f"{consecutive_errors} transactions failed in a row: {exc}"
                    ) from exc
                break
            ended = clock()
            tally.committed += 1
            consecutive_errors = 0
            if deadline is None or window_start <= ended <= deadline:
                micros = int((ended - began) * 1_000_000)
                latencies[micros] = latencies.get(micros, 0) + 1
            break
        else:
            tally.errors += 1
        done += 1
        if done & 15 == 0:
            progress[slot] = done
    progress[slot] = done
    tally.histogram.record_counts(latencies)
    tally.ended_at = clock()
    return tally


def _worker(plan: PointPlan, go: Any, start: Any, progress: Any, results: Any) -> None:
    """One worker process: connect its clients, wait for the start, run, report."""
    start_as_worker()
    try:
        if plan.client_cpus:
            placement.pin_process(0, plan.client_cpus)
        clients = [open_client(plan.target, plan.locking, plan.mysql_driver) for _ in plan.quotas]
        if plan.server_cpus:
            for client in clients:
                pid = client.backend_pid()
                if pid:
                    placement.pin_process(pid, plan.server_cpus)
    except Exception as exc:  # reported to the parent, which stops the run
        results.put(("error", f"{type(exc).__name__}: {exc}"))
        return
    results.put(("ready", os.getpid()))
    tallies: list[ClientTally | None] = [None] * len(clients)
    failures: list[str] = []
    stop = threading.Event()  # one client failed: the others stop too

    # A lone client gains nothing from the Python loop (libpq's blocking call is a loop
    # over one socket) and would pay an epoll call per round trip: it runs the direct
    # path below, unless the compiled loop runs its round trips.
    readings: list[tuple[float, float]] = []  # each driving thread's (busy, wall)
    if plan.client_loop == "events" and (len(clients) > 1 or _pg_compiled.compiled_loop()):
        go.wait()
        tallies[:], failures[:], cpu = event_loop(clients, plan, start, progress)
        _close_and_report(clients, tallies, failures, results, cpu)
        return

    def drive(index: int) -> None:
        rng = random.Random(plan.seed * 1000 + plan.first_client + index)  # noqa: S311
        go.wait()
        meter = ThreadMeter()
        try:
            tallies[index] = _client_loop(
                clients[index],
                plan.quotas[index],
                plan,
                start,
                progress,
                plan.first_client + index,
                rng,
                stop,
            )
        except Exception as exc:  # reported to the parent
            failures.append(f"{type(exc).__name__}: {exc}")
            stop.set()
        readings.append(meter.stop())

    if len(clients) == 1:
        drive(0)
    else:
        threads = [threading.Thread(target=drive, args=(i,)) for i in range(len(clients))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    _close_and_report(clients, tallies, failures, results, process_share(readings))


def _close_and_report(
    clients: list[Any],
    tallies: list[ClientTally | None],
    failures: list[str],
    results: Any,
    engine_cpu: float,
) -> None:
    for client in clients:
        with contextlib.suppress(Exception):  # a connection already lost is closed enough
            client.close()
    if failures:
        results.put(("error", failures[0]))
        return
    results.put(("done", [_tally_dict(t, engine_cpu) for t in tallies if t is not None]))


def _tally_dict(tally: ClientTally, engine_cpu: float) -> dict[str, Any]:
    return {
        "engine_cpu": engine_cpu,  # the client's worker process's share (%)
        "histogram": tally.histogram.to_dict(),
        "committed": tally.committed,
        "errors": tally.errors,
        "retries": tally.retries,
        "ended_at": tally.ended_at,
    }


@dataclass
class PointResult:
    clients: int
    throughput: float
    histogram: Histogram
    committed: int
    errors: int
    retries: int
    lost_updates: int
    engine_cpu: float = 0.0  # the busiest worker process's CPU share (%)


def split(total: int, parts: int) -> list[int]:
    """``total`` transactions shared as evenly as possible by ``parts`` clients."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def default_processes(clients: int) -> int:
    # Beyond 8 interpreters memory grows faster than the load they add.
    return max(1, min(clients, os.cpu_count() or 1, 8))


def run_point(
    target: Target,
    *,
    clients: int,
    transactions: int | None,
    duration: float | None,
    warmup: float,
    locking: str,
    processes: int | None,
    pin: placement.Placement,
    progress: Progress,
    label: str,
    seed: int = 0,
    client_loop: str = "events",
    checkpoint: Callable[[], None] | None = None,
    mysql_driver: str | None = None,
) -> PointResult:
    """Reset the table, checkpoint, run one point, and check the table against the commits."""
    reset_table(target)
    if checkpoint is not None:
        checkpoint()
    # The compiled loop runs pgbench -j's layout: one process, a thread per core.
    compiled = target.engine == "postgresql" and client_loop == "events"
    compiled = compiled and _pg_compiled.compiled_loop() is not None
    processes = max(1, min(processes or (1 if compiled else default_processes(clients)), clients))
    driver = dbc.mysql_driver(mysql_driver) if target.engine in dbc.MYSQL_FAMILY else "pymysql"
    quotas: list[int | None] = (
        list(split(transactions, clients)) if duration is None else [None] * clients
    )
    ctx = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    go, start = ctx.Event(), ctx.Value("d", 0.0)
    counters = ctx.Array("q", clients, lock=False)
    results = ctx.Queue()
    workers = []
    first = 0
    for size in split(clients, processes):
        plan = PointPlan(
            target=target,
            locking=locking,
            quotas=quotas[first : first + size],
            warmup=warmup if duration is not None else 0.0,
            duration=duration,
            client_cpus=pin.client_cpus,
            server_cpus=pin.server_cpus if target.engine == "postgresql" else frozenset(),
            first_client=first,
            seed=seed * 10_000,  # a client's keys, from its number: the same in any layout
            client_loop=client_loop if target.engine == "postgresql" else "threads",
            threads=-(-default_processes(clients) // processes) if compiled else 1,
            mysql_driver=driver,
        )
        first += size
        worker = ctx.Process(target=_worker, args=(plan, go, start, counters, results))
        worker.daemon = True
        worker.start()
        workers.append(worker)
    try:
        _wait_ready(results, workers)
        total = transactions if duration is None else int((warmup + duration) * 10)
        progress.start(total, label)
        start.value = time.perf_counter()
        go.set()
        tallies = _collect(results, workers, counters, progress, start, duration is not None)
    except BaseException:
        # Stopped (Ctrl-C) or failed: no "done" line before the one that says so.
        getattr(progress, "close", progress.finish)()
        raise
    finally:
        stop(workers)
    progress.finish()
    histogram = Histogram.merged([Histogram.from_dict(t["histogram"]) for t in tallies])
    committed = sum(t["committed"] for t in tallies)
    if duration is None:
        elapsed = max(t["ended_at"] for t in tallies) - start.value
        throughput = committed / elapsed if elapsed > 0 else 0.0
    else:
        throughput = histogram.count / duration
    table_sum = table_total(target)
    lost = committed - table_sum
    if locking == "for_update" and lost != 0:
        raise RuntimeError(
            f"select-update: sum(c2) = {table_sum} but {committed} transactions committed "
            f"with {clients} clients under FOR UPDATE — the database lost or invented updates"
        )
    return PointResult(
        clients=clients,
        throughput=throughput,
        histogram=histogram,
        committed=committed,
        errors=sum(t["errors"] for t in tallies),
        retries=sum(t["retries"] for t in tallies),
        lost_updates=lost,
        engine_cpu=max(t["engine_cpu"] for t in tallies),
    )


def _wait_ready(results: Any, workers: list[Any]) -> None:
    ready = 0
    deadline = time.monotonic() + READY_TIMEOUT_S
    while ready < len(workers):
        try:
            kind, payload = results.get(timeout=0.5)
        except queue.Empty:
            if time.monotonic() > deadline or not all(w.is_alive() for w in workers):
                raise RuntimeError("select-update: a worker process did not start") from None
            continue
        if kind == "error":
            raise RuntimeError(f"select-update: a client could not connect: {payload}")
        ready += 1


def _collect(
    results: Any, workers: list[Any], counters: Any, progress: Progress, start: Any, timed: bool
) -> list[dict[str, Any]]:
    tallies: list[dict[str, Any]] = []
    finished = 0
    shown = 0
    while finished < len(workers):
        try:
            kind, payload = results.get(timeout=0.1)
        except queue.Empty:
            if any(w.is_alive() for w in workers):
                now = int((time.perf_counter() - start.value) * 10) if timed else sum(counters)
                if now > shown:
                    progress.advance(now - shown)
                    shown = now
                continue
            kind, payload = _left_by_the_dead(results, workers)
        if kind == "error":
            raise RuntimeError(f"select-update: {payload}")
        tallies.extend(payload)
        finished += 1
    return tallies


def _left_by_the_dead(results: Any, workers: list[Any]) -> tuple[str, Any]:
    """Every worker has exited: what one of them left in the queue. A
    worker's report is in the pipe before it exits, so reports that arrived
    between the wait that found none and the look at the workers are read
    now (on a busy machine, that was "worker processes died" after a run
    that had finished); none there, and a worker did die."""
    try:
        return results.get(timeout=1.0)
    except queue.Empty:
        codes = ", ".join(str(w.exitcode) for w in workers)
        raise RuntimeError(
            f"select-update: worker processes exited without reporting (exit codes {codes})"
        ) from None


# --- the benchmark ----------------------------------------------------------


def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    """In the benchmark's own schema (PostgreSQL) or tables, removed afterwards unless --keep."""
    if getattr(options, "duration", None) and getattr(options, "transactions", None):
        # One of them decides when a point ends; recording both would claim the other did.
        raise ValueError(
            "select-update: --transactions and --duration exclude each other: a point ends "
            "after --transactions in total, or after --duration seconds"
        )
    with dbc.own_objects(target, options, NAME, OWN_TABLES) as workspace:
        return _run(workspace, options, progress)


def _default_clients_that_fit(target: Target) -> list[int]:
    """The default sweep, up to what the server accepts now: a stock
    PostgreSQL (max_connections 100) cannot hold 100 clients and the check,
    and a first run without --clients should measure, not refuse."""
    free = db.free_connections(target)
    fitting = [n for n in DEFAULT_CLIENTS if n + 1 <= free] or [DEFAULT_CLIENTS[0]]
    if len(fitting) < len(DEFAULT_CLIENTS):
        say(
            f"select-update: the server accepts {free} more connections now "
            f"(max_connections), so the default sweep stops at {fitting[-1]} clients "
            f"instead of {DEFAULT_CLIENTS[-1]}; --clients chooses the points"
        )
    return fitting


def _run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    clients_list = list(getattr(options, "clients", None) or DEFAULT_CLIENTS)
    duration = getattr(options, "duration", None)
    transactions = None if duration else (options.transactions or DEFAULT_TRANSACTIONS)
    given_warmup = getattr(options, "warmup", None)  # 0 is a choice: no warm-up
    warmup = float(given_warmup if given_warmup is not None else (5.0 if duration else 0.0))
    repeat = max(1, int(getattr(options, "repeat", None) or 3))
    client_loop = getattr(options, "client_loop", None) or "events"
    locking = getattr(options, "locking", "for_update")
    driver = None
    if target.engine in dbc.MYSQL_FAMILY:
        driver = dbc.mysql_driver(getattr(options, "mysql_driver", None))

    info = db.describe(target)
    if not getattr(options, "clients", None):
        clients_list = _default_clients_that_fit(target)
    # Each client holds a connection, and the table check at the end one more.
    db.require_connections(target, max(clients_list) + 1)
    pin = placement.plan(getattr(options, "pin", None), info.server_pid)
    started = dt.datetime.now(dt.UTC)
    checkpoints = dbc.Checkpoints(target)
    points: dict[int, list[PointResult]] = {n: [] for n in clients_list}
    server_pin = info.server_pid if target.engine != "postgresql" else None
    with placement.PinnedServer(server_pin, pin if server_pin else placement.UNPINNED):
        # Repetition-major order: slow drift of the machine spreads over every N alike.
        for rep in range(repeat):
            for n in clients_list:
                label = f"clients={n} rep {rep + 1}/{repeat}"
                points[n].append(
                    run_point(
                        target,
                        clients=n,
                        transactions=transactions,
                        duration=duration,
                        warmup=warmup,
                        locking=locking,
                        processes=getattr(options, "processes", None),
                        pin=pin,
                        progress=progress,
                        label=label,
                        seed=rep * 1000 + n,
                        client_loop=client_loop,
                        checkpoint=checkpoints.before_point,
                        mysql_driver=driver,
                    )
                )
    ended = dt.datetime.now(dt.UTC)
    parameters: dict[str, Any] = {"rows": ROWS, "locking": locking}
    if duration:
        parameters.update(duration=duration, warmup=warmup)
    else:
        parameters["transactions"] = transactions
    client = info.client_section()
    # The clients' driver, not the one that described the server.
    client.update(dbc.load_driver_description(target.engine, driver))
    client["cpu_placement"] = pin.mode
    engine_cpu = {n: max(r.engine_cpu for r in reps) for n, reps in points.items()}
    return BenchmarkResult(
        benchmark=NAME,
        benchmark_version=VERSION,
        parameters=parameters,
        repetitions=repeat,
        started_at=started,
        ended_at=ended,
        measurements=measurements(points, locking),
        client=client,
        database=info.database_section(),
        storage_path=info.data_directory if info.is_local else None,
        notes=[
            checkpoints.note(),
            invariant_note(points, locking),
            point_note(engine_cpu),
            *([firebird_loop_note()] if target.engine == "firebird" else []),
            *([loop_note(client_loop)] if target.engine == "postgresql" else []),
        ],
        load_engine_cpu=max(engine_cpu.values()),
    )


def measurements(points: dict[int, list[PointResult]], locking: str) -> list[Measurement]:
    """Per N: each metric's value is the median of the repetitions, all kept as samples."""
    units = {"throughput": "tx/s", "errors": "count", "retries": "count", "lost_updates": "count"}
    found: list[Measurement] = []
    for n, reps in points.items():
        per_metric: dict[str, list[float]] = {
            "throughput": [round(r.throughput, 1) for r in reps],
            "latency_mean": [round(r.histogram.mean_ms(), 3) for r in reps],
            "latency_p50": [round(r.histogram.percentile_ms(50), 3) for r in reps],
            "latency_p95": [round(r.histogram.percentile_ms(95), 3) for r in reps],
            "latency_p99": [round(r.histogram.percentile_ms(99), 3) for r in reps],
            "latency_max": [round(r.histogram.max_ms(), 3) for r in reps],
            "errors": [r.errors for r in reps],
            "retries": [r.retries for r in reps],
        }
        if locking == "none":
            per_metric["lost_updates"] = [r.lost_updates for r in reps]
        for metric, samples in per_metric.items():
            found.append(
                Measurement(
                    metric=metric,
                    value=statistics.median(samples),
                    unit=units.get(metric, "ms"),
                    parameters={"clients": n},
                    samples=samples,
                )
            )
    return found
