from __future__ import annotations

import pytest
from benchhub_contract.importers import ImportFormatError, parse_tool_output

from .helpers import assert_valid_document, fixture, points


def parse(name: str):
    return parse_tool_output("pgbench", fixture(name))


def test_pg15_time_limited_report_gives_tps_latency_and_failures():
    imported = parse("pgbench15-tpcb.txt")
    run = imported.runs[0]
    assert run["benchmark"] == "tpcb"
    assert run["parameters"] == {"scale": 2, "query_mode": "simple", "threads": 2, "duration": 5}
    assert points(imported) == {
        ("tps", ("clients", 4)): 2400.595767,
        ("latency_mean", ("clients", 4)): 1.666,
        ("failed_transactions", ("clients", 4)): 0,
    }
    assert imported.facts["database"] == {
        "version_string": "PostgreSQL 15.20 (Debian 15.20-0+deb12u1)",
        "engine": "postgresql",
    }
    assert imported.facts["client"] == {"load_engine": "pgbench"}
    assert imported.source == {
        "kind": "import",
        "tool": "pgbench",
        "tool_version": "15.20 (Debian 15.20-0+deb12u1)",
    }


def test_pg15_progress_lines_are_skipped_and_stddev_kept():
    imported = parse("pgbench15-tpcb-progress.txt")
    assert points(imported) == {
        ("tps", ("clients", 2)): 1605.984363,
        ("latency_mean", ("clients", 2)): 1.241,
        ("latency_stddev", ("clients", 2)): 0.339,
        ("failed_transactions", ("clients", 2)): 0,
    }
    assert "5 progress (-P) lines were not imported." in imported.runs[0]["note"]


def test_pg15_per_statement_latencies_with_failures_column():
    imported = parse("pgbench15-tpcb-per-statement.txt")
    run = imported.runs[0]
    assert run["parameters"]["query_mode"] == "prepared"
    assert run["parameters"]["transactions_per_client"] == 250
    found = points(imported)
    assert found[("tps", ("clients", 4))] == 2477.031723
    branches = "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;"
    assert found[("latency_mean", ("clients", 4), ("statement", branches))] == 0.441
    assert found[("latency_mean", ("clients", 4), ("statement", "END;"))] == 0.446
    statements = [m for m in run["measurements"] if "statement" in m.get("parameters", {})]
    assert len(statements) == 11


def test_pg15_rate_limited_run_is_marked():
    run = parse("pgbench15-tpcb-rate.txt").runs[0]
    assert run["parameters"]["rate_limited"] is True
    assert run["parameters"]["latency_limit_ms"] == 5.0


def test_pg13_uses_the_tps_excluding_connections():
    imported = parse("published/pgbench13-tpcb.txt")
    assert points(imported) == {
        ("tps", ("clients", 8)): 592.724062,
        ("latency_mean", ("clients", 8)): 13.493,
        ("latency_stddev", ("clients", 8)): 15.117,
    }
    # 13 prints no version line: nothing is claimed about the server.
    assert "database" not in imported.facts
    assert "tool_version" not in imported.source


def test_pg13_per_statement_block_under_script_statistics():
    found = points(parse("published/pgbench13-docs-per-statement.txt"))
    assert found[("tps", ("clients", 10))] == 622.977698
    tellers = "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;"
    assert found[("latency_mean", ("clients", 10), ("statement", tellers))] == 5.528


def test_pg14_progress_report():
    imported = parse("published/pgbench14-tpcb-progress.txt")
    assert points(imported) == {
        ("tps", ("clients", 50)): 4513.819785,
        ("latency_mean", ("clients", 50)): 11.071,
        ("latency_stddev", ("clients", 50)): 10.775,
    }
    assert imported.runs[0]["parameters"]["duration"] == 60


def test_pg16_reports():
    assert points(parse("published/pgbench16-tpcb.txt"))[("tps", ("clients", 10))] == 803.850282
    imported = parse("published/pgbench16-tpcb-transactions.txt")
    assert points(imported)[("latency_mean", ("clients", 100))] == 164.089
    assert imported.runs[0]["parameters"]["scale"] == 100
    assert imported.facts["database"]["version_string"] == "PostgreSQL 16.2"


def test_pg17_against_an_older_server_reports_the_server_version():
    imported = parse("published/pgbench17-tpcb-progress-server15.txt")
    assert points(imported)[("tps", ("clients", 8))] == 1382.749901
    assert imported.source["tool_version"] == "17.6 (Ubuntu 17.6-2.pgdg24.04+1)"
    assert imported.facts["database"]["version_string"] == (
        "PostgreSQL 15.14 (Ubuntu 15.14-1.pgdg24.04+1)"
    )
    assert points(parse("published/pgbench17-tpcb.txt"))[("tps", ("clients", 10))] == 786.574737


@pytest.mark.parametrize(
    "name",
    [
        "pgbench15-tpcb.txt",
        "pgbench15-tpcb-progress.txt",
        "pgbench15-tpcb-per-statement.txt",
        "pgbench15-tpcb-rate.txt",
        "pgbench15-aggregate-run.txt",
        "published/pgbench13-tpcb.txt",
        "published/pgbench13-docs-per-statement.txt",
        "published/pgbench14-tpcb-progress.txt",
        "published/pgbench16-tpcb.txt",
        "published/pgbench16-tpcb-transactions.txt",
        "published/pgbench17-tpcb-progress-server15.txt",
        "published/pgbench17-tpcb.txt",
    ],
)
def test_every_report_makes_a_valid_document(name):
    assert_valid_document(parse(name))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("pgbench15-select-only.txt", "built-in script <builtin: select only>"),
        ("pgbench15-custom-script.txt", "custom scripts are not a catalog benchmark"),
        ("published/pgbench14-custom-script-server15.txt", "'bench/range.sql'"),
    ],
)
def test_scripts_other_than_tpcb_are_refused_by_name(name, message):
    with pytest.raises(ImportFormatError, match=message):
        parse(name)


def test_report_cut_before_the_tps_line_is_refused():
    text = fixture("pgbench15-tpcb.txt").split("initial connection time")[0]
    with pytest.raises(ImportFormatError, match=r"expected a line 'tps = … \(without initial"):
        parse_tool_output("pgbench", text)


def test_tps_line_cut_mid_line_is_refused():
    text = fixture("pgbench15-tpcb.txt").replace("(without initial connection time)", "(with")
    with pytest.raises(ImportFormatError, match="tps = "):
        parse_tool_output("pgbench", text)


def test_per_statement_block_cut_short_is_refused():
    text = fixture("pgbench15-tpcb-per-statement.txt").rsplit("\n", 4)[0]
    with pytest.raises(ImportFormatError, match="expected 11 lines for the TPC-B script, found 8"):
        parse_tool_output("pgbench", text)


def test_aborted_run_is_refused():
    text = (
        fixture("pgbench15-tpcb.txt")
        + "pgbench: fatal: Run was aborted; the above results are incomplete.\n"
    )
    with pytest.raises(ImportFormatError, match="aborted"):
        parse_tool_output("pgbench", text)


def test_initialization_output_is_not_a_report():
    with pytest.raises(ImportFormatError, match="expected a line 'transaction type: …'"):
        parse("pgbench15-init.txt")


def test_a_contradicting_parameter_is_refused():
    with pytest.raises(
        ImportFormatError, match="parameter 'scale': the output says 2, you gave 10"
    ):
        parse_tool_output("pgbench", fixture("pgbench15-tpcb.txt"), parameters={"scale": 10})
