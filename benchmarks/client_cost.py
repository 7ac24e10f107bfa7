"""What the agent's own load costs against what it makes the server do.

For each server (--dsn, repeatable) and each of the agent's multi-client
benchmarks it drives there (tpcc, tpcb, select-update), at each client count:
the data is built once (``--keep``), then each point is one ``--no-init`` run
of the real agent CLI in a child process. Over that run the script reads

- the agent's CPU: user + system time of the agent process and every worker
  process it waited for (``os.wait4``'s resource usage);
- the server's CPU: user + system time, from /proc, of every process of the
  operating-system user the server runs as (its backends included), before and
  after;
- the transactions the run committed (its document: tpcc's TPM, tpcb's tps,
  select-update's throughput, times the measured duration).

Each point is run twice, for --duration and for three times as long, and the
differences are used: what every run pays once (starting Python, describing
the machine, connecting, checking the data) cancels out.

It prints the agent's CPU per 1,000 transactions and the ratio of the agent's
CPU to the server's, and marks the target: at the client count where
throughput peaks, the agent uses no more than a quarter of a core per server
core busy (ratio <= 0.25). The server's CPU is every process of its user, so
other work on the same server counts as the server's: run it on a quiet
machine (the load average is printed with each line), or give --server-pid
for a server of the benchmark's own (a Firebird SuperServer: one process).

    PYTHONPATH=agents .venv/bin/python benchmarks/client_cost.py \\
        --dsn postgresql://postgres@127.0.0.1:5432/bh_client_cost \\
        --dsn mysql://root@127.0.0.1:3306/bh_client_cost --clients 1,4,16,32
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.25
# The OS user each engine's server runs as (Debian's packages).
SERVER_USERS = {
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "firebird": "firebird",
}
# The measurement each benchmark counts its committed transactions by, and its unit per second.
RATES = {"tpcc": ("tpm", 60.0), "tpcb": ("tps", 1.0), "select-update": ("throughput", 1.0)}
ENGINES = {
    "tpcc": {"postgresql", "mysql", "mariadb", "firebird"},
    "tpcb": {"postgresql", "mysql", "mariadb", "firebird"},
    "select-update": {"postgresql", "mysql", "mariadb", "firebird"},
}


@dataclass(frozen=True)
class Point:
    benchmark: str
    clients: int
    transactions: float
    agent_cpu: float  # seconds
    server_cpu: float  # seconds
    load: float
    agent_kernel: float = 0.0  # seconds of agent_cpu spent in the kernel

    @property
    def per_thousand_ms(self) -> float:
        return 1e6 * self.agent_cpu / self.transactions if self.transactions else float("nan")

    @property
    def ratio(self) -> float:
        return self.agent_cpu / self.server_cpu if self.server_cpu else float("inf")


def engine_of(dsn: str) -> str:
    scheme = urlsplit(dsn).scheme.split("+")[0]
    return {"postgres": "postgresql", "mysql": "mysql", "mariadb": "mariadb"}.get(scheme, scheme)


def user_cpu_seconds(user: str) -> float:
    """User + system time of every process ``user`` runs, from /proc."""
    uid = pwd.getpwnam(user).pw_uid
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # it ended meanwhile
        # utime and stime, and cutime and cstime: a backend that ended meanwhile
        # is counted in its parent's (the postmaster's) time of waited-for children.
        total += sum(int(field) for field in fields[11:15])
    return total / ticks


def process_cpu_seconds(pid: int) -> float:
    """User + system time of one process (and of the children it waited for)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return sum(int(field) for field in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def server_cpu_seconds(engine: str, server_pid: int | None) -> float:
    if server_pid:
        return process_cpu_seconds(server_pid)
    return user_cpu_seconds(SERVER_USERS[engine])


def agent(args: list[str]) -> tuple[str, float, float]:
    """The agent CLI's stdout, its CPU seconds and those in the kernel: the child's and
    those of every worker process it waited for (the resource usage of waited-for
    children)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "agents")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "benchhub_agent.cli", *args],
        capture_output=True,
        env=env,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"agent {' '.join(args[:2])} failed ({done.returncode}): {done.stderr}")
    kernel = after.ru_stime - before.ru_stime
    return done.stdout, (after.ru_utime - before.ru_utime) + kernel, kernel


def committed(document: dict, benchmark: str, clients: int, duration: float) -> float:
    metric, per_second = RATES[benchmark]
    for run in document["runs"]:
        for measurement in run["measurements"]:
            if (
                measurement["metric"] == metric
                and int(measurement.get("parameters", {}).get("clients", -1)) == clients
            ):
                return measurement["value"] / per_second * duration
    raise SystemExit(f"{benchmark}: no {metric} at clients={clients} in the document")


def one_run(
    dsn: str, benchmark: str, clients: int, duration: float, options: argparse.Namespace
) -> tuple[float, float, float, float]:
    """(transactions, agent CPU s, server CPU s, agent kernel s) of one run of
    ``duration`` seconds."""
    engine = engine_of(dsn)
    kept = [] if benchmark == "select-update" else ["--no-init", "--keep"]
    server_before = server_cpu_seconds(engine, options.server_pid)
    out, agent_cpu, agent_kernel = agent(
        ["run", benchmark, "--dsn", dsn, "--duration", str(duration), "--warmup",
         str(options.warmup), "--clients", str(clients), "--repeat", "1", *kept, "--dry-run"]
    )  # fmt: skip
    server_cpu = server_cpu_seconds(engine, options.server_pid) - server_before
    transactions = committed(json.loads(out), benchmark, clients, duration)
    return transactions, agent_cpu, server_cpu, agent_kernel


def measure(dsn: str, benchmark: str, clients: int, options: argparse.Namespace) -> Point:
    """The cost of the transactions alone: a run of 3 x --duration less one of
    --duration, so that what every run pays once (starting Python, describing
    the machine, connecting, checking the data, building the document) cancels."""
    short = one_run(dsn, benchmark, clients, options.duration, options)
    long = one_run(dsn, benchmark, clients, 3 * options.duration, options)
    transactions, agent_cpu, server_cpu, kernel = (b - a for a, b in zip(short, long, strict=True))
    return Point(
        benchmark, clients, transactions, agent_cpu, server_cpu, os.getloadavg()[0], kernel
    )


def build(dsn: str, benchmark: str, options: argparse.Namespace) -> None:
    """The benchmark's data, kept for the --no-init runs that follow."""
    if benchmark == "select-update":
        return
    extra = ["--warehouses", str(options.warehouses)] if benchmark == "tpcc" else []
    agent(
        ["run", benchmark, "--dsn", dsn, "--clients", "1", "--duration", "1", "--warmup", "0",
         "--repeat", "1", "--keep", "--dry-run", *extra]
    )  # fmt: skip


def remove(dsn: str, benchmark: str) -> None:
    """What build() kept goes, through the agent's own clean-up: a --no-init run would
    keep what it found (it was kept for it), and a plain run would load it all again."""
    if benchmark == "select-update":
        return
    from benchhub_agent.benchmarks import _connections, tpcb, tpcc
    from benchhub_agent.benchmarks.base import Target

    module = {"tpcb": tpcb, "tpcc": tpcc}[benchmark]
    _connections.remove_own_objects(Target.parse(dsn), module.NAME, module.OWN_TABLES)


def table(engine: str, points: list[Point]) -> bool:
    """Print one benchmark's points; True when the peak's ratio meets the target."""
    peak = max(points, key=lambda p: p.transactions)
    print(f"{points[0].benchmark} on {engine}")
    print("clients  transactions  agent CPU/1000 tx  agent s  (kernel)  server s  agent/server")
    for point in points:
        mark = ""
        if point is peak:
            met = point.ratio <= TARGET_RATIO
            mark = f"  peak: target <= {TARGET_RATIO:.2f} {'ok' if met else 'MISSED'}"
        print(
            f"{point.clients:7d}  {point.transactions:12.0f}  {point.per_thousand_ms:13.1f} ms"
            f"  {point.agent_cpu:7.2f}  {point.agent_kernel:8.2f}  {point.server_cpu:8.2f}"
            f"  {point.ratio:12.2f}"
            f"{mark}   load {point.load:.2f}"
        )
    return peak.ratio <= TARGET_RATIO


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", action="append", required=True)
    parser.add_argument("--benchmarks", default="tpcc,tpcb,select-update")
    parser.add_argument("--clients", default="1,4,16,32")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--warehouses", type=int, default=2)
    parser.add_argument(
        "--server-pid", type=int, help="count this process's CPU as the server's, not its user's"
    )
    options = parser.parse_args(argv)
    clients = [int(c) for c in options.clients.split(",")]
    all_met = True
    for dsn in options.dsn:
        engine = engine_of(dsn)
        for benchmark in options.benchmarks.split(","):
            if engine not in ENGINES[benchmark]:
                continue
            build(dsn, benchmark, options)
            try:
                points = [measure(dsn, benchmark, n, options) for n in clients]
            finally:
                remove(dsn, benchmark)
            all_met = table(engine, points) and all_met
            print()
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
