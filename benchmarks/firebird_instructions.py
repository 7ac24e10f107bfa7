"""User-space instructions per transaction of the agent's Firebird clients, under callgrind.

CPU time on a shared machine swings with the load; the instructions a transaction costs
do not. This script makes a database file of its own with select-update's and tpcb's
tables, then runs one client of each benchmark (the agent's own client classes, in one
process; select-update's in the loop its worker runs) under ``valgrind --tool=callgrind``
for N transactions and for 3 N, and prints the difference per transaction: what starting
Python, connecting and preparing cost cancels. The kernel's part of each round trip is not
counted (callgrind sees user space only): firebird_floor.py measures it.

    PYTHONPATH=agents .venv/bin/python benchmarks/firebird_instructions.py \\
        --database /tmp/instructions.fdb --transactions 300
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from benchhub_agent.benchmarks import _firebird as fb
from benchhub_agent.benchmarks import _select_update_clients as su
from benchhub_agent.benchmarks import _tpcb_processes, tpcb
from benchhub_agent.target import Target

MARK = "benchhub firebird_instructions.py"


def run_client(dsn: str, benchmark: str, transactions: int) -> None:
    """The transactions themselves, as the agent's worker runs them."""
    target = Target.parse(dsn)
    draw = random.Random(1).random
    if benchmark == "select-update":
        client = su.FirebirdClient(target, "for_update")
        # The benchmark's own loop: its key draws, clock reads and latency counts included.
        client.run_alone(transactions, (0.0, None), random.Random(1), [0], 0, threading.Event())
    else:
        client = _tpcb_processes.FirebirdClient(target)
        for _ in range(transactions):
            aid, bid = int(draw() * 100_000) + 1, 1
            tid, delta = int(draw() * 10) + 1, int(draw() * 10_001) - 5000
            client.run(aid, bid, tid, delta)
    client.close()


def instructions(dsn: str, benchmark: str, transactions: int, scratch: str) -> int:
    out = os.path.join(scratch, f"callgrind.{benchmark}.{transactions}")
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
         __file__, "--client", benchmark, "--dsn", dsn, "--transactions", str(transactions)],
        check=True, capture_output=True,
    )  # fmt: skip
    summary = re.search(r"^summary: (\d+)", Path(out).read_text(), re.MULTILINE)
    if summary is None:
        raise SystemExit(f"{out}: no summary line")
    return int(summary.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="a database file made and dropped here")
    parser.add_argument("--port", type=int, default=3050)
    parser.add_argument("--benchmarks", default="select-update,tpcb")
    parser.add_argument("--transactions", type=int, default=300)
    parser.add_argument("--client", help=argparse.SUPPRESS)  # the run under callgrind
    parser.add_argument("--dsn", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.client:
        run_client(options.dsn, options.client, options.transactions)
        return 0
    if not options.database:
        parser.error("--database is required")
    dsn = f"firebird://SYSDBA@localhost:{options.port}/{options.database}"
    target = Target.parse(dsn)
    database = fb.FirebirdDatabase.from_target(target)
    fb.recreate(database, MARK)
    try:
        su.reset_table(target)
        tpcb.initialize(target, 1)
        with tempfile.TemporaryDirectory() as scratch:
            for benchmark in options.benchmarks.split(","):
                n = options.transactions
                once = instructions(dsn, benchmark, n, scratch)
                thrice = instructions(dsn, benchmark, 3 * n, scratch)
                print(f"{benchmark}: {(thrice - once) / (2 * n):,.0f} instructions per transaction")
    finally:
        fb.drop(database)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
