"""``run --like``: the published run reproduced faithfully or refused, never uploaded unasked.

The published runs are served by the contract server as /api/v1/runs/<id>/
answers them (benchmark, parameters, client, server, measurements with
direction and samples); the repeats run on the real PostgreSQL and MariaDB.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from benchhub_agent import document
from benchhub_agent.benchmarks.base import Measurement
from benchhub_agent.compare import comparison_rows
from benchhub_agent.replay import CannotReplay, convert_sort_memory, replay
from benchhub_contract.verdicts import RunValues, verdict
from contract_server import TOKEN, ContractServer
from test_cli import agent


def published_run(benchmark: str, parameters: dict, **extra) -> dict:
    run = {
        "id": 7,
        "benchmark": benchmark,
        "benchmark_version": "1",
        "parameters": parameters,
        "repetitions": 1,
        "fingerprint": "f" * 64,
        "server": {"engine": "postgresql"},
        "client": {"load_engine": "benchhub-agent", "cpu_placement": "unpinned"},
        "measurements": [],
    }
    run.update(extra)
    return run


def throughput(clients: int, value: float, samples: list[float]) -> dict:
    return {
        "metric": "throughput",
        "unit": "tx/s",
        "direction": "higher",
        "parameters": {"clients": clients},
        "value": value,
        "samples": samples,
    }


SELECT_UPDATE = published_run(
    "select-update",
    {"transactions": 120, "rows": 100, "locking": "for_update"},
    repetitions=3,
    measurements=[
        # clients=1 far below anything real, clients=2 far above, clients=3 unrepeated
        throughput(1, 1.0, [0.9, 1.0, 1.1]),
        throughput(2, 10_000_000.0, [9_000_000.0, 10_000_000.0, 11_000_000.0]),
        throughput(3, 500.0, [500.0]),
    ],
)


def serve(server: ContractServer, run: dict) -> str:
    run = {**run, "url": f"{server.url}/api/v1/runs/{run['id']}/"}
    server.runs[f"/api/v1/runs/{run['id']}/"] = run
    return run["url"]


# --- end to end -----------------------------------------------------------------------


def test_like_never_uploads_without_upload_even_with_a_token(pg_dsn, outbox_dir):
    with ContractServer() as server:
        url = serve(server, SELECT_UPDATE)
        done = agent("run", "--like", url, "--dsn", pg_dsn, env={"BENCHHUB_TOKEN": TOKEN})
        assert done.returncode == 0, done.stderr
        assert server.posts == 0 and server.stored == {}
    assert "not uploaded: add --upload" in done.stderr
    assert list(outbox_dir.glob("*.json")) == []


def test_like_with_upload_uploads_the_repeat_with_the_same_parameters(pg_dsn, outbox_dir):
    with ContractServer() as server:
        url = serve(server, SELECT_UPDATE)
        done = agent(
            "run", "--like", url, "--dsn", pg_dsn, "--upload", env={"BENCHHUB_TOKEN": TOKEN}
        )
        assert done.returncode == 0, done.stderr
        (stored,) = server.stored.values()
    run = stored["runs"][0]
    assert run["parameters"] == SELECT_UPDATE["parameters"]
    assert run["repetitions"] == 3
    assert {m["parameters"]["clients"] for m in run["measurements"]} == {1, 2, 3}


def test_like_dry_run_prints_the_document_alone_and_the_verdicts_on_stderr(pg_dsn, outbox_dir):
    with ContractServer() as server:
        url = serve(server, SELECT_UPDATE)
        done = agent("run", "--like", url, "--dsn", pg_dsn, "--dry-run")
    assert done.returncode == 0, done.stderr
    document.validate(json.loads(done.stdout))  # nothing else on stdout
    rows = {
        line.split()[1]: line for line in done.stderr.splitlines() if line.startswith("throughput ")
    }
    assert " better " in rows["clients=1"]  # faster than 1 tx/s, beyond any noise
    assert " worse " in rows["clients=2"]
    assert "insufficient data" in rows["clients=3"]  # one unrepeated value on that side
    assert "no baseline yet" in rows["clients=1"]
    assert "%" in rows["clients=1"].split("better")[0]  # the difference column


def test_like_keeps_the_users_clients_and_records_them_once(pg_dsn, outbox_dir):
    with ContractServer() as server:
        url = serve(server, SELECT_UPDATE)
        done = agent("run", "--like", url, "--dsn", pg_dsn, "--clients", "2", "--dry-run")
    assert done.returncode == 0, done.stderr
    command = json.loads(done.stdout)["source"]["command"]
    assert command.count("--clients") == 1 and "--clients 2" in command
    assert "your --clients replaces that run's --clients 1,2,3" in done.stderr


def test_like_replays_a_pgbench_tpcb_run_with_pgbench(pg_dsn, outbox_dir):
    run = published_run(
        "tpcb",
        {"scale": 1, "duration": 1.0, "warmup": 0.0, "clients": "1", "load_engine": "pgbench",
         "query_mode": "prepared"},
        client={"load_engine": "pgbench", "cpu_placement": "unpinned"},
    )  # fmt: skip
    with ContractServer() as server:
        url = serve(server, run)
        done = agent("run", "--like", url, "--dsn", pg_dsn, "--dry-run")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert "--engine pgbench" in doc["source"]["command"]
    assert doc["environment"]["client"]["load_engine"] == "pgbench"
    assert doc["runs"][0]["parameters"]["load_engine"] == "pgbench"


def test_like_refuses_a_pgbench_run_on_mariadb_with_the_reason(mysql_dsn, outbox_dir):
    run = published_run(
        "tpcb", {"scale": 1, "clients": "1", "load_engine": "pgbench", "query_mode": "prepared"}
    )
    with ContractServer() as server:
        done = agent("run", "--like", serve(server, run), "--dsn", mysql_dsn, "--dry-run")
    assert done.returncode == 2
    assert "cannot reproduce that run: that run's load engine was pgbench" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_like_replays_a_mariadb_sort_memory_on_mariadb_in_bytes(mysql_dsn, outbox_dir):
    run = published_run(
        "external-sort",
        {"rows": 2000, "sort_memory": "65536", "fetch": "all_rows"},
        server={"engine": "mariadb"},
    )
    with ContractServer() as server:
        done = agent("run", "--like", serve(server, run), "--dsn", mysql_dsn, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"][0]["parameters"]["sort_memory"] == "65536"


@pytest.mark.parametrize("scheme", ["mysql", "mariadb"])
def test_a_mariadb_run_repeated_through_either_scheme_is_not_across_engines(
    mysql_dsn, outbox_dir, scheme
):
    run = published_run(
        "select-update", {"transactions": 40, "rows": 100, "locking": "for_update"},
        server={"engine": "mariadb"},
    )  # fmt: skip
    dsn = scheme + mysql_dsn[mysql_dsn.index("://") :]
    with ContractServer() as server:
        done = agent("run", "--like", serve(server, run), "--dsn", dsn, "--clients", "1",
                     "--dry-run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["environment"]["database"]["engine"] == "mariadb"
    assert "across engines" not in done.stderr
    assert "sort memory" not in done.stderr


def test_a_mysql_run_repeated_on_mariadb_is_across_engines_once_the_server_says_so(
    mysql_dsn, outbox_dir
):
    # The scheme cannot tell; the server this DSN reaches reports MariaDB.
    run = published_run(
        "select-update", {"transactions": 40, "rows": 100, "locking": "for_update"},
        server={"engine": "mysql"},
    )  # fmt: skip
    with ContractServer() as server:
        done = agent("run", "--like", serve(server, run), "--dsn", mysql_dsn, "--clients", "1",
                     "--dry-run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "across engines" in line]
    assert notes == [
        "note: that run was on mysql, this one is on mariadb: the comparison below is "
        "across engines, not of two machines"
    ]


def test_like_refuses_a_mariadb_sort_memory_postgresql_cannot_set(pg_dsn, outbox_dir):
    run = published_run(
        "external-sort",
        {"rows": 2000, "sort_memory": "32768", "fetch": "all_rows"},
        server={"engine": "mariadb"},
    )
    with ContractServer() as server:
        done = agent("run", "--like", serve(server, run), "--dsn", pg_dsn, "--dry-run")
    assert done.returncode == 2
    assert "32768 bytes" in done.stderr and "work_mem cannot be below 64kB" in done.stderr


def test_like_replays_sql_bench_with_all_operations(pg_dsn, outbox_dir):
    run = published_run("sql-bench", {"counts": "small", "rows": 50, "operations": "all"})
    with ContractServer() as server:
        done = agent("run", "--like", serve(server, run), "--dsn", pg_dsn, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"][0]["parameters"]["operations"] == "all"


def test_like_refuses_a_newer_benchmark_version(pg_dsn, outbox_dir):
    with ContractServer() as server:
        url = serve(server, {**SELECT_UPDATE, "benchmark_version": "2"})
        done = agent("run", "--like", url, "--dsn", pg_dsn)
    assert done.returncode == 2
    assert "version 2, this agent runs version 1" in done.stderr


# --- the plan, without running -------------------------------------------------------


def options(run: dict, engine: str = "postgresql", given: set[str] = frozenset()) -> list[str]:
    return replay(run, engine, set(given)).options


def test_backup_unpinned_needs_no_pin_and_a_pinned_one_is_reproduced():
    backup = {"rows": 1000, "tool": "gbak", "tool_options": "-b -g", "protocols": "local"}
    unpinned = published_run("backup", {**backup, "pin": "unpinned"}, server={"engine": "firebird"})
    assert options(unpinned, "firebird") == [
        "--rows", "1000", "--protocols", "local", "--repeat", "1"
    ]  # fmt: skip
    pinned = published_run("backup", {**backup, "pin": "other_core"}, server={"engine": "firebird"})
    assert options(pinned, "firebird")[-4:] == ["--pin", "other_core", "--repeat", "1"]


def test_a_backup_that_records_no_rows_is_refused():
    """Seed 001's backups (of the author's 3.8 GB database) record no rows:
    the agent's defaults would time a table of its own and call it a replay."""
    article = published_run("backup", {}, server={"engine": "firebird"}, source="curated")
    with pytest.raises(CannotReplay, match="that run records no rows"):
        replay(article, "firebird", set())
    with pytest.raises(CannotReplay, match="that run records no rows"):
        replay(article, "firebird", {"--rows"})


def test_backup_with_another_engines_tool_is_refused():
    run = published_run(
        "backup",
        {"rows": 10, "tool": "gbak", "tool_options": "-b -g"},
        server={"engine": "firebird"},
    )
    with pytest.raises(
        CannotReplay, match="timed gbak on firebird; a postgresql --dsn would time pg_dump"
    ):
        replay(run, "postgresql", set())


def test_tpcb_by_the_agent_on_mariadb_keeps_its_simple_query_mode():
    run = published_run(
        "tpcb",
        {"scale": 2, "duration": 5.0, "warmup": 0.0, "clients": "1,4", "load_engine": "agent",
         "query_mode": "simple"},
    )  # fmt: skip
    assert options(run, "mariadb") == [
        "--engine", "agent", "--scale", "2", "--duration", "5", "--warmup", "0",
        "--clients", "1,4", "--repeat", "1",
    ]  # fmt: skip
    with pytest.raises(CannotReplay, match="query_mode='simple', but tpcb on postgresql"):
        replay(run, "postgresql", set())


def test_a_parameter_this_agent_has_no_option_for_is_refused():
    run = published_run("select-update", {"rows": 100, "isolation": "serializable"})
    with pytest.raises(CannotReplay, match="no option for that run's isolation='serializable'"):
        replay(run, "postgresql", set())


def test_another_load_engine_is_refused_not_replaced():
    run = published_run("select-update", {"rows": 100}, client={"load_engine": "sysbench"})
    with pytest.raises(CannotReplay, match="load came from 'sysbench'"):
        replay(run, "postgresql", set())


@pytest.mark.parametrize(
    ("benchmark", "parameters"),
    [
        ("select-update", {"rows": 100}),
        ("sql-bench", {"rows": 10}),
        ("external-sort", {"rows": 10}),
        ("tpcb", {"scale": 1, "clients": "1"}),
    ],
)
@pytest.mark.parametrize("client", [{"load_engine": ""}, {}])
def test_a_run_that_names_no_load_engine_is_refused_not_taken_for_the_agents(
    benchmark, parameters, client
):
    """The agent names its load engine in every run it measures: a run that
    names none was loaded by something else, which a replay would not repeat."""
    run = published_run(benchmark, parameters, client=client)

    with pytest.raises(CannotReplay, match="that run records no load engine"):
        replay(run, "postgresql", set())


@pytest.mark.parametrize(
    ("load_engine", "then"),
    [
        ("sysbench", "run that tool yourself and 'benchhub-agent import' its output"),
        # seed 002's and 004's tools: 'import' reads neither
        ("sql-bench", "only that tool repeats it, and 'benchhub-agent import' does not read"),
        ("the author's own Java load-test tool", "'benchhub-agent import' does not read"),
    ],
)
def test_a_run_of_another_tool_points_to_import_only_where_import_reads_it(load_engine, then):
    run = published_run("select-update", {"rows": 100}, client={"load_engine": load_engine})

    with pytest.raises(CannotReplay) as refused:
        replay(run, "postgresql", set())

    assert then in str(refused.value)


def test_a_placement_a_benchmark_cannot_pin_is_refused():
    run = published_run(
        "external-sort",
        {"rows": 10},
        client={"load_engine": "benchhub-agent", "cpu_placement": "same_core"},
    )
    with pytest.raises(CannotReplay, match="pinned its load"):
        replay(run, "postgresql", set())


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        ("64kB", "postgresql", "mariadb", "65536"),
        ("32MB", "postgresql", "mysql", "33554432"),
        ("2048", "postgresql", "mariadb", "2097152"),  # a bare work_mem is kB
        ("1048576", "mariadb", "postgresql", "1MB"),
        ("98304", "mysql", "postgresql", "96kB"),
        ("1M", "mariadb", "postgresql", "1MB"),
        ("3GB", "postgresql", "postgresql", "3GB"),
    ],
)
def test_sort_memory_keeps_its_bytes_between_engines(value, source, target, expected):
    assert convert_sort_memory(value, source, target) == expected


def test_a_sort_memory_postgresql_cannot_hold_exactly_is_refused():
    with pytest.raises(CannotReplay, match="not a whole number of kB"):
        convert_sort_memory("100000", "mariadb", "postgresql")


# --- the verdict, the server's rule ------------------------------------------------------


def test_a_clear_difference_in_repeated_samples_is_named_by_direction():
    slow = [RunValues(100.0, (96.0, 100.0, 104.0, 99.0))]
    fast = [RunValues(150.0, (149.0, 150.0, 155.0, 146.0))]
    assert verdict(fast, slow, direction="higher").verdict == "better"
    assert verdict(fast, slow, direction="lower").verdict == "worse"


def test_a_difference_well_inside_the_minimum_effect_is_equivalent():
    a = [RunValues(100.0, (100.0, 100.1, 99.9, 100.0))]
    b = [RunValues(103.0, (103.0, 103.1, 102.9, 103.0))]  # significant, but only 3 %
    judged = verdict(b, a, direction="higher")
    assert 0.95 < judged.ratio_low < judged.ratio_high < 1.05
    assert judged.verdict == "equivalent"


def test_an_overlapping_repeat_is_inconclusive_and_the_table_shows_its_interval():
    """12 % faster on the median, but the repetitions overlap: the test
    cannot tell, and the row says how far either way the data allow."""
    mine = [Measurement("throughput", 112.0, "tx/s", {"clients": 4}, [96.5, 112.0, 131.0])]
    theirs = [
        {
            "metric": "throughput",
            "value": 100.0,
            "parameters": {"clients": 4},
            "samples": [88.0, 100.0, 121.5, 95.0],
            "direction": "higher",
        }
    ]
    # no fingerprint: no baseline asked for, so no server is reached
    (row,) = comparison_rows("http://127.0.0.1:9", None, mine, theirs)
    judged = verdict(
        [RunValues(112.0, (96.5, 112.0, 131.0))],
        [RunValues(100.0, (88.0, 100.0, 121.5, 95.0))],
        direction="higher",
    )
    assert judged.verdict == "inconclusive"
    assert judged.ratio_low < 0.95 and judged.ratio_high > 1.05
    low, high = re.fullmatch(r"inconclusive: ([\d.]+)-([\d.]+)x", row[4]).groups()
    assert float(low) == pytest.approx(judged.ratio_low, rel=5e-3)
    assert float(high) == pytest.approx(judged.ratio_high, rel=5e-3)
    assert row[3] == "+12.0%"


def test_an_unrepeated_value_is_insufficient_data():
    assert verdict([RunValues(1.0)], [RunValues(9.0, (9.0, 9.1))], direction="higher").verdict == (
        "insufficient data"
    )


def test_a_replay_on_another_engine_says_the_comparison_is_across_engines():
    run = published_run("select-update", {"locking": "for_update"}, server={"engine": "postgresql"})
    assert replay(run, "mariadb", set()).notes == [
        "that run was on postgresql, this one is on mariadb: the comparison below is "
        "across engines, not of two machines"
    ]
    assert replay(run, "postgresql", set()).notes == []


@pytest.mark.parametrize(("source", "scheme"), [("mariadb", "mysql"), ("mysql", "mariadb")])
def test_the_mysql_and_mariadb_schemes_are_one_engine_for_a_replay(source, scheme):
    run = published_run("external-sort", {"rows": 3100, "sort_memory": "262144",
                        "fetch": "all_rows"}, server={"engine": source})  # fmt: skip
    found = replay(run, scheme, set())
    assert found.notes == []
    assert found.options[found.options.index("--sort-memory") + 1] == "262144"


def test_the_baseline_median_is_printed_at_the_digits_the_server_holds():
    """The server counts a baseline's values at 4 significant digits: its
    median 2650.5 was printed "2650.5", a digit it does not hold."""
    mine = [Measurement("throughput", 2700.0, "tx/s", {"clients": c}, [2700.0]) for c in (1, 2, 3)]
    with ContractServer() as server:
        server.baselines = [
            {"metric": "throughput", "parameters": {"clients": 1}, "median": 2650.5, "n": 4},
            {"metric": "throughput", "parameters": {"clients": 2}, "median": 0.00012344, "n": 2},
            {"metric": "throughput", "parameters": {"clients": 3}, "median": 1500.0, "n": 1},
        ]
        rows = comparison_rows(server.url, "f" * 64, mine, [])

    assert [row[5] for row in rows] == ["~2650 (4)", "~0.0001234 (2)", "~1500 (1)"]


def test_small_values_are_printed_with_their_significant_digits():
    """Three decimals printed 0.00012 s as "0", and 1e-9 as "0" too: the
    published value and this run's looked equal, whatever they were."""
    values = [0.00012, 1e-9, -0.00012, -1e-9, 0.0012345, 0.5, 2650.5]
    mine = [Measurement("seconds", v, "s", {"clients": c}, [v]) for c, v in enumerate(values)]
    theirs = [
        {"metric": "seconds", "parameters": {"clients": c}, "value": v * 2}
        for c, v in enumerate(values)
    ]

    rows = comparison_rows("http://unused", None, mine, theirs, benchmark="select-update")

    assert [row[2] for row in rows] == [
        "0.00012", "1e-9", "-0.00012", "-1e-9", "0.00123", "0.5", "2650.5",
    ]  # fmt: skip
    assert [row[1] for row in rows][:4] == ["0.00024", "2e-9", "-0.00024", "-2e-9"]


def test_a_zero_is_printed_0_whatever_its_sign():
    """-0.0 (a published value, a median) printed "-0" beside a "0", as if it
    were below it; a difference that rounds to zero printed "-0.0%"."""
    mine = [
        Measurement("errors", -0.0, "count", {"clients": 1}, [-0.0]),
        Measurement("errors", 0.0, "count", {"clients": 2}, [0.0]),
        Measurement("throughput", 99999.0, "tx/s", {"clients": 1}, [99999.0]),
    ]
    theirs = [
        {"metric": "errors", "parameters": {"clients": 1}, "value": 0.0},
        {"metric": "errors", "parameters": {"clients": 2}, "value": -0.0},
        {"metric": "throughput", "parameters": {"clients": 1}, "value": 100000.0},
    ]
    with ContractServer() as server:
        server.baselines = [
            {"metric": "errors", "parameters": {"clients": 1}, "median": -0.0, "n": 3},
        ]
        rows = comparison_rows(server.url, "f" * 64, mine, theirs, benchmark="select-update")

    assert [row[1:3] for row in rows[:2]] == [["0", "0"], ["0", "0"]]
    assert rows[0][5] == "~0 (3)"
    assert rows[2][3] == "+0.0%"


def test_the_catalog_names_the_version_engines_and_load_options_of_every_agent_benchmark():
    """The server reads these to offer ``run --like`` only for a run this agent repeats,
    and --pin in the command it offers instead only where the benchmark takes it."""
    from benchhub_agent.benchmarks import discover_benchmarks
    from benchhub_contract.schema import benchmark_catalog

    runs = {name: found.module for name, found in discover_benchmarks().items()}
    catalog = {entry["name"]: entry.get("agent") for entry in benchmark_catalog()["benchmarks"]}

    assert {name for name, agent in catalog.items() if agent} == set(runs)
    for name, module in runs.items():
        assert catalog[name]["version"] == module.VERSION, name
        assert set(catalog[name]["engines"]) == module.ENGINES, name
        assert set(catalog[name]["load_options"]) == module.LOAD_OPTIONS, name


def test_the_readme_names_every_field_of_the_catalogs_agent_entry() -> None:
    from benchhub_contract.schema import benchmark_catalog

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    paragraph = next(p for p in readme.split("\n\n") if '`"agent"` entry' in p)
    fields = {key for entry in benchmark_catalog()["benchmarks"] for key in entry.get("agent", {})}

    assert fields == {"version", "engines", "load_options"}
    for key in fields:
        assert f"`{key}`" in paragraph, key
