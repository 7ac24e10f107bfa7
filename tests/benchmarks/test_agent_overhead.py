"""benchmarks/agent_overhead.py's tables: one function prints all four (select-update
and tpcb, against pgbench and sysbench), in the columns the figures in docs were read
from."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys

import pytest
from django.conf import settings

_spec = importlib.util.spec_from_file_location(
    "agent_overhead", settings.BASE_DIR / "benchmarks" / "agent_overhead.py"
)
agent_overhead = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agent_overhead)
Round = agent_overhead.Round


def table(tool: str, rounds: dict[int, list], monkeypatch, capsys) -> tuple[bool, list[str]]:
    monkeypatch.setattr(os, "getloadavg", lambda: (0.25, 0.5, 0.75))
    args = argparse.Namespace(clients=list(rounds), rounds=len(next(iter(rounds.values()))))
    met = agent_overhead.comparison_table(
        "the title", tool, args, lambda clients, round_: rounds[clients][round_]
    )
    return met, capsys.readouterr().out.splitlines()


def test_a_select_update_table_against_pgbench(monkeypatch, capsys):
    met, lines = table(
        "pgbench",
        {
            1: [Round(950, 1000), Round(900, 1000), Round(990, 1000)],
            8: [Round(4000, 4000), Round(3600, 4000), Round(4400, 4000)],
        },
        monkeypatch,
        capsys,
    )

    assert lines == [
        "the title",
        "clients  agent tps  pgbench tps  ratio  target",
        "      1        950         1000   0.95  0.90 ok   rounds: 0.95 0.90 0.99   load 0.25",
        "      8       4000         4000   1.00  0.90 ok   rounds: 1.00 0.90 1.10   load 0.25",
    ]
    assert met


def test_a_tpcb_table_against_sysbench_names_the_busiest_worker_and_a_miss(monkeypatch, capsys):
    met, lines = table(
        "sysbench", {32: [Round(800, 1000, 61.4), Round(850, 1000, 87.6)]}, monkeypatch, capsys
    )

    assert lines == [
        "the title",
        "clients  agent tps  sysbench tps  ratio  target",
        "     32        825          1000   0.82  0.90 MISSED   rounds: 0.80 0.85"
        "   agent's busiest worker 88 % CPU   load 0.25",
    ]
    assert not met


def test_no_rounds_measures_nothing_and_says_so(capsys):
    # What a --rounds 0 run (filling tpcb's tables, --keep-tables) does with select-update,
    # which has no tables to keep: it raised StatisticsError on the median of no rounds.
    def measure(clients: int, round_: int):
        raise AssertionError("measured with --rounds 0")

    args = argparse.Namespace(clients=[1, 8, 32], rounds=0)
    met = agent_overhead.comparison_table("the title", "pgbench", args, measure)

    assert capsys.readouterr().out.splitlines() == ["the title", "not measured (--rounds 0)"]
    assert met  # nothing missed: nothing was meant to be measured


def test_negative_rounds_are_refused_naming_the_option(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["agent_overhead.py", "--rounds", "-1"])

    with pytest.raises(SystemExit) as exit_:
        agent_overhead.main()

    assert exit_.value.code == 2
    assert "--rounds -1: give 0 or more" in capsys.readouterr().err


def test_a_database_that_is_not_there_is_one_line_not_a_traceback():
    dsn = settings.DATABASES["default"]
    url = f"postgresql://{dsn['USER']}@{dsn['HOST'] or 'localhost'}:{dsn['PORT'] or 5432}"
    done = subprocess.run(
        [sys.executable, settings.BASE_DIR / "benchmarks" / "agent_overhead.py",
         "--dsn", f"{url}/bh_no_database_of_that_name", "--rounds", "1", "--skip-memory"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(settings.BASE_DIR / "agents")},
    )  # fmt: skip

    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "agent_overhead: the database server has no database 'bh_no_database_of_that_name': "
        "fix the database in --dsn or create it (createdb bh_no_database_of_that_name)"
    ]
