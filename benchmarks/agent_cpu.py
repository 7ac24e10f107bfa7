"""The agent's own CPU per transaction: select-update and tpcb, PostgreSQL or MariaDB/MySQL.

Throughput ratios against pgbench swing with whatever else the machine runs;
the CPU the agent's worker processes spend per committed transaction hardly
does, so it is the figure to compare two versions of the engine by on a shared
machine. Each point runs the agent's real engine (``select_update.run_point``,
tpcb's ``run_load`` or ``run_agent_load``) in this process's children, without a
warm-up, once for --duration and once for three times as long; the workers'
user + system time (the resource usage of waited-for children) and the
committed transactions of the shorter run are subtracted from the longer one's,
so what each run pays once (starting workers, connecting, preparing) cancels.
Prints µs of agent CPU per transaction, the median of --rounds, with the tps and
the 1-minute load average (tps is not a quiet machine's when the load is high).

    PYTHONPATH=agents .venv/bin/python benchmarks/agent_cpu.py \\
        --dsn 'postgresql://postgres@/bh_cpu?host=/var/run/postgresql' --clients 1,4
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from collections.abc import Callable

from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _tpcb_event_loop, _tpcb_processes, select_update, tpcb
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.placement import UNPINNED

# (committed transactions, seconds) of one run of the given clients and duration.
Runner = Callable[[int, float], tuple[int, float]]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def select_update_runner(target: Target, driver: str | None) -> Runner:
    def run(clients: int, duration: float) -> tuple[int, float]:
        point = select_update.run_point(
            target,
            clients=clients,
            transactions=None,
            duration=duration,
            warmup=0.0,
            locking="for_update",
            processes=None,
            pin=UNPINNED,
            progress=SilentProgress(),
            label="",
            mysql_driver=driver,
        )
        return point.committed, duration

    return run


def tpcb_runner(target: Target, scale: int, driver: str | None) -> Runner:
    def run(clients: int, duration: float) -> tuple[int, float]:
        tpcb._prepare_repetition(target)
        if target.engine == "postgresql":
            histogram, failed, _ = _tpcb_event_loop.run_load(
                target, clients, scale, 0.0, duration, 1
            )
        else:
            histogram, failed, _, _ = _tpcb_processes.run_agent_load(
                target, clients, scale, 0.0, duration, 1, driver
            )
        return histogram.count + failed, duration

    return run


def cpu_per_transaction(run: Runner, clients: int, duration: float) -> tuple[float, float]:
    """(µs of worker CPU per transaction, tps of the longer run)."""
    before = children_cpu()
    short, _ = run(clients, duration)
    middle = children_cpu()
    long, _ = run(clients, 3 * duration)
    after = children_cpu()
    cpu = (after - middle) - (middle - before)
    return 1e6 * cpu / max(1, long - short), long / (3 * duration)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--benchmarks", default="select-update,tpcb")
    parser.add_argument("--clients", default="1,4")
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tpcb-scale", type=int, default=1)
    parser.add_argument("--mysql-driver", choices=tpcb.MYSQL_DRIVERS)
    args = parser.parse_args()
    target = Target.parse(args.dsn)
    print(f"{target.engine} via {target.socket or target.host}")
    print(f"{'benchmark':<14} {'clients':>7} {'µs CPU/tx':>10} {'tps':>8}   rounds (µs)")
    for benchmark in args.benchmarks.split(","):
        module = tpcb if benchmark == "tpcb" else select_update
        workspace = dbc.in_own_schema(target, module.NAME)
        if benchmark == "tpcb":
            tpcb.initialize(workspace, args.tpcb_scale)
            run = tpcb_runner(workspace, args.tpcb_scale, args.mysql_driver)
        else:
            run = select_update_runner(workspace, args.mysql_driver)
        try:
            for clients in (int(c) for c in args.clients.split(",")):
                figures = [
                    cpu_per_transaction(run, clients, args.duration) for _ in range(args.rounds)
                ]
                per_tx = [f[0] for f in figures]
                print(
                    f"{benchmark:<14} {clients:>7} {statistics.median(per_tx):>10.1f} "
                    f"{statistics.median(f[1] for f in figures):>8.0f}   "
                    + " ".join(f"{f:.1f}" for f in per_tx)
                    + f"   load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
        finally:
            dbc.remove_own_objects(target, module.NAME, module.OWN_TABLES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
