"""The second round's smaller points, each pinned: progress without a terminal, --warmup 0,
tpcb's median, the select-update invariant, imports stored once, sysbench's --param
hint, the README's Firebird path, a MySQL socket DSN."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import statistics
import time
from pathlib import Path

import _databases as dbs
import pytest
from benchhub_agent import document
from benchhub_agent.benchmarks import tpcb
from benchhub_agent.benchmarks.base import SilentProgress
from benchhub_agent.progress import ProgressBar
from contract_server import TOKEN, ContractServer
from test_cli import FIXTURES, agent

README = Path(__file__).resolve().parents[1] / "README.md"


# --- progress ----------------------------------------------------------------------


def test_a_long_step_without_a_terminal_says_it_is_still_working(monkeypatch):
    monkeypatch.setenv("BENCHHUB_PROGRESS_INTERVAL", "0.05")
    stream = io.StringIO()  # not a terminal
    still = "tpcb: building scale 50: still working after"
    with ProgressBar(stream).working("tpcb: building scale 50"):
        # However slowly the machine runs the heartbeat, three lines come while it works.
        deadline = time.monotonic() + 60
        while stream.getvalue().count(still) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = stream.getvalue().splitlines()
    assert len([x for x in lines if still in x]) >= 3
    assert all(re.fullmatch(rf"{still} \d+s", x) for x in lines[:-1]), lines
    assert re.fullmatch(r"tpcb: building scale 50: done in \d+\.\ds", lines[-1])


def test_counted_progress_without_a_terminal_prints_a_line_every_interval(monkeypatch):
    monkeypatch.setenv("BENCHHUB_PROGRESS_INTERVAL", "0.05")
    stream = io.StringIO()
    bar = ProgressBar(stream)
    bar.start(10, "sql-bench")
    for _ in range(4):
        time.sleep(0.06)
        bar.advance()
    # The step after the last advance or the heartbeat says where the count is, within
    # an interval (however slowly the machine runs them).
    deadline = time.monotonic() + 60
    while "sql-bench: 40% (4/10) after" not in stream.getvalue():
        assert time.monotonic() < deadline, stream.getvalue()
        time.sleep(0.01)
    bar.finish()
    lines = stream.getvalue().splitlines()
    counts = [re.fullmatch(r"sql-bench: \d+% \((\d+)/10\) after \d+s", x) for x in lines[:-1]]
    assert all(counts), lines
    assert [int(c.group(1)) for c in counts] == sorted(int(c.group(1)) for c in counts)
    assert lines[-1].startswith("sql-bench: done in")


def test_a_step_that_takes_longer_than_the_interval_is_not_silent(monkeypatch):
    # One tpcb point of a minute advances the count once, at its end: the heartbeat
    # speaks in between.
    monkeypatch.setenv("BENCHHUB_PROGRESS_INTERVAL", "0.05")
    stream = io.StringIO()
    bar = ProgressBar(stream)
    bar.start(2, "tpcb (agent)")
    deadline = time.monotonic() + 60
    while stream.getvalue().count("tpcb (agent): 0% (0/2) after") < 2:
        assert time.monotonic() < deadline, stream.getvalue()
        time.sleep(0.01)
    bar.advance(2)
    bar.finish()
    said = stream.getvalue()
    time.sleep(0.3)  # six intervals: a heartbeat left running would have spoken
    assert stream.getvalue() == said
    assert said.splitlines()[-1].startswith("tpcb (agent): done in")


def test_a_failed_run_stops_the_heartbeat_without_a_last_line(monkeypatch):
    monkeypatch.setenv("BENCHHUB_PROGRESS_INTERVAL", "0.05")
    stream = io.StringIO()
    bar = ProgressBar(stream)
    bar.start(2, "sql-bench")
    bar.close()
    said = stream.getvalue()
    time.sleep(0.3)
    assert stream.getvalue() == said
    assert "done in" not in said


@pytest.mark.parametrize(
    ("engine", "arguments", "lines"),
    [
        ("postgresql",
         ["tpcb", "--scale", "1", "--duration", "1", "--clients", "1", "--warmup", "0"],
         ["tpcb: building scale 1 (100,000 accounts): done in", "tpcb (agent): 0% (0/1) after"]),
        ("mariadb",
         ["tpcb", "--scale", "1", "--duration", "1", "--clients", "1", "--warmup", "0"],
         ["tpcb: building scale 1 (100,000 accounts): done in", "tpcb (agent): 0% (0/1) after"]),
        ("postgresql", ["backup", "--rows", "20000", "--protocols", "tcp_loopback"],
         ["backup: building 20,000 rows: done in"]),
    ],
)  # fmt: skip
def test_a_run_without_a_terminal_speaks_while_it_builds_and_measures(
    engine, arguments, lines, pg_dsn, mysql_dsn, outbox_dir
):
    dsn = pg_dsn if engine == "postgresql" else mysql_dsn
    done = agent(
        "run", *arguments, "--dsn", dsn, "--repeat", "1", "--dry-run",
        env={"BENCHHUB_PROGRESS_INTERVAL": "0.2"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for line in lines:
        assert line in done.stderr, done.stderr


def test_a_run_without_a_terminal_reports_its_data_build(pg_dsn, outbox_dir):
    done = agent(
        "run", "external-sort", "--dsn", pg_dsn, "--rows", "200000", "--repeat", "1",
        "--dry-run", env={"BENCHHUB_PROGRESS_INTERVAL": "0.05"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "external-sort: building 200,000 rows: still working after" in done.stderr
    assert "external-sort: building 200,000 rows: done in" in done.stderr


# --- --warmup 0, tpcb's median, the invariant ------------------------------------------


def test_warmup_zero_is_no_warmup_not_five_seconds(pg_dsn, outbox_dir):
    done = agent(
        "run", "select-update", "--dsn", pg_dsn, "--clients", "1", "--duration", "0.3",
        "--warmup", "0", "--repeat", "1", "--dry-run",
        env={"BENCHHUB_PROGRESS_INTERVAL": "0.01"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["runs"][0]
    assert run["parameters"]["warmup"] == 0.0
    # The point was planned as 0.3 s in tenths (a 5 s warm-up would make it 53) ...
    planned = re.findall(r"clients=1 rep 1/1: \d+% \(\d+/(\d+)\)", done.stderr)
    assert planned and set(planned) == {"3"}, done.stderr
    # ... and every transaction the client committed was measured: a warm-up's commits
    # are counted by the invariant but left out of the throughput. The one transaction
    # begun before the deadline and ended after it is the only one allowed to differ.
    committed = int(re.search(r"\((\d+) commits in all", run["note"]).group(1))
    throughput = next(m for m in run["measurements"] if m["metric"] == "throughput")
    measured = round(throughput["value"] * run["parameters"]["duration"])
    assert 0 <= committed - measured <= 1, (committed, measured)


def test_tpcb_value_is_exactly_the_median_of_its_recorded_samples():
    target = dbs.postgresql("tpcb_median")
    options = dbs.options(clients=[1], duration=0.3, warmup=0.0, repeat=3, scale=1,
                          load_engine="agent")  # fmt: skip
    result = tpcb.run(target, options, SilentProgress())
    for measurement in result.measurements:
        assert len(measurement.samples) == 3
        assert measurement.value == statistics.median(measurement.samples), measurement.metric


def test_the_select_update_invariant_is_recorded_and_printed(mysql_dsn, outbox_dir):
    done = agent("run", "select-update", "--dsn", mysql_dsn, "--clients", "1,3",
                 "--transactions", "90", "--repeat", "2", "--dry-run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    note = json.loads(done.stdout)["runs"][0]["note"]
    expected = (
        "invariant held: sum(c2) = committed transactions after each of the 4 points "
        "(360 commits in all; FOR UPDATE lost none)."
    )
    assert expected in note
    assert f"note: {expected}" in done.stderr


# --- imports ---------------------------------------------------------------------------


def test_the_same_pgbench_output_with_and_without_dsn_is_stored_once(pg_dsn, outbox_dir):
    report = str(FIXTURES / "pgbench15-tpcb.txt")
    with ContractServer() as server:
        plain = agent("import", "pgbench", report, "--upload", "--server", server.url,
                      "--token", TOKEN)  # fmt: skip
        assert plain.returncode == 0, plain.stderr
        with_dsn = agent("import", "pgbench", report, "--upload", "--server", server.url,
                         "--token", TOKEN, "--dsn", pg_dsn)  # fmt: skip
        assert with_dsn.returncode == 0, with_dsn.stderr
        assert len(server.stored) == 1
    assert "already imported" in with_dsn.stderr
    assert list(outbox_dir.glob("*.json")) == []  # nothing left to push


def test_a_copy_with_crlf_and_a_trailing_newline_is_stored_once(tmp_path, outbox_dir):
    report = (FIXTURES / "pgbench15-tpcb-progress.txt").read_text()
    copy = tmp_path / "copied-from-windows.txt"
    copy.write_bytes((report.replace("\n", "\r\n") + "\r\n").encode())
    with ContractServer() as server:
        for path in (str(FIXTURES / "pgbench15-tpcb-progress.txt"), str(copy)):
            done = agent("import", "pgbench", path, "--upload", "--server", server.url,
                         "--token", TOKEN)  # fmt: skip
            assert done.returncode == 0, done.stderr
        assert len(server.stored) == 1
    assert "already stored" in done.stderr


def test_a_sysbench_import_without_its_test_names_the_flag(tmp_path, outbox_dir):
    text = (FIXTURES / "sysbench10-mariadb-oltp_read_write.txt").read_text()
    bare = tmp_path / "no-command.txt"
    bare.write_text("\n".join(x for x in text.splitlines() if not x.startswith("sysbench ")))
    done = agent("import", "sysbench", str(bare), "--database-version", "10.11.6-MariaDB")
    assert done.returncode == 1
    assert "--param test=oltp_read_write" in done.stderr


# --- DSNs ---------------------------------------------------------------------------------


def test_the_readmes_firebird_path_is_debians_data_directory():
    firebird = [x for x in README.read_text().splitlines() if x.startswith("firebird://")]
    assert firebird and all(f"/{dbs.FIREBIRD_DIR}/" in x for x in firebird)


def test_a_mysql_socket_dsn_is_recorded_as_a_socket_not_a_directory():
    shape = document.dsn_shape("mysql://root@/test?unix_socket=/run/mysqld/mysqld.sock")
    assert shape == "mysql://USER@/test?unix_socket=SOCKET"
    pg = document.dsn_shape("postgresql://me@/bench?host=/var/run/postgresql")
    assert pg == "postgresql://USER@/bench?host=SOCKET_DIR"


def test_a_mysql_run_over_its_socket_records_the_socket_protocol(outbox_dir):
    socket_path = next(p for p in ("/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock")
                       if os.path.exists(p))  # fmt: skip
    database = dbs.mariadb("socket_dsn").database
    dsn = f"mysql://root@/{database}?unix_socket={socket_path}"
    done = agent("run", "select-update", "--dsn", dsn, "--clients", "1", "--transactions",
                 "20", "--repeat", "1", "--dry-run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["environment"]["client"]["protocol"] == "unix_socket"
    assert "unix_socket=SOCKET" in doc["source"]["command"]
    assert socket_path not in json.dumps(doc)


def test_a_failed_step_leaves_only_the_error(monkeypatch):
    monkeypatch.setenv("BENCHHUB_PROGRESS_INTERVAL", "5")
    stream = io.StringIO()
    with contextlib.suppress(RuntimeError), ProgressBar(stream).working("building"):
        raise RuntimeError("refused")
    assert stream.getvalue() == ""


def test_the_default_sweep_stops_where_the_servers_connections_do(pg_dsn, outbox_dir):
    # A stock PostgreSQL has max_connections = 100: the default sweep's 100
    # clients (and the check's connection) cannot fit, and a first run
    # without --clients should measure what fits and say so, not refuse.
    done = agent(
        "run", "select-update", "--dsn", pg_dsn, "--duration", "0.2", "--warmup", "0",
        "--repeat", "1", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = re.search(r"the server accepts (\d+) more connections now", done.stderr)
    assert said, done.stderr
    clients = sorted(
        {m["parameters"]["clients"] for m in json.loads(done.stdout)["runs"][0]["measurements"]}
    )
    assert clients == [1, 2, 4, 8, 16, 20, 40, 80, 100][: len(clients)]
    assert clients[-1] + 1 <= int(said.group(1)) < 101
    assert f"stops at {clients[-1]} clients instead of 100" in done.stderr
