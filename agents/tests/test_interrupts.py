"""A run stopped by Ctrl-C or killed with SIGKILL mid-run never touches the user's data.

For every benchmark on every engine it runs on, the user's database holds tables under
the names the benchmark once made in it (pgbench_accounts, bench1, sort_rows,
backup_rows, tpcc's warehouse …; on Firebird the DSN's own database file), with rows of
their own. The real command runs against the real server and is stopped once the
database shows it loading or measuring. After Ctrl-C (SIGINT to its process group, as a
terminal sends it): exit 130, the one line "interrupted" on stderr, none of its
processes and none of its objects left. After SIGKILL: its worker processes end with it,
its marked objects are left, and the next ordinary run of the same benchmark succeeds and
clears them. Either way the user's rows are still there, byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _firebird as fb
from benchhub_agent.benchmarks import _tpcc_load, backup, external_sort, sql_bench, tpcb
from benchhub_agent.benchmarks import select_update as su
from benchhub_agent.benchmarks.base import Target


@dataclass(frozen=True)
class Case:
    old_names: tuple[str, ...]  # what the benchmark once made in the DSN's database
    busy: str  # a query on the agent's own objects that finds a row once it loads or runs
    stopped: tuple[str, ...]  # arguments of a run long enough to be stopped mid-way
    short: tuple[str, ...]  # arguments of the ordinary run that follows a killed one
    # What the agent says once its load is over, where the rows are there before it has
    # finished it (an index, ANALYZE): until then a Ctrl-C may still meet its "done" line.
    loaded: str = ""


CASES = {
    # Every UPDATE adds 1 to a row that starts at 0: a row above 0 means it is measuring.
    "select-update": Case(
        su.OWN_TABLES,
        f"SELECT 1 FROM {su.TABLE} WHERE c2 > 0",
        ("--clients", "2", "--duration", "60", "--warmup", "0"),
        ("--clients", "1", "--transactions", "150"),
    ),
    "tpcb": Case(
        tpcb.OWN_TABLES,
        "SELECT 1 FROM pgbench_history",  # one row per transaction measured
        ("--clients", "2", "--duration", "60", "--warmup", "0"),
        ("--clients", "1", "--duration", "0.4", "--warmup", "0"),
    ),
    "external-sort": Case(
        external_sort.OWN_TABLES,
        f"SELECT 1 FROM {external_sort.TABLE}",  # loaded: the sorts follow
        ("--rows", "3000", "--repeat", "5000"),
        ("--rows", "700"),
        loaded="rows: done in",
    ),
    "sql-bench": Case(
        sql_bench.OWN_TABLES,
        "SELECT 1 FROM bench2",  # the last table filled before the operations
        ("--rows", "300", "--repeat", "500"),
        ("--rows", "150", "--operations", "insert,select_range,create+drop"),
    ),
    "backup": Case(
        backup.OWN_TABLES,
        f"SELECT 1 FROM {backup.TABLE}",  # loaded: the dumps follow
        ("--rows", "2500", "--protocols", "tcp_loopback", "--repeat", "500"),
        ("--rows", "600", "--protocols", "tcp_loopback"),
        loaded="rows: done in",
    ),
    "tpcc": Case(
        _tpcc_load.TABLES,
        "SELECT 1 FROM item",  # the load processes have committed a part
        ("--clients", "1", "--duration", "60", "--warmup", "0"),
        ("--clients", "1", "--duration", "0.4", "--warmup", "0"),
    ),
}
ENGINES = ["postgresql", "mariadb"]
PAIRS = [(name, engine) for name in CASES for engine in ENGINES] + [("backup", "firebird")]


# --- the user's data ---------------------------------------------------------------


def execute(target: Target, *statements: str) -> list[tuple]:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            rows: list[tuple] = []
            for statement in statements:
                cur.execute(statement)
                rows = list(cur.fetchall()) if cur.description else []
            return rows
    finally:
        conn.close()


def user_rows(index: int) -> list[str]:
    """Uneven rows: a count of their own per table, a NULL, a quote, a non-ASCII name."""
    values = []
    for i in range(4 + 3 * index + index % 2):
        note = "NULL" if i == 2 else f"'row {i * 7 % 11} of l''usager, Zürich'"
        values.append(f"({1000 - i * 13}, {note}, {i * 1.25 - 3:.2f})")
    return values


def put_users_tables(target: Target, names: tuple[str, ...]) -> None:
    """The user's tables under the benchmark's old names, plus one of theirs alone."""
    for index, name in enumerate((*names, "customer_orders")):
        create = f"CREATE TABLE {name} (id int PRIMARY KEY, note varchar(60), amount numeric(8,2))"
        execute(
            target,
            f"DROP TABLE IF EXISTS {name}",
            create,
            f"INSERT INTO {name} VALUES {', '.join(user_rows(index))}",
        )


def put_users_firebird_database(target: Target) -> None:
    """The DSN's own Firebird database: the user's, with a backup_rows of theirs."""
    users = fb.FirebirdDatabase.from_target(target)
    fb.recreate(users, "the user's own")
    script = ""
    for index, name in enumerate(("backup_rows", "customer_orders")):
        script += (
            f"CREATE TABLE {name} (id int PRIMARY KEY, note varchar(60), amount numeric(8,2));\n"
        )
        script += "COMMIT;\n"
        script += "".join(f"INSERT INTO {name} VALUES {row};\n" for row in user_rows(index))
    fb.isql(users, script + "COMMIT;\n")


def users_data(target: Target, names: tuple[str, ...]) -> dict[str, tuple[int, str]]:
    """Each user table's row count and a digest of its rows in key order."""
    if target.engine == "firebird":
        users = fb.FirebirdDatabase.from_target(target)
        found = {}
        for name in ("backup_rows", "customer_orders", "benchhub_owner"):
            listing = fb.isql(users, f"SET LIST ON;\nSELECT * FROM {name} ORDER BY 1;\n")
            count = fb.query_values(users, f"SELECT count(*) FROM {name}")
            found[name] = (int(count[0]), hashlib.sha256(listing.encode()).hexdigest())
        return found
    found = {}
    for name in (*names, "customer_orders"):
        rows = execute(target, f"SELECT id, note, amount FROM {name} ORDER BY id")
        found[name] = (len(rows), hashlib.sha256(repr(rows).encode()).hexdigest())
    return found


# --- the agent's own objects -------------------------------------------------------


def own_firebird(target: Target) -> fb.FirebirdDatabase:
    path = dbc.own_firebird_path(fb.FirebirdDatabase.from_target(target).path, "backup")
    return fb.FirebirdDatabase.from_target(Target.parse(f"firebird://SYSDBA@localhost/{path}"))


def own_object_left(target: Target, name: str) -> bool:
    """Whether the benchmark's own schema, database or file is there."""
    if target.engine == "firebird":
        return Path(own_firebird(target).path).exists()
    if target.engine == "postgresql":
        query = f"SELECT 1 FROM pg_namespace WHERE nspname = '{dbc.schema_name(name)}'"
    else:
        own = dbc.own_database_name(target.database, name)
        query = f"SELECT 1 FROM information_schema.schemata WHERE schema_name = '{own}'"
    return bool(execute(target, query))


def is_busy(target: Target, name: str) -> bool:
    """Whether the run has got as far as loading or measuring in its own objects."""
    if target.engine == "firebird":
        own = own_firebird(target)
        try:
            return fb.query_values(own, "SELECT count(*) FROM backup_rows") not in ([], ["0"])
        except fb.FirebirdError:  # not made or not filled yet
            return False
    if target.engine == "postgresql":
        place, patience = dbc.schema_name(name), "SET lock_timeout = '300ms'"
    else:
        place = f"`{dbc.own_database_name(target.database, name)}`"
        patience = "SET SESSION lock_wait_timeout = 1"
    query = CASES[name].busy.replace(" FROM ", f" FROM {place}.", 1) + " LIMIT 1"
    try:
        return bool(execute(target, patience, query))
    except Exception:  # not made yet, or being remade: ask again
        return False


# --- the agent's processes ---------------------------------------------------------


def agent(target: Target, name: str, arguments: tuple[str, ...], outbox: Path) -> subprocess.Popen:
    """The real command, in a process group of its own (as a shell starts a job)."""
    return subprocess.Popen(
        [sys.executable, "-m", "benchhub_agent", "run", name, "--dsn", dsn(target),
         *arguments, "--dry-run"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
             # No heartbeat line: what stderr holds is what the agent said.
             "BENCHHUB_PROGRESS_INTERVAL": "3600",
             "BENCHHUB_OUTBOX": str(outbox), "BENCHHUB_CONFIG": str(outbox / "none.toml")},
    )  # fmt: skip


def dsn(target: Target) -> str:
    if target.engine == "firebird":
        return f"firebird://SYSDBA@localhost/{fb.FirebirdDatabase.from_target(target).path}"
    server = dbs.PG_SERVER if target.engine == "postgresql" else dbs.MYSQL_SERVER
    return f"{server}/{target.database}"


def stat(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat from its third field on (state, ppid, …), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(root: int) -> dict[int, str]:
    """The processes below ``root`` now, each with its start time: a pid freed by one of
    them and given to another process on this shared machine is not taken for it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        fields = stat(entry.name) if entry.name.isdigit() else None
        if fields:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        fields = stat(pid)
        if fields:
            found[pid] = fields[19]
        todo.extend(children.get(pid, []))
    return found


def alive(processes: dict[int, str]) -> set[int]:
    """Those of ``processes`` still running (a zombie has ended: only its entry is left)."""
    running = set()
    for pid, started_at in processes.items():
        fields = stat(pid)
        if fields and fields[19] == started_at and fields[0] != "Z":
            running.add(pid)
    return running


def drain(running: subprocess.Popen) -> str:
    """What the agent has written to stderr so far and not yet read (stderr non-blocking)."""
    try:
        return os.read(running.stderr.fileno(), 65536).decode()
    except BlockingIOError:
        time.sleep(0.1)  # nothing new: the pace of the polling
        return ""


def wait_for(condition, limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


# --- the tests -----------------------------------------------------------------------


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl_c", "kill_9"])
@pytest.mark.parametrize(("name", "engine"), PAIRS)
def test_a_run_stopped_mid_way_leaves_the_users_data_as_it_was(name, engine, stop, tmp_path):
    case = CASES[name]
    target = getattr(dbs, engine)(f"stop_{name}_{engine}_{stop.name.lower()}")
    if engine == "firebird":
        put_users_firebird_database(target)
    else:
        put_users_tables(target, case.old_names)
    before = users_data(target, case.old_names)
    assert not own_object_left(target, name)

    running = agent(target, name, case.stopped, tmp_path)
    workers: dict[int, str] = {}  # its worker processes and the tools it runs
    said_before = ""  # its progress lines up to the signal
    os.set_blocking(running.stderr.fileno(), False)
    deadline = time.monotonic() + 120
    try:
        while True:
            said_before += drain(running)
            if running.poll() is not None:
                break
            if case.loaded in said_before and is_busy(target, name):
                break
            assert time.monotonic() < deadline, f"never got to its load or run: {said_before}"
        assert running.poll() is None, said_before + running.communicate()[1]
        # What it wrote between the last read and the load being seen (tpcb's
        # "building … done" line) is before the signal, not after it.
        said_before += drain(running)
        workers = descendants(running.pid)
        if stop == signal.SIGINT:
            os.killpg(running.pid, signal.SIGINT)  # Ctrl-C: the job's whole group
        else:
            os.kill(running.pid, signal.SIGKILL)  # kill -9 of the command itself
        running.wait(timeout=120)
        # Its worker processes do not outlive it, not even a killed one's: well before
        # the end of its 60 seconds they have stopped loading the server.
        wait_for(lambda: not alive(workers), limit=20, what=f"left running: {alive(workers)}")
        os.set_blocking(running.stderr.fileno(), True)
        out, said_after = running.communicate(timeout=30)
    finally:
        if running.poll() is None:
            running.kill()
        for pid in alive(workers):
            os.kill(pid, signal.SIGKILL)

    assert users_data(target, case.old_names) == before
    if stop == signal.SIGINT:
        assert (running.returncode, said_after, out) == (130, "interrupted\n", ""), said_before
        assert not own_object_left(target, name)
        return

    assert running.returncode == -signal.SIGKILL
    assert own_object_left(target, name)  # what it was working in, marked as its own

    again = agent(target, name, (*case.short, "--repeat", "1"), tmp_path)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert '"benchmark": ' in out
    assert users_data(target, case.old_names) == before
    assert not own_object_left(target, name)


# --- an error raised while Ctrl-C unwinds ---------------------------------------------


def _cut_mid_packet() -> int:
    """What a MariaDB sort interrupted mid-fetch did: the unbuffered cursor's close, on the
    way out, read the rest of the result from the connection the interrupt left half-read
    (reproduced about once in 40 Ctrl-Cs of external-sort on MariaDB)."""
    try:
        raise KeyboardInterrupt
    finally:
        raise RuntimeError("Packet sequence number wrong - got 102 expected 244")


def test_an_error_of_the_clean_up_after_ctrl_c_is_still_interrupted(monkeypatch, capsys):
    from benchhub_agent import cli

    monkeypatch.setattr(cli, "dispatch", lambda argv: _cut_mid_packet())
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # restored afterwards

    assert cli.main(["run", "external-sort"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_an_error_without_ctrl_c_is_still_a_failure(monkeypatch, capsys):
    from benchhub_agent import cli

    def fails(argv):
        try:
            raise ValueError("a first problem")
        finally:
            raise RuntimeError("Packet sequence number wrong - got 102 expected 244")

    monkeypatch.setattr(cli, "dispatch", fails)

    assert cli.main(["run", "external-sort"]) == 1
    said = capsys.readouterr().err
    assert "Packet sequence number wrong" in said and "interrupted" not in said
