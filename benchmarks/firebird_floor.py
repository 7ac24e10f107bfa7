"""The floor under client_cost.py's Firebird ratios: the least CPU any client spends.

firebird_floor.c runs select-update's and tpcb's transactions as the agent runs them
(the same statements, the same round trips: start, each statement as one execute,
commit; update conflicts retried) through Firebird's ISC C API, with nothing else per
transaction. This script builds it (``cc … -lfbclient``, Debian's firebird-dev), makes
the data in a database file of its own with the agent's own code, and measures each
client count as client_cost.py does: a run of --duration and one of three times as
long, the differences used; the client's CPU from the resource usage of its waited-for
processes, split into user and kernel time; the server's from /proc (every process of
the ``firebird`` user). After the runs each benchmark's invariant is checked (the sum of
c2 equals the committed select-updates; tpcb's balances agree).

A ratio here above 0.25 means no client of these transactions can meet the target on
this machine: what is left is the kernel's cost of the round trips and libfbclient's.
A server that others use counts their work as this load's: give a SuperServer of its
own (--port) and its process (--server-pid).

    PYTHONPATH=agents .venv/bin/python benchmarks/firebird_floor.py \\
        --database /tmp/floor.fdb --clients 1,4,16
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchhub_agent import db
from benchhub_agent.benchmarks import _firebird as fb
from benchhub_agent.benchmarks import _select_update_clients as su
from benchhub_agent.benchmarks import tpcb
from benchhub_agent.target import Target
from client_cost import TARGET_RATIO, server_cpu_seconds

SOURCE = Path(__file__).with_suffix(".c")
MARK = "benchhub firebird_floor.py"


def build(directory: str) -> str:
    binary = os.path.join(directory, "firebird_floor")
    subprocess.run(["cc", "-O2", "-o", binary, str(SOURCE), "-lfbclient"], check=True)
    return binary


def one_run(
    binary: str,
    database: fb.FirebirdDatabase,
    benchmark: str,
    clients: int,
    seconds: float,
    server_pid: int | None,
) -> tuple[int, int, float, float, float]:
    """(committed, retries, client user s, client kernel s, server s) of one run."""
    size = su.ROWS if benchmark == "select-update" else 1
    server_before = server_cpu_seconds("firebird", server_pid)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [binary, database.tcp(), benchmark, str(clients), str(seconds), str(size)],
        capture_output=True, text=True, check=False, env=database.environment(),
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server = server_cpu_seconds("firebird", server_pid) - server_before
    if done.returncode != 0:
        raise SystemExit(f"firebird_floor {benchmark} failed: {done.stderr}")
    committed, retries = (int(word) for word in done.stdout.split())
    return (
        committed,
        retries,
        after.ru_utime - before.ru_utime,
        after.ru_stime - before.ru_stime,
        server,
    )


def sum_c2(target: Target) -> int:
    conn = db.connect(target, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT COALESCE(SUM(c2), 0) FROM {su.TABLE}")  # noqa: S608 - constant
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="a database file made and dropped here")
    parser.add_argument("--port", type=int, default=3050)
    parser.add_argument(
        "--server-pid", type=int, help="count this process's CPU as the server's, not its user's"
    )
    parser.add_argument("--benchmarks", default="select-update,tpcb")
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--duration", type=float, default=5.0)
    options = parser.parse_args(argv)
    target = Target.parse(f"firebird://SYSDBA@localhost:{options.port}/{options.database}")
    database = fb.FirebirdDatabase.from_target(target)
    fb.recreate(database, MARK)
    all_met = True
    try:
        su.reset_table(target)
        tpcb.initialize(target, 1)
        with tempfile.TemporaryDirectory() as scratch:
            binary = build(scratch)
            for benchmark in options.benchmarks.split(","):
                committed_all = 0
                print(f"{benchmark} on firebird through the ISC API (firebird_floor.c)")
                print(
                    "clients  transactions  retries  user ms/1000 tx  kernel ms/1000 tx"
                    "  client s  server s  client/server  user/server"
                )
                rows = []
                for clients in (int(c) for c in options.clients.split(",")):
                    point = (binary, database, benchmark, clients)
                    short = one_run(*point, options.duration, options.server_pid)
                    long = one_run(*point, 3 * options.duration, options.server_pid)
                    committed_all += short[0] + long[0]
                    tx, retries, user, kernel, server = (
                        b - a for a, b in zip(short, long, strict=True)
                    )
                    rows.append((clients, tx, retries, user, kernel, server, os.getloadavg()[0]))
                peak = max(rows, key=lambda row: row[1])
                for row in rows:
                    clients, tx, retries, user, kernel, server, load = row
                    ratio = (user + kernel) / server
                    mark = ""
                    if row is peak:
                        met = ratio <= TARGET_RATIO
                        all_met = all_met and met
                        mark = f"  peak: {'ok' if met else 'above'} {TARGET_RATIO:.2f}"
                    print(
                        f"{clients:7d}  {tx:12d}  {retries:7d}  {1e6 * user / tx:15.1f}"
                        f"  {1e6 * kernel / tx:17.1f}  {user + kernel:8.2f}  {server:8.2f}"
                        f"  {ratio:13.2f}  {user / server:11.2f}{mark}   load {load:.2f}"
                    )
                if benchmark == "select-update":
                    total = sum_c2(target)
                    state = "held" if total == committed_all else "BROKEN"
                    print(f"invariant {state}: sum(c2) = {total}, committed {committed_all}")
                else:
                    print(tpcb.check_balances(target))
                print()
    finally:
        fb.drop(database)
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
