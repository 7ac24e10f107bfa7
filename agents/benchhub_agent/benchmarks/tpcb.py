"""TPC-B-like load on pgbench's schema, time-limited (seed 003).

Two load engines:

* ``--engine agent`` (default, PostgreSQL and MySQL/MariaDB): pgbench's built-in "TPC-B
  (sort of)" transaction in a loop per client, spread over min(clients, CPUs, 8) worker
  processes: on PostgreSQL one non-blocking libpq loop per process
  (:mod:`._tpcb_event_loop`), on MySQL/MariaDB threads through mysqlclient or PyMySQL
  (:mod:`._tpcb_processes`). Each point records how busy the busiest worker was
  (:mod:`._engine_cpu`); the run's ``load_engine_cpu`` is its busiest point.
* ``--engine pgbench`` (PostgreSQL only): drives the installed ``pgbench`` (initialize + run)
  with ``-M prepared`` and a per-transaction log, from which the percentiles are computed.

Both keep the pgbench table names, so a database initialized by one can be run by the other.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchhub_contract.importers import pgbench as pgbench_report

from .. import db, firebird_db
from ..histogram import Histogram
from ..progress import working
from . import _connections as dbc
from . import _engine_cpu
from . import _tpcb_event_loop as event_loop
from ._connections import MYSQL_DRIVERS, load_driver_description, mysql_driver
from ._tpcb_event_loop import ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH
from ._tpcb_processes import FirebirdClient, run_agent_load
from .base import BenchmarkResult, Measurement, Progress, Target

NAME = "tpcb"
VERSION = "1"
ENGINES = frozenset({"postgresql", "mysql", "mariadb", "firebird"})
# Time-limited: no --transactions; no --pin.
LOAD_OPTIONS = frozenset({"clients", "duration", "warmup"})
# MySQL/MariaDB: dropped after the run unless --keep (PostgreSQL: the schema is).
OWN_TABLES = ("pgbench_history", "pgbench_tellers", "pgbench_accounts", "pgbench_branches")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scale",
        type=int,
        default=1,
        help="pgbench scale factor: branches; 100,000 accounts each (default 1)",
    )
    parser.add_argument(
        "--engine",
        choices=("agent", "pgbench"),
        default="agent",
        dest="load_engine",
        help="who generates the load: the agent's worker processes or the installed pgbench",
    )
    parser.add_argument(
        "--mysql-driver",
        choices=MYSQL_DRIVERS,
        default=None,
        help="MySQL/MariaDB load through mysqlclient (C, the default when installed) "
        "or PyMySQL (pure Python, slower per round trip)",
    )
    parser.add_argument(
        "--no-init",
        action="store_true",
        help="reuse the tables an earlier --keep run left in its own schema or database",
    )


# --- schema --------------------------------------------------------------------------------


def _create_statements(engine: str) -> list[str]:
    # pgbench's own DDL; InnoDB on the MySQL side so that the transaction means the same.
    suffix = " ENGINE=InnoDB" if engine in dbc.MYSQL_FAMILY else ""
    return [
        "DROP TABLE IF EXISTS pgbench_history",
        "DROP TABLE IF EXISTS pgbench_tellers",
        "DROP TABLE IF EXISTS pgbench_accounts",
        "DROP TABLE IF EXISTS pgbench_branches",
        "CREATE TABLE pgbench_branches (bid int NOT NULL PRIMARY KEY, bbalance int,"
        f" filler char(88)){suffix}",
        "CREATE TABLE pgbench_tellers (tid int NOT NULL PRIMARY KEY, bid int, tbalance int,"
        f" filler char(84)){suffix}",
        "CREATE TABLE pgbench_accounts (aid int NOT NULL PRIMARY KEY, bid int, abalance int,"
        f" filler char(84)){suffix}",
        "CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int,"
        f" mtime timestamp NULL, filler char(22)){suffix}",
    ]


def initialize(target: Target, scale: int) -> None:
    """(Re)create and fill pgbench's tables at ``scale``, outside any timing."""
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            for statement in _create_statements(target.engine):
                cur.execute(statement)
            if target.engine == "postgresql":
                _fill_postgresql(cur, scale)
            elif target.engine == "firebird":
                _fill_firebird(cur, scale)
            else:
                _fill_mysql(cur, scale)
    finally:
        conn.close()


def _fill_firebird(cur: Any, scale: int) -> None:
    # The server generates the rows itself (Firebird 3 has no generate_series): a block.
    tellers, accounts = TELLERS_PER_BRANCH, ACCOUNTS_PER_BRANCH
    for table, values, count in (
        ("pgbench_branches", ":n, 0, ''", scale),
        ("pgbench_tellers", f":n, (:n - 1) / {tellers} + 1, 0, ''", tellers * scale),
        ("pgbench_accounts", f":n, (:n - 1) / {accounts} + 1, 0, ''", accounts * scale),
    ):
        insert = f"INSERT INTO {table} VALUES ({values})"  # noqa: S608 - constants
        cur.execute(
            "EXECUTE BLOCK AS DECLARE n int = 1; BEGIN"
            f" WHILE (n <= {int(count)}) DO BEGIN {insert}; n = n + 1; END END"
        )
    firebird_db.set_statistics(cur)


def _fill_postgresql(cur: Any, scale: int) -> None:
    cur.execute(
        "INSERT INTO pgbench_branches SELECT b, 0, '' FROM generate_series(1, %s) b", (scale,)
    )
    cur.execute(
        "INSERT INTO pgbench_tellers SELECT t, (t - 1) / %s + 1, 0, ''"
        " FROM generate_series(1, %s) t",
        (TELLERS_PER_BRANCH, TELLERS_PER_BRANCH * scale),
    )
    cur.execute(
        "INSERT INTO pgbench_accounts SELECT a, (a - 1) / %s + 1, 0, ''"
        " FROM generate_series(1, %s) a",
        (ACCOUNTS_PER_BRANCH, ACCOUNTS_PER_BRANCH * scale),
    )
    cur.execute("VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts")


def _fill_mysql(cur: Any, scale: int) -> None:
    tellers, accounts = TELLERS_PER_BRANCH, ACCOUNTS_PER_BRANCH
    for table, columns, count in (
        ("pgbench_branches", "n, 0, ''", scale),
        ("pgbench_tellers", f"n, (n - 1) DIV {tellers} + 1, 0, ''", tellers * scale),
        ("pgbench_accounts", f"n, (n - 1) DIV {accounts} + 1, 0, ''", accounts * scale),
    ):
        numbers = dbc.mysql_numbers(count)
        cur.execute(f"INSERT INTO {table} SELECT {columns} FROM {numbers}")  # noqa: S608 - constants
    cur.execute("ANALYZE TABLE pgbench_branches, pgbench_tellers, pgbench_accounts")
    cur.fetchall()


def _prepare_repetition(target: Target) -> None:
    """What pgbench does before each run: empty history, vacuum the small hot tables."""
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                cur.execute("VACUUM pgbench_branches, pgbench_tellers")
                cur.execute("TRUNCATE pgbench_history")
            elif target.engine == "firebird":  # no TRUNCATE: a new empty table
                history = _create_statements(target.engine)[-1]
                cur.execute("DROP TABLE IF EXISTS pgbench_history")
                cur.execute(history)
            else:
                cur.execute("TRUNCATE TABLE pgbench_history")
    finally:
        conn.close()


def measured_scale(target: Target) -> int:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM pgbench_branches")
            return int(cur.fetchone()[0])
    finally:
        conn.close()


# --- pgbench ------------------------------------------------------------------------------


def pgbench_environment(target: Target) -> dict[str, str]:
    env = dict(os.environ)
    host = target.socket or target.host
    for key, value in (
        ("PGHOST", host),
        ("PGPORT", target.port),
        ("PGUSER", target.user),
        ("PGPASSWORD", target.password),
        ("PGDATABASE", target.database),
        ("PGOPTIONS", target.options.get("options")),  # the benchmark's own schema
    ):
        if value is not None:
            env[key] = str(value)
        else:
            env.pop(key, None)
    return env


def _pgbench_binary() -> str:
    binary = shutil.which("pgbench")
    if binary is None:
        raise RuntimeError("tpcb --engine pgbench: no pgbench on PATH (postgresql-client)")
    return binary


def pgbench_initialize(target: Target, scale: int) -> None:
    subprocess.run(  # noqa: S603 - pgbench from PATH, arguments are ours
        [_pgbench_binary(), "-i", "-q", "-s", str(scale)],
        env=pgbench_environment(target),
        check=True,
        capture_output=True,
        text=True,
    )


def pgbench_version() -> str:
    out = subprocess.run([_pgbench_binary(), "--version"], capture_output=True, text=True)  # noqa: S603
    return out.stdout.strip()


def run_pgbench_load(
    target: Target, clients: int, duration_s: float, log_dir: Path
) -> tuple[float, Histogram, int, str, float | None]:
    """One pgbench run: its tps line, the histogram of its transaction log, failures, the
    command, and pgbench's CPU share (%) of the ``-j`` threads it ran (on-CPU time only)."""
    for old in log_dir.glob("tpcb*"):
        old.unlink()
    threads = max(1, min(clients, os.cpu_count() or 1))
    command = [
        _pgbench_binary(),
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(threads),
        "-T",
        str(max(1, round(duration_s))),
        "-l",
        f"--log-prefix={log_dir / 'tpcb'}",
    ]
    cpu_before, wall_before = _engine_cpu.children_cpu_s(), time.perf_counter()
    completed = subprocess.run(  # noqa: S603 - pgbench from PATH, arguments are ours
        command, env=pgbench_environment(target), capture_output=True, text=True, cwd=log_dir
    )
    cpu_after, wall = _engine_cpu.children_cpu_s(), time.perf_counter() - wall_before
    cpu = None
    if cpu_before is not None and cpu_after is not None:
        cpu = _engine_cpu.share((cpu_after - cpu_before) / threads, wall)
    if completed.returncode not in (0, 2):  # 2: finished, but some transactions failed
        raise RuntimeError(f"pgbench failed ({completed.returncode}): {completed.stderr.strip()}")
    summary = _pgbench_summary(completed.stdout)
    histogram = read_pgbench_log(log_dir)
    # The note shows how pgbench ran, without the throw-away log directory.
    shown = " ".join(command[1:-2])
    return summary["tps"], histogram, int(summary.get("failed_transactions", 0)), shown, cpu


def _pgbench_summary(stdout: str) -> dict[str, float]:
    """tps and failures from pgbench's report, read by the pgbench importer."""
    run = pgbench_report.parse(stdout).runs[0]
    return {
        m["metric"]: float(m["value"])
        for m in run["measurements"]
        if "statement" not in m.get("parameters", {})
    }


def read_pgbench_log(log_dir: Path) -> Histogram:
    """pgbench -l lines: client transaction_no latency_us script_no epoch epoch_us."""
    histogram = Histogram()
    for path in log_dir.glob("tpcb*"):
        with path.open() as lines:
            for line in lines:
                fields = line.split()
                # "failed"/"skipped" stand in the latency column of unfinished transactions.
                if len(fields) >= 3 and fields[2].isdigit():
                    histogram.record(int(fields[2]))  # pgbench logs microseconds
    return histogram


# --- the benchmark -------------------------------------------------------------------------


def _measurements_for(clients: int, samples: dict[str, list[float]]) -> list[Measurement]:
    units = {
        "tps": "tx/s",
        "latency_mean": "ms",
        "latency_stddev": "ms",
        "latency_p95": "ms",
        "latency_p99": "ms",
        "failed_transactions": "count",
    }
    return [
        Measurement(
            metric=metric,
            # The value is the median of the samples as recorded (rounded), exactly.
            value=dbc.median([round(v, 6) for v in samples[metric]]),
            unit=unit,
            parameters={"clients": clients},
            samples=[round(v, 6) for v in samples[metric]],
        )
        for metric, unit in units.items()
    ]


def _figures(tps: float, histogram: Histogram, failed: int) -> dict[str, float]:
    return {
        "tps": tps,
        "latency_mean": histogram.mean_ms(),
        "latency_stddev": histogram.stddev_ms(),
        "latency_p95": histogram.percentile_ms(95),
        "latency_p99": histogram.percentile_ms(99),
        "failed_transactions": float(failed),
    }


def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    """In the benchmark's own schema (PostgreSQL) or tables, removed afterwards unless --keep."""
    # Every client holds a connection for the whole point: a sweep the server cannot
    # connect is refused before the data is built, not at its largest point.
    clients = [int(c) for c in dbc.option(options, "clients", [1])]
    db.require_connections(target, max(clients))
    with dbc.own_objects(target, options, NAME, OWN_TABLES) as workspace:
        return _run(workspace, options, progress)


def _run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    dbc.refuse_pin(options, NAME)
    load_engine = dbc.option(options, "load_engine", "agent")
    if load_engine == "pgbench" and target.engine != "postgresql":
        raise ValueError("tpcb --engine pgbench needs a postgresql:// --dsn")
    scale = int(dbc.option(options, "scale", 1))
    clients_list = [int(c) for c in dbc.option(options, "clients", [1])]
    duration = float(dbc.option(options, "duration", 10))
    warmup = float(dbc.option(options, "warmup", 2))
    repeat = int(dbc.option(options, "repeat", 3))
    driver = None
    if load_engine == "agent" and target.engine in dbc.MYSQL_FAMILY:
        driver = mysql_driver(dbc.option(options, "mysql_driver", None))
    if load_engine == "pgbench":
        # pgbench -T takes whole seconds; record what it was really asked to do.
        duration = float(max(1, round(duration)))
        warmup = float(round(warmup)) if warmup >= 0.5 else 0.0
    started_at = dt.datetime.now(dt.UTC)

    if dbc.option(options, "no_init", False):
        scale = measured_scale(target)
        if scale == 0:
            raise dbc.NotKept(
                "tpcb --no-init: the kept table pgbench_branches is empty; run once with "
                "--keep and without --no-init to build it"
            )
    elif load_engine == "pgbench":
        with working(progress, f"tpcb: pgbench -i at scale {scale}"):
            pgbench_initialize(target, scale)
    else:
        with working(progress, f"tpcb: building scale {scale} ({scale * 100_000:,} accounts)"):
            initialize(target, scale)

    progress.start(len(clients_list) * repeat, f"tpcb ({load_engine})")
    measurements: list[Measurement] = []
    notes: list[str] = []
    checkpoints = dbc.Checkpoints(target)
    engine_cpu: dict[int, float] = {}  # clients -> the busiest worker over the repetitions
    conflicts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="benchhub-pgbench-") as log_dir:
        for clients in clients_list:
            samples: dict[str, list[float]] = {}
            for repetition in range(repeat):
                checkpoints.before_point()
                figures, note, cpu = _one_repetition(
                    target,
                    load_engine,
                    clients,
                    scale,
                    warmup,
                    duration,
                    repetition,
                    Path(log_dir),
                    driver,
                )
                if cpu is not None:
                    engine_cpu[clients] = max(engine_cpu.get(clients, 0.0), cpu)
                for metric, value in figures.items():
                    samples.setdefault(metric, []).append(value)
                if note and note not in notes:
                    notes.append(note)
                progress.advance()
            measurements.extend(_measurements_for(clients, samples))
            if RETRIES in samples:
                conflicts.append(f"clients={clients}: {int(sum(samples[RETRIES]))}")
    progress.finish()
    notes.append(check_balances(target))
    if conflicts:
        notes.append(
            "update conflicts retried (Firebird 3 fails a transaction whose row another "
            "committed while it waited; retried with the same values, up to "
            f"{FirebirdClient.MAX_TRIES} tries, latency includes the retries): "
            + ", ".join(conflicts)
        )
    notes.append(checkpoints.note())
    if engine_cpu:
        notes.append(_engine_cpu.point_note(engine_cpu))

    return BenchmarkResult(
        benchmark=NAME,
        benchmark_version=VERSION,
        parameters={
            "scale": scale,
            "duration": duration,
            "warmup": warmup,
            "clients": ",".join(str(c) for c in clients_list),
            "load_engine": load_engine,
            "query_mode": query_mode(target.engine),
        },
        repetitions=repeat,
        started_at=started_at,
        ended_at=dt.datetime.now(dt.UTC),
        measurements=measurements,
        notes=notes,
        load_engine_cpu=max(engine_cpu.values()) if engine_cpu else None,
        **_environment(target, load_engine, driver),
    )


def query_mode(engine: str) -> str:
    """How the agent's load sends its statements: prepared where the driver can
    (PostgreSQL, Firebird), as text on MySQL/MariaDB, as sysbench does."""
    return "prepared" if engine in ("postgresql", "firebird") else "simple"


def _one_repetition(
    target: Target,
    load_engine: str,
    clients: int,
    scale: int,
    warmup: float,
    duration: float,
    repetition: int,
    log_dir: Path,
    driver: str | None = None,
) -> tuple[dict[str, float], str | None, float | None]:
    """One measured repetition: its figures, a note, and the load engine's CPU share."""
    if load_engine == "pgbench":
        if warmup >= 1:
            run_pgbench_load(target, clients, warmup, log_dir)
        tps, histogram, failed, command, cpu = run_pgbench_load(target, clients, duration, log_dir)
        return _figures(tps, histogram, failed), f"pgbench {command}", cpu
    _prepare_repetition(target)
    if target.engine == "postgresql":  # non-blocking libpq, as select-update's engine
        histogram, failed, cpu = event_loop.run_load(
            target, clients, scale, warmup, duration, repetition
        )
    else:  # threads over a few processes, through mysqlclient, PyMySQL or firebird-driver
        histogram, failed, cpu, retries = run_agent_load(
            target, clients, scale, warmup, duration, repetition, driver
        )
        if target.engine == "firebird":
            figures = _figures(histogram.count / duration, histogram, failed)
            return {**figures, RETRIES: float(retries)}, None, cpu
    return _figures(histogram.count / duration, histogram, failed), None, cpu


RETRIES = "retries"  # Firebird's retried update conflicts: in the note, not a metric


def balances(target: Target) -> tuple[int, int, int]:
    """The sums of the account, teller and branch balances."""
    conn = dbc.connect(target)
    found = []
    try:
        with conn.cursor() as cur:
            # One query per table: Firebird has no SELECT without FROM.
            for column, table in BALANCES:
                cur.execute(f"SELECT sum({column}) FROM {table}")  # noqa: S608 - constants
                found.append(int(cur.fetchone()[0] or 0))
    finally:
        conn.close()
    accounts, tellers, branches = found
    return accounts, tellers, branches


BALANCES = (
    ("abalance", "pgbench_accounts"),
    ("tbalance", "pgbench_tellers"),
    ("bbalance", "pgbench_branches"),
)


class BalanceBroken(RuntimeError):
    """The balances disagree: a transaction was half applied, the figures mean nothing."""


def check_balances(target: Target) -> str:
    """Every committed transaction adds its delta to an account, a teller and a branch:
    the three sums are equal, or the run fails."""
    accounts, tellers, branches = balances(target)
    if not accounts == tellers == branches:
        raise BalanceBroken(
            f"tpcb: sum(abalance) = {accounts}, sum(tbalance) = {tellers}, sum(bbalance) = "
            f"{branches} after the last point: the database kept part of a transaction"
        )
    return (
        f"invariant held: sum(abalance) = sum(tbalance) = sum(bbalance) = {accounts} "
        "after the last point."
    )


def _environment(target: Target, load_engine: str, driver: str | None = None) -> dict[str, Any]:
    if load_engine != "pgbench":
        found = dbc.environment(target)
        # The load's driver, not the one that set the tables up.
        found["client"].update(load_driver_description(target.engine, driver))
        return found
    found = dbc.environment(target, load_engine="pgbench")
    # pgbench talks to the server through libpq, not through the agent's Python driver.
    found["client"].update(driver="libpq (pgbench)", driver_version=pgbench_version())
    return found
