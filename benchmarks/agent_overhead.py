"""Does the agent measure the database or itself? select-update against pgbench, same run.

For 1, 8 and 32 clients, alternately: the agent's own select-update engine
(time-based, after a warm-up) and ``pgbench -M prepared -f`` running the same
transaction on the same 100-row table, each after a CHECKPOINT on a freshly
reset table, each in one connection lifetime (warm-up, then the window, as the
agent runs), each counting the transactions that end in the same window after
its first transaction began. Prints the tps of each and the ratio agent/pgbench
(median of the rounds; 7 by default, as single rounds swing by ±30 % on a
2-vCPU machine). Target >= 0.9 at every client count (issue 12).

Then tpcb: the agent's own tpcb engine (the same non-blocking loop,
``benchmarks/_tpcb_event_loop.py``) against ``pgbench -M prepared`` running its
built-in tpcb-like script on the same tables (the benchmark's own schema, at
``--tpcb-scale``), interleaved, each after emptying pgbench_history, a VACUUM of
the small tables and a CHECKPOINT, each counted over the same window after a
warm-up. Target >= 0.9 at every client count.

With ``--mysql-dsn``, the same two on MariaDB/MySQL against sysbench 1.0
(Debian's package; ``make bench-tools`` installs it), each tool running the same
transaction from a Lua script over the text protocol, with ``--warmup-time`` then
the window, on the same tables: select-update (autocommit off, SELECT … FOR
UPDATE, UPDATE, COMMIT: three round trips, as the agent's clients) and tpcb
(the agent's engine: threads over min(clients, CPUs, 8) processes through
mysqlclient, or PyMySQL with ``--mysql-driver pymysql``; BEGIN … COMMIT, seven
round trips). Without sysbench (or pgbench) the comparisons that need it are
skipped, each named with the reason, and the script exits 1: a target not
measured is not met. ``--skip-postgresql`` leaves PostgreSQL's comparisons
out, ``--skip-select-update`` and ``--skip-tpcb`` a benchmark on both engines.

Every tpcb line ends with the CPU share of the agent's busiest worker process
(what the run would report as ``load_engine_cpu``) and the 1-minute load
average: the machine may be shared, and a figure measured beside other work is
not a quiet machine's. ``--clients`` picks the client counts, so a quiet run
can be split into chunks of a few minutes; ``--keep-tables`` reuses tpcb's
tables (fill them once with ``--rounds 0`` under the busy lock).

Then the agent's peak memory during a full 1…100-client sweep (its largest
point capped at the connections the server has free), run as the
real command (``benchhub-agent run select-update --dry-run``): the sum of
VmRSS over its process and its workers, sampled every 20 ms. Target < 200 MB.
RSS counts pages shared between forked workers once per process, so the
proportional (PSS) sum is printed beside it. ``--help`` lists the options.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from benchhub_agent import db, errors, sysinfo
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _tpcb_event_loop, select_update, tpcb
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.placement import UNPINNED

DEFAULT_DSN = "postgresql://postgres@/benchhub_agent_test?host=/var/run/postgresql"
# Every benchmark the agent drives itself, at every client count (issue 12).
TARGET = 0.9
NATIVE_TOOLS = ("pgbench", "sysbench")
INSTALL_TOOLS = "make bench-tools"

# The agent's transaction exactly: read c2, write back the value read + 1 (\gset).
# The table name is the benchmark's constant; nothing here comes from outside.
PGBENCH_SCRIPT = f"""\
\\set r random(1, {select_update.ROWS})
BEGIN;
SELECT c2 AS v FROM {select_update.TABLE} WHERE c1 = :r FOR UPDATE \\gset
UPDATE {select_update.TABLE} SET c2 = :v + 1 WHERE c1 = :r;
COMMIT;
"""  # noqa: S608


def agent_tps(
    target: Target,
    clients: int,
    duration: float,
    warmup: float,
    client_loop: str = "events",
    mysql_driver: str | None = None,
) -> float:
    point = select_update.run_point(
        target,
        clients=clients,
        transactions=None,
        duration=duration,
        warmup=warmup,
        locking="for_update",
        processes=None,
        pin=UNPINNED,
        progress=SilentProgress(),
        label=f"agent {clients}",
        client_loop=client_loop,
        mysql_driver=mysql_driver,
    )
    return point.throughput


def load_average() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def pgbench_tps(
    target: Target, script: Path | None, clients: int, duration: float, warmup: float
) -> float:
    """pgbench's tps over the agent's window: transactions ending ``warmup`` to
    ``warmup + duration`` seconds after the first one began, in one invocation.

    One invocation, so pgbench's connections, like the agent's, prepare their statements
    on the freshly reset table and keep them through the warm-up into the measurement:
    PostgreSQL caches a generic plan per connection after five executions, a sequential
    scan while the table is one page, an index scan once updates have grown it. A second
    invocation after a separate warm-up plans on the grown table, measures another plan
    than the agent's, and made pgbench look 1.5 times as fast. The window is read from
    pgbench's per-transaction log (completion time and latency of each), to the
    microsecond: the table grows during a run and the throughput falls with it, so a
    window half a second later is a different measurement.
    """
    if script is not None:
        select_update.reset_table(target)
    threads = min(clients, os.cpu_count() or 1)
    # No script: pgbench's built-in tpcb-like transaction.
    what = ["-f", str(script)] if script is not None else ["-b", "tpcb-like"]
    with tempfile.TemporaryDirectory() as logs:
        command = ["pgbench", "-n", "-M", "prepared", *what,
                   "-c", str(clients), "-j", str(threads),
                   "-T", str(int(warmup + duration) + 1),
                   "-l", "--log-prefix", str(Path(logs) / "tx")]  # fmt: skip
        run_pgbench(command, pgbench_environment(target))
        began, ended = [], []
        for log in Path(logs).iterdir():  # one file per pgbench thread
            for line in log.read_text().splitlines():
                # client_id transaction_no latency_us script_no epoch_s epoch_us
                fields = line.split()
                end = int(fields[4]) * 1_000_000 + int(fields[5])
                ended.append(end)
                began.append(end - int(fields[2]))
    window_start = min(began) + int(warmup * 1_000_000)
    window_end = window_start + int(duration * 1_000_000)
    return sum(1 for end in ended if window_start <= end <= window_end) / duration


def checkpoint(target: Target) -> None:
    """CHECKPOINT (superuser or pg_checkpoint): pgbench alone varied by 12 % between
    identical 10 s runs without it, by 4 % with it."""
    conn = db.connect(target, autocommit=True)
    try:
        conn.execute("CHECKPOINT")
    finally:
        conn.close()


def run_pgbench(command: list[str], environment: dict[str, str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pgbench failed: {done.stderr.strip()}")
    return done.stdout


def pgbench_environment(target: Target) -> dict[str, str]:
    environment = dict(os.environ)
    pairs = {
        "PGHOST": target.socket or target.host,
        "PGPORT": target.port,
        "PGUSER": target.user,
        "PGPASSWORD": target.password,
        "PGDATABASE": target.database,
        "PGOPTIONS": target.options.get("options"),  # a benchmark's own schema
    }
    environment.update({k: str(v) for k, v in pairs.items() if v})
    return environment


def compare(args: argparse.Namespace, target: Target) -> bool:
    script = Path(tempfile.mkdtemp()) / "select_update.sql"
    script.write_text(PGBENCH_SCRIPT)

    def measure(clients: int, round_: int) -> Round:
        # Interleaved, so drift of the machine touches both alike; each after a
        # checkpoint, so neither runs into one or into WAL files still to be created.
        checkpoint(target)
        agent = agent_tps(target, clients, args.duration, args.warmup, args.client_loop)
        checkpoint(target)
        return Round(agent, pgbench_tps(target, script, clients, args.duration, args.warmup))

    # Each table names its benchmark: the select-update and tpcb tables have the same
    # columns, and without a title the second read as the first printed twice.
    return comparison_table(
        "select-update: agent against pgbench -M prepared -f (the same transaction)",
        "pgbench",
        args,
        measure,
    )


class Round(NamedTuple):
    """One round of a comparison: the agent's tps, the native tool's, and for tpcb the
    CPU share of the agent's busiest worker process."""

    agent: float
    native: float
    busiest_cpu: float | None = None


def comparison_table(
    title: str, tool: str, args: argparse.Namespace, measure: Callable[[int, int], Round]
) -> bool:
    """Print one comparison: for each of ``args.clients``, ``args.rounds`` rounds of
    ``measure(clients, round)``, the medians of the agent's and ``tool``'s tps and of
    their ratios against TARGET; whether every client count met it."""
    print(title)
    heading = f"{tool} tps"
    width = len(heading) + 1
    if args.rounds == 0:
        # A run that only fills tpcb's tables (--keep-tables): no figure, no verdict.
        print("not measured (--rounds 0)", flush=True)
        return True
    print(f"{'clients':>7} {'agent tps':>10} {heading:>{width}} {'ratio':>6} {'target':>7}")
    met = True
    for clients in args.clients:
        rounds = [measure(clients, round_) for round_ in range(args.rounds)]
        ratios = [r.agent / r.native for r in rounds]
        ratio = statistics.median(ratios)
        met = met and ratio >= TARGET
        verdict = "ok" if ratio >= TARGET else "MISSED"
        cpu = [r.busiest_cpu for r in rounds if r.busiest_cpu is not None]
        busiest = f"   agent's busiest worker {max(cpu):.0f} % CPU" if cpu else ""
        print(
            f"{clients:>7} {statistics.median(r.agent for r in rounds):>10.0f} "
            f"{statistics.median(r.native for r in rounds):>{width}.0f} "
            f"{ratio:>6.2f} {TARGET:>5.2f} {verdict}   rounds: "
            + " ".join(f"{r:.2f}" for r in ratios)
            + f"{busiest}   {load_average()}",
            flush=True,
        )
    return met


# pgbench's built-in tpcb-like transaction for sysbench 1.0, over the text protocol.
SYSBENCH_TPCB = """\
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end
function thread_done()
  con:disconnect()
end
function event()
  local scale = tonumber(os.getenv("TPCB_SCALE"))
  local aid = sysbench.rand.uniform(1, 100000 * scale)
  local bid = sysbench.rand.uniform(1, scale)
  local tid = sysbench.rand.uniform(1, 10 * scale)
  local delta = sysbench.rand.uniform(0, 10000) - 5000  -- uniform() takes unsigned bounds
  con:query("BEGIN")
  con:query("UPDATE pgbench_accounts SET abalance = abalance + " .. delta .. " WHERE aid = " .. aid)
  con:query("SELECT abalance FROM pgbench_accounts WHERE aid = " .. aid)
  con:query("UPDATE pgbench_tellers SET tbalance = tbalance + " .. delta .. " WHERE tid = " .. tid)
  con:query("UPDATE pgbench_branches SET bbalance = bbalance + " .. delta .. " WHERE bid = " .. bid)
  con:query("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (" ..
            tid .. ", " .. bid .. ", " .. aid .. ", " .. delta .. ", CURRENT_TIMESTAMP)")
  con:query("COMMIT")
end
"""


# select-update's transaction for sysbench 1.0, as the agent's MariaDB/MySQL clients run it:
# autocommit off (no BEGIN), the row read FOR UPDATE, the value read + 1 written, COMMIT.
SYSBENCH_SELECT_UPDATE = f"""\
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  con:query("SET autocommit = 0")
end
function thread_done()
  con:disconnect()
end
function event()
  local key = sysbench.rand.uniform(1, {select_update.ROWS})
  local rs = con:query("SELECT c2 FROM {select_update.TABLE} WHERE c1 = " .. key .. " FOR UPDATE")
  local value = tonumber(rs:fetch_row()[1]) + 1
  con:query("UPDATE {select_update.TABLE} SET c2 = " .. value .. " WHERE c1 = " .. key)
  con:query("COMMIT")
end
"""  # noqa: S608


def sysbench_tps(target: Target, script: Path, clients: int, scale: int, args) -> float:
    command = [
        "sysbench", str(script), f"--threads={clients}", f"--time={int(args.duration)}",
        f"--warmup-time={int(args.warmup)}", "--db-driver=mysql",
        f"--mysql-host={target.host or 'localhost'}", f"--mysql-port={target.port or 3306}",
        f"--mysql-user={target.user or 'root'}", f"--mysql-db={target.database}",
        "--rand-type=uniform", "run",
    ]  # fmt: skip
    environment = {**os.environ, "TPCB_SCALE": str(scale)}
    if target.password:
        command.insert(-1, f"--mysql-password={target.password}")
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    found = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec", done.stdout)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"sysbench failed: {done.stderr.strip() or done.stdout[-500:]}")
    # sysbench counts Lua events; one event is one transaction here.
    return float(found.group(1))


def tpcb_tables(args: argparse.Namespace, target: Target) -> None:
    """Build tpcb's tables at --tpcb-scale, unless --keep-tables finds them built already
    (so that a fill under the busy lock and the timing under the quiet one can be two runs)."""
    if args.keep_tables and built_scale(target) == args.tpcb_scale:
        print(f"tpcb: reusing the tables at scale {args.tpcb_scale} (--keep-tables)")
        return
    tpcb.initialize(target, args.tpcb_scale)


def built_scale(target: Target) -> int | None:
    try:
        return tpcb.measured_scale(target)
    except Exception:  # no tables yet (each driver raises its own error)
        return None


def drop_tpcb_tables(args: argparse.Namespace, target: Target) -> None:
    if not args.keep_tables:
        dbc.remove_own_objects(target, tpcb.NAME, tpcb.OWN_TABLES)


def compare_select_update_mysql(args: argparse.Namespace, target: Target) -> bool:
    """The agent's MariaDB/MySQL select-update clients against sysbench, same transaction."""
    script = Path(tempfile.mkdtemp()) / "select_update.lua"
    script.write_text(SYSBENCH_SELECT_UPDATE)
    driver = dbc.mysql_driver(args.mysql_driver)

    def measure(clients: int, round_: int) -> Round:
        agent = agent_tps(target, clients, args.duration, args.warmup, "threads", driver)
        select_update.reset_table(target)
        return Round(agent, sysbench_tps(target, script, clients, 0, args))

    try:
        return comparison_table(
            f"select-update on {target.engine}: agent ({driver}) against sysbench "
            "(the same transaction)",
            "sysbench",
            args,
            measure,
        )
    finally:
        dbc.remove_own_objects(target, select_update.NAME, select_update.OWN_TABLES)


def compare_tpcb_mysql(args: argparse.Namespace, target: Target) -> bool:
    """The agent's MariaDB/MySQL tpcb engine against sysbench running the same transaction."""
    script = Path(tempfile.mkdtemp()) / "tpcb.lua"
    script.write_text(SYSBENCH_TPCB)
    tpcb_tables(args, target)
    if args.rounds == 0:
        return True
    driver = dbc.mysql_driver(args.mysql_driver)

    def measure(clients: int, round_: int) -> Round:
        tpcb._prepare_repetition(target)
        histogram, _, cpu = tpcb.run_agent_load(
            target,
            clients,
            args.tpcb_scale,
            args.warmup,
            args.duration,
            round_,
            args.mysql_driver,
        )
        tpcb._prepare_repetition(target)
        native = sysbench_tps(target, script, clients, args.tpcb_scale, args)
        return Round(histogram.count / args.duration, native, cpu)

    try:
        return comparison_table(
            f"tpcb on {target.engine} at scale {args.tpcb_scale}: agent ({driver}) "
            "against sysbench",
            "sysbench",
            args,
            measure,
        )
    finally:
        drop_tpcb_tables(args, target)


def compare_tpcb(args: argparse.Namespace, target: Target) -> bool:
    """The agent's tpcb engine against pgbench's built-in tpcb-like, same tables."""
    workspace = dbc.in_own_schema(target, tpcb.NAME)
    tpcb_tables(args, workspace)
    if args.rounds == 0:
        return True

    def measure(clients: int, round_: int) -> Round:
        tpcb._prepare_repetition(workspace)
        checkpoint(target)
        histogram, _, cpu = _tpcb_event_loop.run_load(
            workspace, clients, args.tpcb_scale, args.warmup, args.duration, round_
        )
        tpcb._prepare_repetition(workspace)
        checkpoint(target)
        native = pgbench_tps(workspace, None, clients, args.duration, args.warmup)
        return Round(histogram.count / args.duration, native, cpu)

    try:
        return comparison_table(
            f"tpcb on postgresql at scale {args.tpcb_scale}: agent against pgbench -b tpcb-like",
            "pgbench",
            args,
            measure,
        )
    finally:
        drop_tpcb_tables(args, target)


def process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = sysinfo.read_text(f"/proc/{entry}/stat")
        if stat:
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def memory_kb(pid: int) -> tuple[int, int]:
    status = sysinfo.read_text(f"/proc/{pid}/status") or ""
    rollup = sysinfo.read_text(f"/proc/{pid}/smaps_rollup") or ""
    rss = re.search(r"^VmRSS:\s+(\d+)", status, re.MULTILINE)
    pss = re.search(r"^Pss:\s+(\d+)", rollup, re.MULTILINE)
    return (int(rss.group(1)) if rss else 0, int(pss.group(1)) if pss else 0)


def sweep_clients(target: Target) -> list[int]:
    """The default sweep, its largest points capped at what the server can connect now
    (each client holds a connection, the final table check one more)."""
    most = db.free_connections(target) - 1
    return sorted({min(n, most) for n in select_update.DEFAULT_CLIENTS})


def peak_memory(args: argparse.Namespace, clients: list[int]) -> tuple[float, float, float]:
    agent = shutil.which("benchhub-agent") or str(Path(sys.executable).parent / "benchhub-agent")
    command = [agent, "run", "select-update", "--dsn", args.dsn, "--repeat", "1",
               "--clients", ",".join(map(str, clients)),
               "--transactions", str(args.sweep_transactions), "--dry-run"]  # fmt: skip
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks = {"rss": 0, "pss": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            totals = [memory_kb(pid) for pid in process_tree(process.pid)]
            peaks["rss"] = max(peaks["rss"], sum(t[0] for t in totals))
            peaks["pss"] = max(peaks["pss"], sum(t[1] for t in totals))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, stderr = process.communicate()
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise RuntimeError(f"the sweep failed: {stderr.decode()[-2000:]}")
    return peaks["rss"] / 1024, peaks["pss"] / 1024, time.monotonic() - started


def describe_machine(target: Target) -> None:
    hw = sysinfo.hardware()
    info = db.describe(target)
    ram = hw.get("ram_bytes", 0) / 2**30
    print(f"machine: {hw.get('cpu')} · {hw.get('cores')} cores / {hw.get('threads')} threads · "
          f"{ram:.0f} GiB · virtualization {hw.get('virtualization')}")  # fmt: skip
    print(f"os: {platform.platform()} · python {platform.python_version()}")
    print(f"server: {info.version_string} via {info.protocol} · settings: {info.settings}")
    for tool in NATIVE_TOOLS:
        path = shutil.which(tool)
        version = path and subprocess.run([path, "--version"], capture_output=True, text=True)
        print(f"{tool}: {version.stdout.strip() if version else 'not installed'}")


def missing_tool(tool: str, comparisons: str) -> str:
    """The line that says a comparison was skipped, why, and how to make it run."""
    return (
        f"SKIPPED {comparisons}: {tool} is not installed "
        f"(`{INSTALL_TOOLS}` installs it from Debian's packages)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=DEFAULT_DSN)
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument(
        "--rounds",
        type=int,
        default=7,
        help="rounds per client count, of which the medians are printed; 0 times nothing "
        "(with --keep-tables: only fill tpcb's tables)",
    )
    parser.add_argument("--sweep-transactions", type=int, default=10_000)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-select-update", action="store_true")
    parser.add_argument("--skip-tpcb", action="store_true")
    parser.add_argument("--tpcb-scale", type=int, default=10)
    parser.add_argument(
        "--skip-postgresql",
        action="store_true",
        help="leave out PostgreSQL's comparisons (its DSN still serves --skip-memory's sweep)",
    )
    parser.add_argument(
        "--mysql-dsn", help="also select-update and tpcb on MariaDB/MySQL against sysbench"
    )
    parser.add_argument(
        "--mysql-driver",
        choices=tpcb.MYSQL_DRIVERS,
        help="the agent's MySQL/MariaDB driver (default: mysqlclient when installed)",
    )
    parser.add_argument(
        "--keep-tables",
        action="store_true",
        help="reuse tpcb's tables when they are at --tpcb-scale and keep them afterwards: "
        "fill once (--rounds 0, under the busy lock), then time in short runs",
    )
    parser.add_argument(
        "--client-loop",
        choices=select_update.CLIENT_LOOPS,
        default="events",
        help="the agent's engine: one event loop per worker process (default) or threads",
    )
    args = parser.parse_args()
    if args.rounds < 0:
        parser.error(f"--rounds {args.rounds}: give 0 or more")
    args.clients = [int(c) for c in args.clients.split(",")]
    target = Target.parse(args.dsn)
    describe_machine(target)
    print(f"uptime: {os.getloadavg()} (1, 5, 15 min load averages; not a quiet machine if > 0.5)")
    met = True
    skipped: list[str] = []
    wanted = [name for name, skip in (("select-update", args.skip_select_update),
                                      ("tpcb", args.skip_tpcb)) if not skip]  # fmt: skip
    if wanted and not args.skip_postgresql:
        if not shutil.which("pgbench"):
            skipped.append(missing_tool("pgbench", f"PostgreSQL {' and '.join(wanted)}"))
        else:
            if "select-update" in wanted:
                met = compare(args, target) and met
            if "tpcb" in wanted:
                met = compare_tpcb(args, target) and met
    if wanted and not args.mysql_dsn:
        print(f"MariaDB/MySQL {' and '.join(wanted)}: not compared (no --mysql-dsn)")
    elif wanted and not shutil.which("sysbench"):
        skipped.append(missing_tool("sysbench", f"MariaDB/MySQL {' and '.join(wanted)}"))
    elif wanted:
        mysql = Target.parse(args.mysql_dsn)
        if "select-update" in wanted:
            met = compare_select_update_mysql(args, mysql) and met
        if "tpcb" in wanted:
            met = compare_tpcb_mysql(args, mysql) and met
    for line in skipped:  # at the end too, where a reader of the figures looks
        print(line, flush=True)
    met = met and not skipped
    if not args.skip_memory:
        clients = sweep_clients(target)
        rss, pss, seconds = peak_memory(args, clients)
        verdict = "ok" if rss < 200 else "MISSED"
        print(f"peak memory over a {clients[0]}..{clients[-1]}-client sweep ({seconds:.0f}s): "
              f"RSS sum {rss:.0f} MB (target < 200: {verdict}), PSS sum {pss:.0f} MB")  # fmt: skip
        met = met and rss < 200
    return 0 if met else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # an unreachable database: the agent's one line; a bug: its traceback
        if (line := errors.explain(exc)) is None:
            raise
        sys.exit(f"agent_overhead: {line}")
