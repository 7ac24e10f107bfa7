"""TPC-C-like order entry: the five transactions at the standard mix, warehouses as scale.

Load (:mod:`._tpcc_load`): the nine tables of TPC-C with the specification's columns,
keys and data generation, one process per warehouse up to the CPUs, reproducible from
``--seed``. Run (:mod:`._tpcc_run`): terminals without keying or think time, as
HammerDB's TPROC-C and sysbench-tpcc run them, for ``--duration`` after ``--warmup``, at
each ``--clients`` point ``--repeat`` times, each transaction one procedure call on
PostgreSQL, MySQL/MariaDB and Firebird (:mod:`._tpcc_procedures`); NOPM counts committed New-Orders
per minute, TPM every transaction done. After the last point, the consistency conditions
1-4 of clause 3.3.2 are checked; a violation fails the run.

Everything lives in the agent's own schema ``benchhub_tpcc`` (PostgreSQL) or database
(MySQL/MariaDB), marked as the agent's, removed afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from .. import db
from ..progress import working
from . import _connections as dbc
from . import _engine_cpu
from . import _tpcc_load as load
from . import _tpcc_procedures as procedures
from . import _tpcc_run as transactions
from .base import BenchmarkResult, Measurement, Progress, Target

NAME = "tpcc"
VERSION = "2"
ENGINES = frozenset({"postgresql", "mysql", "mariadb", "firebird"})
LOAD_OPTIONS = frozenset({"clients", "duration", "warmup"})
OWN_TABLES = load.TABLES

# What this implementation does differently from the TPC-C specification (rev. 5.11):
# stated in every run's note and in agents/README.md.
DEVIATIONS = (
    "no keying or think time (clause 5.2.5), terminals run back to back as in HammerDB "
    "TPROC-C and sysbench-tpcc; any number of clients per warehouse",
    "Delivery runs at once in the terminal's transaction, not deferred through a queue "
    "(clause 2.7.2)",
    "the mix is drawn per transaction (45/43/4/4/4), not dealt from a deck (clause 5.2.4)",
    "no response-time limits, no 8-hour steady state, no pricing: NOPM is not tpmC",
    "random strings are slices of a seeded random pool (clause 4.3.2 draws each character)",
    "serialization failures and deadlocks are retried with the same inputs, up to "
    f"{transactions.MAX_TRIES} tries, each retry counted; a transaction still failing is an "
    "abort",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouses",
        type=int,
        default=None,
        help="the scale: warehouses, 10 districts and 30,000 customers each (default 1; "
        "with --no-init, the kept data's)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the data and of the terminals' choices (default 1; with --no-init, "
        "the kept data's)",
    )
    parser.add_argument(
        "--mysql-driver",
        choices=dbc.MYSQL_DRIVERS,
        default=None,
        help="MySQL/MariaDB terminals through mysqlclient (C, the default when installed) "
        "or PyMySQL (pure Python, slower per round trip)",
    )
    parser.add_argument(
        "--no-init",
        action="store_true",
        help="reuse the data an earlier run kept (--keep) instead of loading it again",
    )


def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    """In the benchmark's own schema or database, removed afterwards unless --keep."""
    warehouses = dbc.option(options, "warehouses", None)
    if warehouses is not None and int(warehouses) < 1:
        raise ValueError(f"tpcc --warehouses {warehouses}: must be 1 or more")
    for name in ("clients",):
        if any(int(c) < 1 for c in dbc.option(options, name, [1])):
            raise ValueError("tpcc --clients: every point must be 1 or more")
    sabotage = getattr(options, "test_sabotage", None)
    if sabotage is not None and sabotage not in transactions.SABOTAGES:
        raise ValueError(f"unknown sabotage {sabotage!r}")
    with dbc.own_objects(target, options, NAME, OWN_TABLES) as workspace:
        return _run(workspace, options, progress)


def _kept(
    target: Target, asked: int | None, asked_seed: int | None
) -> tuple[int, tuple[int, int, int], int]:
    warehouses, constants, seed = load.kept_state(target)
    if asked is not None and asked != warehouses:
        raise dbc.NotKept(
            f"tpcc --no-init --warehouses {asked}: the kept data has {warehouses} "
            f"warehouse{'s' if warehouses != 1 else ''}; run without --no-init to rebuild it"
        )
    # One seed makes both the data and the terminals' choices, so that the run's recorded
    # seed reproduces it (run --like).
    if asked_seed is not None and asked_seed != seed:
        raise dbc.NotKept(
            f"tpcc --no-init --seed {asked_seed}: the kept data was loaded from seed {seed}; "
            "run without --no-init to rebuild it"
        )
    return warehouses, constants, seed


def _run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    dbc.refuse_pin(options, NAME)
    asked = dbc.option(options, "warehouses", None)
    asked = int(asked) if asked is not None else None
    asked_seed = dbc.option(options, "seed", None)
    asked_seed = int(asked_seed) if asked_seed is not None else None
    clients_list = [int(c) for c in dbc.option(options, "clients", [1])]
    duration = float(dbc.option(options, "duration", 10))
    warmup = float(dbc.option(options, "warmup", 2))
    repeat = int(dbc.option(options, "repeat", 3))
    sabotage = getattr(options, "test_sabotage", None)
    # Refused before the warehouses are loaded, not at the largest point.
    db.require_connections(target, max(clients_list))
    started_at = dt.datetime.now(dt.UTC)
    notes: list[str] = []

    if dbc.option(options, "no_init", False):
        warehouses, load_constants, seed = _kept(target, asked, asked_seed)
        notes.append(f"data: kept by an earlier run (seed {seed}), not reloaded.")
    else:
        warehouses, seed = asked or 1, asked_seed if asked_seed is not None else 1
        if target.engine == "firebird":  # kept procedures would keep the tables from a drop
            procedures.firebird.uninstall(target)
        with working(progress, f"tpcc: loading {warehouses} warehouse(s)"):
            processes = load.initialize(target, warehouses, seed)
        load_constants = load.constants(seed)
        notes.append(f"data: loaded from seed {seed} by {processes} process(es).")
    procedures.install(target)
    mysql = target.engine in dbc.MYSQL_FAMILY
    driver = dbc.mysql_driver(dbc.option(options, "mysql_driver", None)) if mysql else None
    setup = {
        "mysql_driver": driver,
        "warehouses": warehouses,
        "seed": seed,
        "constants": load.run_constants(load_constants, seed),
        "warmup": warmup,
        "duration": duration,
        "sabotage": sabotage,
    }

    progress.start(len(clients_list) * repeat, "tpcc")
    measurements: list[Measurement] = []
    checkpoints = dbc.Checkpoints(target)
    engine_cpu: dict[int, float] = {}
    for clients in clients_list:
        samples: list[transactions.Tally] = []
        for repetition in range(repeat):
            checkpoints.before_point()
            setup["seed"] = seed * 1000 + repetition
            tally, cpu = transactions.run_load(target, clients, setup)
            engine_cpu[clients] = max(engine_cpu.get(clients, 0.0), cpu)
            samples.append(tally)
            progress.advance()
        measurements.extend(_measurements_for(clients, samples, duration))
    progress.finish()

    with working(progress, "tpcc: checking consistency conditions 1-4"):
        failures = transactions.consistency_failures(target)
    if failures:
        shown = "; ".join(failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        raise ConsistencyFailed(
            f"tpcc: TPC-C consistency check failed, the run is not published: {shown}{more}"
        )
    notes.append(
        "consistency: TPC-C conditions 1-4 (clause 3.3.2) checked after the last point: passed."
    )
    notes.append(procedures.note(target.engine))
    notes.append("deviations from TPC-C: " + "; ".join(DEVIATIONS) + ".")
    notes.append(checkpoints.note())
    notes.append(_engine_cpu.point_note(engine_cpu))

    return BenchmarkResult(
        benchmark=NAME,
        benchmark_version=VERSION,
        parameters={
            "warehouses": warehouses,
            "seed": seed,
            "duration": duration,
            "warmup": warmup,
            "clients": ",".join(str(c) for c in clients_list),
            "mix": "45/43/4/4/4",
            "think_time": "none",
            "consistency": "passed",
        },
        repetitions=repeat,
        started_at=started_at,
        ended_at=dt.datetime.now(dt.UTC),
        measurements=measurements,
        notes=notes,
        load_engine_cpu=max(engine_cpu.values()) if engine_cpu else None,
        **_environment(target, driver),
    )


def _environment(target: Target, driver: str | None) -> dict[str, Any]:
    found = dbc.environment(target)
    # The terminals' driver, not the one that set the tables up.
    found["client"].update(dbc.load_driver_description(target.engine, driver))
    return found


class ConsistencyFailed(RuntimeError):
    """The data broke a TPC-C consistency condition: the run's figures mean nothing."""


UNITS = {
    "nopm": "orders/min",
    "tpm": "tx/min",
    "throughput": "tx/s",
    "latency_mean": "ms",
    "latency_p95": "ms",
    "latency_p99": "ms",
    "aborts": "count",
    "retries": "count",
    "rollbacks": "count",
}


def _figures(tally: transactions.Tally, duration: float) -> dict[tuple[str, str | None], float]:
    merged = transactions.Histogram.merged(list(tally.histograms.values()))
    figures: dict[tuple[str, str | None], float] = {
        ("nopm", None): tally.new_orders * 60 / duration,
        ("tpm", None): tally.done() * 60 / duration,
        ("throughput", None): tally.done() / duration,
        ("latency_mean", None): merged.mean_ms(),
        ("latency_p95", None): merged.percentile_ms(95),
        ("latency_p99", None): merged.percentile_ms(99),
        ("aborts", None): float(tally.aborts),
        ("retries", None): float(tally.retries),
        ("rollbacks", None): float(tally.rollbacks),
    }
    for name, histogram in tally.histograms.items():
        figures[("latency_mean", name)] = histogram.mean_ms()
        figures[("latency_p95", name)] = histogram.percentile_ms(95)
        figures[("latency_p99", name)] = histogram.percentile_ms(99)
    return figures


def _measurements_for(
    clients: int, tallies: list[transactions.Tally], duration: float
) -> list[Measurement]:
    per_repetition = [_figures(tally, duration) for tally in tallies]
    found = []
    for (metric, transaction), _ in per_repetition[0].items():
        values = [round(figures[(metric, transaction)], 6) for figures in per_repetition]
        parameters: dict[str, Any] = {"clients": clients}
        if transaction is not None:
            parameters["transaction"] = transaction
        found.append(
            Measurement(
                metric=metric,
                value=dbc.median(values),
                unit=UNITS[metric],
                parameters=parameters,
                samples=values,
            )
        )
    return found
