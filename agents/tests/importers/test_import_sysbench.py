from __future__ import annotations

import pytest
from benchhub_agent.importers import ImportFormatError, parse_tool_output

from .helpers import assert_valid_document, fixture, points


def parse(name: str, test: str | None = None):
    return parse_tool_output("sysbench", fixture(name), parameters={"test": test} if test else None)


def test_sysbench10_oltp_read_write_on_mariadb():
    imported = parse("sysbench10-mariadb-oltp_read_write.txt", "oltp_read_write")
    run = imported.runs[0]
    assert run["benchmark"] == "sysbench"
    assert run["parameters"] == {"test": "oltp_read_write"}
    assert points(imported) == {
        ("tps", ("threads", 4)): 856.20,
        ("qps", ("threads", 4)): 17123.97,
        ("latency_min", ("threads", 4)): 1.10,
        ("latency_mean", ("threads", 4)): 4.67,
        ("latency_max", ("threads", 4)): 20.87,
        ("latency_p95", ("threads", 4)): 8.90,
        ("errors", ("threads", 4)): 0,
        ("reconnects", ("threads", 4)): 0,
    }
    assert imported.source == {"kind": "import", "tool": "sysbench", "tool_version": "1.0.20"}
    assert imported.facts == {"client": {"load_engine": "sysbench"}}
    assert "The test name was given at import" in run["note"]


def test_sysbench10_oltp_read_write_on_postgresql():
    found = points(parse("sysbench10-postgresql-oltp_read_write.txt", "oltp_read_write"))
    assert found[("tps", ("threads", 4))] == 1559.84
    assert found[("qps", ("threads", 4))] == 31250.69


def test_sysbench10_intermediate_reports_are_skipped():
    found = points(parse("sysbench10-mariadb-oltp_read_only-report.txt", "oltp_read_only"))
    assert found[("tps", ("threads", 2))] == 1313.76
    assert found[("latency_p95", ("threads", 2))] == 2.66


def test_a_99th_percentile_is_not_passed_off_as_p95():
    imported = parse("sysbench10-mariadb-oltp_point_select-p99.txt", "oltp_point_select")
    metrics = {m["metric"] for m in imported.runs[0]["measurements"]}
    assert "latency_p95" not in metrics
    assert points(imported)[("tps", ("threads", 2))] == 29064.80
    assert "99th percentile 0.3 ms" in imported.runs[0]["note"]


def test_sysbench11_summary_without_header():
    imported = parse("published/sysbench11-oltp_read_only-summary.txt", "oltp_read_only")
    assert points(imported) == {
        ("tps",): 15765.21,
        ("qps",): 189182.53,
        ("latency_min",): 0.22,
        ("latency_mean",): 0.25,
        ("latency_max",): 0.52,
        ("latency_p95",): 0.30,
        ("errors",): 0,
        ("reconnects",): 0,
    }
    assert "tool_version" not in imported.source
    assert "does not give the number of threads" in imported.runs[0]["note"]


def test_the_test_is_read_from_a_pasted_command_line():
    text = (
        "$ sysbench /usr/share/sysbench/oltp_read_write.lua --db-driver=mysql --threads=4 run\n"
        + fixture("sysbench10-mariadb-oltp_read_write.txt")
    )
    run = parse_tool_output("sysbench", text).runs[0]
    assert run["parameters"] == {"test": "oltp_read_write"}
    with pytest.raises(ImportFormatError, match="the command in the file runs 'oltp_read_write'"):
        parse_tool_output("sysbench", text, parameters={"test": "oltp_read_only"})


def test_without_a_test_name_the_import_is_refused():
    with pytest.raises(ImportFormatError, match="sysbench does not print which test ran"):
        parse("sysbench10-mariadb-oltp_read_write.txt")


@pytest.mark.parametrize(
    ("name", "test"),
    [
        ("sysbench10-mariadb-oltp_read_write.txt", "oltp_read_write"),
        ("sysbench10-mariadb-oltp_read_only-report.txt", "oltp_read_only"),
        ("sysbench10-mariadb-oltp_point_select-p99.txt", "oltp_point_select"),
        ("sysbench10-postgresql-oltp_read_write.txt", "oltp_read_write"),
        ("published/sysbench11-oltp_read_only-summary.txt", "oltp_read_only"),
    ],
)
def test_every_output_makes_a_valid_document(name, test):
    assert_valid_document(parse(name, test))


def test_output_cut_inside_the_latency_block_is_refused():
    text = fixture("sysbench10-mariadb-oltp_read_write.txt").split("         sum:")[0]
    with pytest.raises(ImportFormatError, match="'sum: …' under 'Latency \\(ms\\):'"):
        parse_tool_output("sysbench", text, parameters={"test": "oltp_read_write"})


def test_output_cut_before_the_statistics_is_refused():
    text = fixture("sysbench10-mariadb-oltp_read_write.txt").split("SQL statistics")[0]
    with pytest.raises(ImportFormatError, match="expected a 'SQL statistics:' block"):
        parse_tool_output("sysbench", text, parameters={"test": "oltp_read_write"})


def test_a_fatal_error_is_refused():
    text = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nFATAL: Connection refused\n"
    with pytest.raises(ImportFormatError, match="fatal error"):
        parse_tool_output("sysbench", text, parameters={"test": "oltp_read_write"})
