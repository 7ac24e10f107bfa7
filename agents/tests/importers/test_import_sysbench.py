from __future__ import annotations

import json
import uuid

import pytest
from benchhub_contract.importers import ImportFormatError, parse_tool_output

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
    # The command leaves the dataset and the time to sysbench's defaults.
    assert run["parameters"] == {
        "test": "oltp_read_write",
        "tables": 1,
        "table_size": 10000,
        "time": 10,
    }
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


READ_WRITE_COMMAND = (
    "$ sysbench oltp_read_write --db-driver=mysql --mysql-host=db7.internal "
    "--mysql-user=alice --mysql-password=Tr0ub4dor --tables=3 --table-size={size} "
    "--threads=4 --time=5 --range-size=25 --skip-trx=on --report-interval=1 run\n"
)


def test_every_workload_option_of_the_pasted_command_is_kept():
    text = READ_WRITE_COMMAND.format(size=250000) + fixture(
        "sysbench10-mariadb-oltp_read_write.txt"
    )
    imported = parse_tool_output("sysbench", text)
    assert imported.runs[0]["parameters"] == {
        "test": "oltp_read_write",
        "tables": 3,
        "table_size": 250000,
        "time": 5,
        "range_size": 25,
        "skip_trx": True,
    }
    assert_valid_document(imported)


def test_connection_options_of_the_pasted_command_are_never_kept():
    text = READ_WRITE_COMMAND.format(size=250000) + fixture(
        "sysbench10-mariadb-oltp_read_write.txt"
    )
    document = parse_tool_output("sysbench", text).document(uuid=str(uuid.uuid4()))
    kept = json.dumps(document)
    for secret in ("Tr0ub4dor", "alice", "db7.internal", "report_interval"):
        assert secret not in kept


def test_two_dataset_sizes_are_two_comparability_keys():
    small, large = (
        parse_tool_output(
            "sysbench",
            READ_WRITE_COMMAND.format(size=size)
            + fixture("sysbench10-mariadb-oltp_read_write.txt"),
        ).runs[0]["parameters"]
        for size in (10000, 1300000)
    )
    assert small != large
    assert (small["table_size"], large["table_size"]) == (10000, 1300000)


def test_threads_on_the_command_must_be_the_threads_printed():
    text = READ_WRITE_COMMAND.format(size=10000).replace("--threads=4", "--threads=16")
    with pytest.raises(ImportFormatError, match="--threads=16 but sysbench printed"):
        parse_tool_output("sysbench", text + fixture("sysbench10-mariadb-oltp_read_write.txt"))


def test_a_dataset_size_given_at_import_must_match_the_command():
    text = READ_WRITE_COMMAND.format(size=10000) + fixture("sysbench10-mariadb-oltp_read_write.txt")
    with pytest.raises(ImportFormatError, match="parameter 'table_size': the output says 10000"):
        parse_tool_output("sysbench", text, parameters={"table_size": 100000})


def test_without_a_command_the_dataset_comes_from_the_caller_or_is_said_unknown():
    given = parse("sysbench10-mariadb-oltp_read_write.txt", "oltp_read_write")
    assert "dataset size is unknown" in given.runs[0]["note"]
    sized = parse_tool_output(
        "sysbench",
        fixture("sysbench10-mariadb-oltp_read_write.txt"),
        parameters={"test": "oltp_read_write", "tables": 2, "table_size": 10000},
    )
    assert sized.runs[0]["parameters"]["table_size"] == 10000
    assert "dataset size" not in sized.runs[0]["note"]


def test_the_command_given_beside_the_output_is_read_like_a_pasted_one():
    imported = parse_tool_output(
        "sysbench",
        fixture("sysbench10-postgresql-oltp_read_write.txt"),
        command="sysbench oltp_read_write --db-driver=pgsql --pgsql-password=pw7Q "
        "--tables=6 --table-size=350000 --threads=4 --time=5 run",
    )
    assert imported.runs[0]["parameters"] == {
        "test": "oltp_read_write",
        "tables": 6,
        "table_size": 350000,
        "time": 5,
    }


def test_a_given_command_that_differs_from_the_one_in_the_file_is_refused():
    text = READ_WRITE_COMMAND.format(size=10000) + fixture("sysbench10-mariadb-oltp_read_write.txt")
    with pytest.raises(ImportFormatError, match="two sysbench command lines") as refused:
        parse_tool_output(
            "sysbench",
            text,
            command="sysbench oltp_read_write --mysql-password=Tr0ub4dor --tables=3 "
            "--table-size=20000 --threads=4 --time=5 run",
        )
    assert "table_size=10000" in str(refused.value) and "table_size=20000" in str(refused.value)
    assert "Tr0ub4dor" not in str(refused.value)
