"""What a run refuses before it makes anything: a sweep the server cannot connect, two
load options that contradict each other, and help that names an option the benchmark
does not have."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import _databases as dbs
import pytest
from benchhub_agent import cli, db
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import discover_benchmarks, select_update, tpcb, tpcc
from benchhub_agent.benchmarks.base import SilentProgress, Target


def agent(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchhub_agent", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def own_object_exists(target: Target, benchmark: str) -> bool:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                cur.execute(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %s", (dbc.schema_name(benchmark),)
                )
            else:
                own = dbc.own_database_name(target.database, benchmark)
                cur.execute(
                    "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (own,)
                )
            return cur.fetchone() is not None
    finally:
        conn.close()


@pytest.mark.parametrize("benchmark", [tpcb, tpcc], ids=["tpcb", "tpcc"])
@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_a_sweep_the_server_cannot_connect_is_refused_before_the_data_is_built(engine, benchmark):
    target = getattr(dbs, engine)(f"{benchmark.NAME}_limit_{engine}")
    dbc.remove_own_objects(target, benchmark.NAME, benchmark.OWN_TABLES)
    limit = db.max_connections(target)
    asked = limit + 37

    with pytest.raises(ValueError) as refused:
        benchmark.run(
            target,
            dbs.options(
                clients=[3, asked], duration=0.3, warmup=0.0, repeat=1, scale=1, warehouses=1
            ),
            SilentProgress(),
        )

    said = str(refused.value)
    assert f"--clients needs {asked} connections" in said
    assert f"max_connections {limit}" in said
    assert "\n" not in said
    assert not own_object_exists(target, benchmark.NAME)  # nothing was built


def test_a_tpcb_sweep_that_fits_still_runs():
    target = dbs.postgresql("tpcb_fits")
    result = tpcb.run(
        target,
        dbs.options(clients=[2], duration=0.3, warmup=0.0, repeat=1, scale=1),
        SilentProgress(),
    )
    assert result.measurements
    assert not own_object_exists(target, "tpcb")


def test_transactions_with_duration_is_refused_in_one_line_and_makes_nothing():
    target = dbs.postgresql("tx_and_duration")
    dbc.remove_own_objects(target, "select-update", select_update.OWN_TABLES)
    dsn = f"{dbs.PG_SERVER}/{target.database}"

    done = agent(
        "run", "select-update", "--dsn", dsn, "--clients", "2", "--transactions", "70",
        "--duration", "3", "--repeat", "1", "--dry-run",
    )  # fmt: skip

    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "--transactions and --duration exclude each other" in lines[0]
    assert done.stdout == ""
    assert not own_object_exists(target, "select-update")


def test_transactions_alone_and_duration_alone_are_accepted():
    target = dbs.postgresql("tx_or_duration")
    by_count = select_update.run(
        target, dbs.options(clients=[2], transactions=60, repeat=1), SilentProgress()
    )
    assert by_count.parameters["transactions"] == 60 and "duration" not in by_count.parameters
    by_time = select_update.run(
        target, dbs.options(clients=[2], duration=0.4, warmup=0.0, repeat=1), SilentProgress()
    )
    assert by_time.parameters["duration"] == 0.4 and "transactions" not in by_time.parameters


def benchmark_parsers() -> dict[str, object]:
    parser = cli.build_parser(discover_benchmarks())
    run = next(a for a in parser._actions if getattr(a, "choices", None) and "run" in a.choices)
    run_parser = run.choices["run"]
    per_benchmark = next(
        a for a in run_parser._actions if getattr(a, "choices", None) and "tpcb" in a.choices
    )
    return dict(per_benchmark.choices)


@pytest.mark.parametrize("name", sorted(discover_benchmarks()))
def test_a_benchmarks_help_names_only_options_it_has(name):
    sub = benchmark_parsers()[name]
    accepted = {
        option
        for action in sub._actions
        if action.help != "==SUPPRESS==" and type(action).__name__ != "NotApplicable"
        for option in action.option_strings
    }

    shown = agent("run", name, "--help").stdout

    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", shown))
    assert named, shown
    assert named <= accepted, f"{name} --help names {sorted(named - accepted)}"


def test_no_init_is_in_the_help_exactly_of_the_benchmarks_that_have_it():
    have = {
        name
        for name, sub in benchmark_parsers().items()
        if any("--no-init" in action.option_strings for action in sub._actions)
    }
    assert have == {"tpcb", "external-sort", "backup", "tpcc"}
    for name in sorted(discover_benchmarks()):
        assert ("--no-init" in agent("run", name, "--help").stdout) == (name in have), name


@pytest.mark.parametrize(
    "arguments",
    [
        ["select-update", "--clients", "3", "--duration", "40", "--warmup", "0"],
        ["tpcb", "--clients", "3", "--duration", "40", "--warmup", "0"],
    ],
)
def test_ctrl_c_mid_load_is_one_line_exit_130_and_leaves_nothing(arguments):
    name = arguments[0]
    target = dbs.postgresql(f"ctrl_c_{name}")
    dsn = f"{dbs.PG_SERVER}/{target.database}"
    running = subprocess.Popen(
        [sys.executable, "-m", "benchhub_agent", "run", *arguments, "--repeat", "1",
         "--dry-run", "--dsn", dsn],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
             "BENCHHUB_PROGRESS_INTERVAL": "0.2"},
    )  # fmt: skip
    try:
        # The load has started once its progress says how far it is.
        deadline = time.monotonic() + 60
        seen = ""
        while "%" not in seen:
            assert time.monotonic() < deadline, seen
            seen += running.stderr.readline()
        time.sleep(1.3)
        running.send_signal(signal.SIGINT)
        out, rest = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()

    lines = [line for line in (seen + rest).splitlines() if line.strip()]
    assert running.returncode == 130, lines
    assert lines[-1] == "interrupted", lines
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
    assert "done in" not in lines[-2], lines
    assert out == ""
    assert not own_object_exists(target, name)


@pytest.mark.parametrize(
    ("engine", "name"),
    [("postgresql", "external-sort"), ("mariadb", "backup"), ("firebird", "backup")],
)
def test_no_init_records_the_kept_rows_and_refuses_an_emptied_table(engine, name):
    from benchhub_agent.benchmarks import _firebird as fb
    from benchhub_agent.benchmarks import backup, external_sort

    module = {"backup": backup, "external-sort": external_sort}[name]
    target = getattr(dbs, engine)(f"kept_rows_{engine}_{name}")
    extra = {"protocols": "tcp_loopback"} if name == "backup" else {"sort_memory": None}
    module.run(target, dbs.options(repeat=1, rows=517, keep=True, **extra), SilentProgress())
    try:
        # --rows left at its default: the run measures the 517 kept rows, and says so.
        reused = module.run(
            target,
            dbs.options(repeat=1, rows=1_000_000, no_init=True, **extra),
            SilentProgress(),
        )
        assert reused.parameters["rows"] == 517

        own = dbc.in_own_schema(target, name)
        if engine == "firebird":
            fb.isql(fb.FirebirdDatabase.from_target(own), f"DELETE FROM {module.TABLE};\nCOMMIT;\n")
        else:
            conn = dbc.connect(own)
            try:
                with conn.cursor() as cur:
                    cur.execute(f"DELETE FROM {module.TABLE}")
            finally:
                conn.close()
        with pytest.raises(dbc.NotKept, match=f"kept table {module.TABLE} is empty"):
            module.run(target, dbs.options(repeat=1, no_init=True, **extra), SilentProgress())
    finally:
        dbc.remove_own_objects(target, name, module.OWN_TABLES)
