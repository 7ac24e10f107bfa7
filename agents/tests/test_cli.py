"""The benchhub-agent command end to end: real databases, a server that keeps the contract."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _upload_servers import HangingServer, dead_server
from benchhub_agent import commands, document, upload
from benchhub_agent.benchmarks import base, discover_benchmarks
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer

AGENT = [sys.executable, "-m", "benchhub_agent.cli"]
FIXTURES = Path(__file__).parent / "importers" / "fixtures"


def agent(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "BENCHHUB_BACKOFF": "0.05,0.05", **(env or {})}
    return subprocess.run(
        [*AGENT, *args], capture_output=True, text=True, env=environment, timeout=300
    )


def small_run(dsn: str, *extra: str) -> list[str]:
    return ["run", "select-update", "--dsn", dsn, "--clients", "1,2", "--transactions", "100",
            "--repeat", "1", *extra]  # fmt: skip


def test_dry_run_prints_a_valid_document_and_the_table_goes_to_stderr(pg_dsn, outbox_dir):
    done = agent(*small_run(pg_dsn, "--dry-run"))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    document.validate(doc)
    assert "clients=2" in done.stderr and "throughput (tx/s)" in done.stderr


def test_a_run_that_cannot_be_sent_is_kept_and_pushed_later(mysql_dsn, outbox_dir):
    done = agent(*small_run(mysql_dsn, "--upload", "--server", dead_server(), "--token", TOKEN))
    assert done.returncode == 3, done.stderr
    assert "kept in the outbox" in done.stderr
    kept = list(outbox_dir.glob("*.json"))
    assert len(kept) == 1
    assert "clients=2" in done.stdout  # the results were shown all the same
    with ContractServer() as server:
        pushed = agent("push", "--server", server.url, "--token", TOKEN)
        assert pushed.returncode == 0, pushed.stderr
        assert list(server.stored) == [kept[0].stem]
        again = agent("push", "--server", server.url, "--token", TOKEN)
        assert again.returncode == 0 and len(server.stored) == 1
    assert list(outbox_dir.glob("*.json")) == []


def test_the_next_upload_sends_the_outbox_first(pg_dsn, outbox_dir):
    agent(*small_run(pg_dsn, "--upload", "--server", dead_server(), "--token", TOKEN))
    (kept,) = outbox_dir.glob("*.json")
    with ContractServer() as server:
        done = agent(*small_run(pg_dsn, "--upload", "--server", server.url, "--token", TOKEN))
        assert done.returncode == 0, done.stderr
        assert len(server.stored) == 2
        assert next(iter(server.stored)) == kept.stem  # the earlier run reached the server first
    assert list(outbox_dir.glob("*.json")) == []


def test_a_throttled_token_keeps_the_outbox_for_later_and_the_run_goes_on(
    outbox_dir, monkeypatch, capsys
):
    # Before a run the outbox waited 60 s, three times, on a throttled token.
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    outbox = Outbox(outbox_dir)
    for n in (1, 2):
        outbox.save({"uuid": f"00000000-0000-4000-8000-00000000000{n}"})
    with ContractServer() as server:
        server.fail_next, server.fail_status, server.retry_after = 1000, 429, "60"
        commands.push_outbox_first(argparse.Namespace(server=server.url, token=TOKEN))

    assert (server.posts, waits) == (1, [])
    said = capsys.readouterr().err.splitlines()
    assert said[0].endswith("longer than the agent waits before a run (10 s in all)")
    assert said[1] == (
        f"2 document(s) left in the outbox ({outbox_dir}) for 'benchhub-agent push'"
        " or the next run --upload; this run goes on"
    )


def test_a_server_that_never_answers_keeps_the_outbox_for_later_and_the_run_goes_on(
    outbox_dir, monkeypatch, capsys
):
    # It held the run back two minutes: the 30 s time-out, four times.
    monkeypatch.setattr(upload, "BEFORE_RUN_WAIT_S", 1.0)
    outbox = Outbox(outbox_dir)
    outbox.save({"uuid": "00000000-0000-4000-8000-000000000001"})
    with HangingServer() as server:
        commands.push_outbox_first(argparse.Namespace(server=server.url, token=TOKEN))

    assert server.accepted == 1
    said = capsys.readouterr().err.splitlines()
    assert said == [
        f"outbox 00000000-0000-4000-8000-000000000001: server {server.url} not reachable"
        " (no answer): timed out; no answer within the 1 s the agent waits before a run"
        " (in all)",
        f"1 document(s) left in the outbox ({outbox_dir}) for 'benchhub-agent push'"
        " or the next run --upload; this run goes on",
    ]


def test_upload_without_a_token_stops_before_running(pg_dsn, outbox_dir):
    done = agent(*small_run(pg_dsn, "--upload", "--server", "http://127.0.0.1:9"))
    assert done.returncode == 2
    assert "token" in done.stderr and "clients=" not in done.stdout


@pytest.mark.parametrize(
    ("server", "said"),
    [
        ("notaurl", "--server 'notaurl' is not an http(s) address"),
        ("ftp://bench.example.org", "--server 'ftp://bench.example.org' is not an http(s)"),
        ("https://bench.example.org:84x3", "'https://bench.example.org:84x3': not a port number"),
        ("https://bench.example.org/?token=abc", "an address with ?query"),
    ],
)
@pytest.mark.parametrize("upload_flag", [["--upload", "--token", TOKEN], ["--dry-run"]])
def test_a_server_that_is_no_address_is_one_line_before_anything_runs(
    pg_dsn, outbox_dir, server, said, upload_flag
):
    done = agent(*small_run(pg_dsn, "--server", server, *upload_flag))
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("benchhub-agent: --server ") and said in line
    assert line.endswith("expected the site's address, e.g. https://benchhub.example")
    assert "clients=" not in done.stdout + done.stderr  # nothing ran
    assert list(outbox_dir.glob("*.json")) == []


def test_a_server_from_the_environment_that_is_no_address_names_its_source(
    pg_dsn, outbox_dir, tmp_path
):
    done = agent(
        *small_run(pg_dsn, "--upload", "--token", TOKEN),
        env={"BENCHHUB_SERVER": "bench.example.org", "BENCHHUB_CONFIG": str(tmp_path / "no")},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("benchhub-agent: BENCHHUB_SERVER 'bench.example.org' is not")
    assert "clients=" not in done.stdout + done.stderr


def test_an_import_to_a_server_that_is_no_address_is_refused_before_reading(tmp_path):
    done = agent("import", "pgbench", str(FIXTURES / "pgbench15-tpcb.txt"), "--upload",
                 "--server", "notaurl", "--token", TOKEN)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith("benchhub-agent: --server 'notaurl'")
    assert "unexpected" not in done.stderr


def test_config_file_supplies_server_and_token(pg_dsn, outbox_dir, tmp_path):
    with ContractServer() as server:
        config = tmp_path / "agent.toml"
        config.write_text(f'server = "{server.url}"\ntoken = "{TOKEN}"\n')
        done = agent(*small_run(pg_dsn, "--upload"), env={"BENCHHUB_CONFIG": str(config)})
        assert done.returncode == 0, done.stderr
        assert len(server.stored) == 1


def test_run_like_repeats_the_published_run_and_compares(pg_dsn, outbox_dir):
    published = {
        "id": 7,
        "benchmark": "select-update",
        "benchmark_version": "1",
        "parameters": {"transactions": 150, "rows": 100, "locking": "for_update"},
        "repetitions": 1,
        "fingerprint": "fp-select-update-pg15",
        # as the API gives an agent's run: it names its load engine (002dc4e)
        "client": {"load_engine": "benchhub-agent", "cpu_placement": "unpinned"},
        "measurements": [
            {"metric": "throughput", "unit": "tx/s", "direction": "higher",
             "parameters": {"clients": c}, "value": 250.0 * c, "samples": [250.0 * c]}
            for c in (1, 2)
        ],
    }  # fmt: skip
    with ContractServer() as server:
        published["url"] = f"{server.url}/api/v1/runs/7/"
        server.runs["/api/v1/runs/7/"] = published
        server.baselines = [
            {"metric": "throughput", "parameters": {"clients": 1}, "n": 10, "median": 550.0,
             "q1": 300.0, "q3": 800.0, "min": 100.0, "max": 1000.0},
        ]  # fmt: skip
        done = agent(
            "run", "--like", published["url"], "--dsn", pg_dsn, "--upload",
            env={"BENCHHUB_TOKEN": TOKEN},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (stored,) = server.stored.values()
        run = stored["runs"][0]
        assert run["parameters"] == published["parameters"]
        assert {m["parameters"]["clients"] for m in run["measurements"]} == {1, 2}
        assert "--transactions 150" in stored["source"]["command"]
        assert "--clients 1,2" in stored["source"]["command"]
        rank = [q for q in server.rank_queries if q["metric"] == ["throughput"]]
        assert {q["param.clients"][0] for q in rank} == {"1"}  # the one point with a baseline
        assert all(q["fingerprint"] == ["fp-select-update-pg15"] for q in rank)
    line = next(x for x in done.stdout.splitlines() if x.startswith("throughput clients=1 "))
    assert "250" in line and "550 (10)" in line and "% of 10" in line
    assert line.split()[2] == "250"  # that run's value, then yours


def test_import_prints_a_valid_document(outbox_dir):
    done = agent("import", "pgbench", str(FIXTURES / "pgbench15-tpcb.txt"), "--dry-run")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    document.validate(doc)
    assert doc["source"]["kind"] == "import"
    assert doc["environment"]["client"] == {"load_engine": "pgbench"}


def test_import_of_something_else_says_what_was_expected(outbox_dir, tmp_path):
    wrong = tmp_path / "notes.txt"
    wrong.write_text("hello\n")
    done = agent("import", "pgbench", str(wrong), "--database-version", "PostgreSQL 15.4")
    assert done.returncode == 1
    assert "notes.txt" in done.stderr and "pgbench" in done.stderr


def test_import_refuses_a_database_version_the_output_contradicts(outbox_dir):
    report = str(FIXTURES / "pgbench15-tpcb.txt")  # names PostgreSQL 15.20
    done = agent("import", "pgbench", report, "--database-version", "PostgreSQL 16.1", "--dry-run")
    assert done.returncode == 1
    assert "environment.database.version_string" in done.stderr
    assert "'PostgreSQL 16.1'" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_benchmark_refuses_an_engine_it_does_not_run_on(outbox_dir):
    done = agent("run", "sql-bench", "--dsn", "firebird://SYSDBA:x@localhost/db.fdb")
    assert done.returncode == 2
    assert "not on firebird" in done.stderr


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["sql-bench", "--clients", "8"],
         "--clients does not apply to sql-bench (it takes no load options)"),
        (["external-sort", "--duration", "5"],
         "--duration does not apply to external-sort (it takes no load options)"),
        (["tpcb", "--transactions", "100"],
         "--transactions does not apply to tpcb "
         "(its load options: --clients, --duration, --warmup)"),
        (["backup", "--warmup", "0"],
         "--warmup does not apply to backup (its load options: --pin)"),
    ],
)  # fmt: skip
def test_a_load_option_the_benchmark_does_not_apply_is_refused_by_name(arguments, said, outbox_dir):
    # sql-bench given --clients 8 ran one client, said nothing, and recorded
    # "--clients 8" in the command that is to reproduce the run.
    done = agent("run", *arguments, "--dsn", "postgresql://x@127.0.0.1:1/none", "--dry-run")
    assert done.returncode == 2
    assert said in done.stderr, done.stderr
    assert done.stdout == ""
    shown = agent("run", arguments[0], "--help").stdout
    assert arguments[1] not in shown and "--repeat" in shown


def test_every_benchmark_refuses_an_engine_it_does_not_run_on_outside_the_cli_too():
    target = Target.parse("firebird://SYSDBA:x@localhost/db.fdb")
    for name, found in discover_benchmarks().items():
        if "firebird" in found.module.ENGINES:
            continue
        with pytest.raises(ValueError, match=f"^{name} runs on .*, not on firebird$"):
            base.run(found.module, target, argparse.Namespace(), SilentProgress())


def test_python_dash_m_runs_the_agent_where_the_script_is_not_on_path():
    """`python -m benchhub_agent --help` answered "No module named
    benchhub_agent.__main__"."""
    done = subprocess.run(
        [sys.executable, "-m", "benchhub_agent", "--help"],
        cwd=Path(__file__).parents[1],  # this checkout's package
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: benchhub-agent")


CUT_MID_CALL = """
import sys
from benchhub_agent import cli

class UnbufferedResult:  # as pymysql's: its destructor reads from a closed connection
    def __del__(self):
        raise AttributeError("'NoneType' object has no attribute 'read'")

def dispatch(argv):
    result = UnbufferedResult()  # held by this frame, freed as the interrupt unwinds
    raise KeyboardInterrupt

cli.dispatch = dispatch
sys.exit(cli.main(["run", "external-sort"]))
"""


def test_ctrl_c_that_cuts_a_driver_call_says_one_line():
    done = subprocess.run(
        [sys.executable, "-c", CUT_MID_CALL], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "interrupted\n", "")


CTRL_C_IN_A_FINALIZER = """
import os, signal, sys, threading, time
from benchhub_agent import cli

class UnbufferedResult:  # as pymysql's: its destructor reads the rest of a result
    def __del__(self):
        time.sleep(0.6)  # Ctrl-C comes while the process is in here

def dispatch(argv):
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    result = UnbufferedResult()
    del result
    time.sleep(5)  # the rest of the run, which Ctrl-C must stop
    print("finished")
    return 0

cli.dispatch = dispatch
sys.exit(cli.main(["run", "backup"]))
"""


def test_ctrl_c_while_a_driver_object_is_finalized_still_stops_the_run():
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_IN_A_FINALIZER], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "interrupted\n", "")
