"""tpcb's PostgreSQL engine (or select-update's, --benchmark select-update) under
callgrind: user-space instructions per transaction.

Wall-clock ratios against pgbench swing with whatever else the machine runs, and CPU
time with its caches; the instructions the engine executes per transaction do not. For
each --clients count this script runs the engine's loop in one process under ``valgrind
--tool=callgrind`` (the event loop of ``_tpcb_event_loop`` or ``_pg_event_loop``, or the
lone client's blocking path at one client), counting from the statement before the loop
to the one after it (``gc.disable()`` and ``gc.enable()`` bracket it; callgrind zeroes
its counters at the first and dumps them at the second), and prints the instructions per
transaction, committed or failed. Connecting, preparing and importing are left out;
libpq's, psycopg's and the interpreter's instructions are in, the kernel's are not. The
server runs at full speed while the client runs under valgrind, so every answer is
waiting when the client reads it: this is the client's cost alone, at any load.

    PYTHONPATH=agents .venv/bin/python benchmarks/tpcb_instructions.py \\
        --dsn 'postgresql://postgres@/bh_cg?host=/var/run/postgresql' --clients 1,2,32

select-update runs with its default locking (FOR UPDATE) on a fresh table of its 100 rows,
left in the database for the next run.

--pgbench counts pgbench -M prepared -j 1 on the same transaction instead (agent_overhead's
select-update script, or its built-in tpcb-like) in like units: the whole process run
twice under callgrind, for -t N and -t 2N transactions a client, the difference divided
by the transactions it adds (connecting and preparing cancel out).
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _select_update_clients, _tpcb_event_loop, tpcb
from benchhub_agent.benchmarks._pg_event_loop import PostgresFlow, drive
from benchhub_agent.benchmarks.base import Target

SCALE = 1


def run_select_update(dsn: str, clients: int, duration: float) -> int:
    """select-update's loop (or lone client) for ``duration`` seconds: its transactions."""
    target = Target.parse(dsn)
    opened = [_select_update_clients.PostgresClient(target, "for_update") for _ in range(clients)]
    now = time.perf_counter()
    window, progress = (now, now + duration), [0] * clients
    rngs = [random.Random(i) for i in range(clients)]
    gc.disable()  # callgrind starts counting here
    if clients == 1:
        tallies = [opened[0].run_alone(None, window, rngs[0], progress, 0, threading.Event())]
    else:
        flows = [PostgresFlow(c, None, window, progress, i, rngs[i]) for i, c in enumerate(opened)]
        drive(flows)
        tallies = [flow.tally for flow in flows]
    gc.enable()  # ... and stops here
    for client in opened:
        client.close()
    return sum(tally.committed + tally.errors for tally in tallies)


def run_loop(dsn: str, clients: int, duration: float) -> int:
    """The engine's loop for ``duration`` seconds in this process: its transactions."""
    target = dbc.in_own_schema(Target.parse(dsn), tpcb.NAME)
    flows = [
        _tpcb_event_loop.TpcbFlow(target, SCALE, random.Random(i), (0.0, 0.0))
        for i in range(clients)
    ]
    now = time.perf_counter()
    for flow in flows:
        flow.measure_from, flow.deadline = now, now + duration
    gc.disable()  # callgrind starts counting here (as the worker process does: no collector)
    if clients == 1:
        flows[0].run_alone()
    else:
        drive(flows)
    gc.enable()  # ... and stops here
    for flow in flows:
        flow.close()
    return sum(flow.histogram.count + flow.failed for flow in flows)


def instructions(benchmark: str, dsn: str, clients: int, duration: float) -> tuple[int, int]:
    """(instructions of the loop, its transactions), the loop run under callgrind."""
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "callgrind.out"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             "--zero-before=gc_disable*", "--dump-before=gc_enable*",
             sys.executable, __file__, "--loop", "--benchmark", benchmark, "--dsn", dsn,
             "--clients", str(clients), "--duration", str(duration)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"the loop under callgrind failed: {done.stderr[-2000:]}")
        dumps = sorted(Path(work).glob("callgrind.out.*"))
        if not dumps:
            raise RuntimeError("callgrind dumped nothing: is gc.enable() still after the loop?")
        summary = re.search(r"^summary: (\d+)", dumps[0].read_text(), re.MULTILINE)
        transactions = int(done.stdout.split()[-1])
    if summary is None or transactions == 0:
        raise RuntimeError("no instructions or no transactions counted")
    return int(summary.group(1)), transactions


def pgbench_binary() -> str:
    """pgbench itself: Debian's /usr/bin/pgbench is a Perl wrapper that runs it, and
    callgrind would count the wrapper."""
    found = shutil.which("pgbench") or "pgbench"
    if Path(found).resolve().name == "pgbench":
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pgbench"), key=lambda p: int(
        p.parts[-3]) if p.parts[-3].isdigit() else 0)  # fmt: skip
    return str(versions[-1]) if versions else found


def pgbench_instructions(benchmark: str, dsn: str, clients: int, per_client: int) -> float:
    """pgbench's instructions per transaction: (I(-t 2N) - I(-t N)) / (clients x N)."""
    import agent_overhead  # beside this script; pgbench's environment and script

    target = Target.parse(dsn)
    if benchmark == "tpcb":
        target = dbc.in_own_schema(target, tpcb.NAME)
    environment = agent_overhead.pgbench_environment(target)
    counts = []
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "select_update.sql"
        script.write_text(agent_overhead.PGBENCH_SCRIPT)
        what = ["-f", str(script)] if benchmark == "select-update" else ["-b", "tpcb-like"]
        for transactions in (per_client, 2 * per_client):
            out = Path(work) / f"callgrind.{transactions}"
            done = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                 pgbench_binary(), "-n", "-M", "prepared", *what, "-c", str(clients), "-j", "1",
                 "-t", str(transactions)],
                capture_output=True, text=True, env=environment, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"pgbench under callgrind failed: {done.stderr[-2000:]}")
            summary = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
            if summary is None:
                raise RuntimeError("callgrind counted nothing for pgbench")
            counts.append(int(summary.group(1)))
    return (counts[1] - counts[0]) / (clients * per_client)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--clients", default="1,2,32")
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--benchmark", choices=("tpcb", "select-update"), default="tpcb")
    parser.add_argument("--pgbench", action="store_true", help="count pgbench -M prepared")
    parser.add_argument("--transactions", type=int, default=500, help="--pgbench: N a client")
    parser.add_argument("--loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loop:  # the child run under callgrind
        run = run_loop if args.benchmark == "tpcb" else run_select_update
        print(run(args.dsn, int(args.clients), args.duration))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 1
    target = Target.parse(args.dsn)
    if args.benchmark == "select-update":
        _select_update_clients.reset_table(target)
        print(f"select-update via {target.socket or target.host}, {args.duration:g} s each")
        return print_counts(args)
    workspace = dbc.in_own_schema(target, tpcb.NAME)
    tpcb.initialize(workspace, SCALE)
    print(f"tpcb at scale {SCALE} via {target.socket or target.host}, {args.duration:g} s each")
    try:
        return print_counts(args)
    finally:
        dbc.remove_own_objects(target, tpcb.NAME, tpcb.OWN_TABLES)


def print_counts(args: argparse.Namespace) -> int:
    print(f"{'clients':>7} {'transactions':>12} {'instructions/tx':>16}")
    for clients in (int(c) for c in args.clients.split(",")):
        if args.pgbench:
            per_tx = pgbench_instructions(args.benchmark, args.dsn, clients, args.transactions)
            added = clients * args.transactions
            print(f"{clients:>7} {added:>12} {per_tx:>16,.0f}  pgbench", flush=True)
            continue
        total, transactions = instructions(args.benchmark, args.dsn, clients, args.duration)
        print(f"{clients:>7} {transactions:>12} {total / transactions:>16,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
