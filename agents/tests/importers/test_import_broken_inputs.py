"""Every tool refuses what is not its output, and says what it expected."""

from __future__ import annotations

import os

import pytest
from benchhub_contract.importers import TOOLS, ImportFormatError, parse_tool_output

from .helpers import fixture

EXPECTED = {
    "pgbench": "pgbench output",
    "pgbench-log": "a pgbench aggregate log",
    "sysbench": "sysbench output",
    "benchbase": "a BenchBase summary.json",
    "hammerdb": "HammerDB output",
}
# One real file of each tool, fed to every other tool.
SAMPLES = {
    "pgbench": "pgbench15-tpcb.txt",
    "pgbench-log": "pgbench15-aggregate.log",
    "sysbench": "sysbench10-mariadb-oltp_read_write.txt",
    "benchbase": "published/benchbase-sqlite-tpcc-summary.json",
    "hammerdb": "published/hammerdb-postgresql-cli.txt",
}


def test_every_tool_is_covered():
    assert set(TOOLS) == set(EXPECTED) == set(SAMPLES)


@pytest.mark.parametrize("tool", EXPECTED)
@pytest.mark.parametrize("text", ["", "   \n\n", b""])
def test_empty_input_is_refused(tool, text):
    with pytest.raises(ImportFormatError, match=f"the file is empty; expected {EXPECTED[tool]}"):
        parse_tool_output(tool, text)


@pytest.mark.parametrize("tool", EXPECTED)
def test_binary_garbage_is_refused(tool):
    garbage = os.urandom(2048)
    with pytest.raises(ImportFormatError, match=EXPECTED[tool]):
        parse_tool_output(tool, garbage)
    with pytest.raises(ImportFormatError, match="binary data"):
        parse_tool_output(tool, "\x00\x01\x02" * 100)


@pytest.mark.parametrize("tool", EXPECTED)
@pytest.mark.parametrize("other", SAMPLES)
def test_another_tools_output_is_refused(tool, other):
    if tool == other:
        pytest.skip("a tool's own output is accepted")
    with pytest.raises(ImportFormatError) as refused:
        parse_tool_output(tool, fixture(SAMPLES[other]), parameters=None)
    message = str(refused.value)
    assert EXPECTED[tool] in message or "sysbench does not print which test ran" in message


def test_an_unknown_tool_is_refused_with_the_known_ones():
    with pytest.raises(ImportFormatError, match="unknown tool 'jmeter'; expected one of pgbench"):
        parse_tool_output("jmeter", "anything")


BIG = "9" * 5000


def _benchbase(**changes: object) -> str:
    import json

    summary = json.loads(fixture(SAMPLES["benchbase"]))
    return json.dumps(summary | changes)


def _replaced(tool: str, old: str, new: str) -> str:
    text = fixture(SAMPLES[tool])
    assert old in text
    return text.replace(old, new, 1)


# Each raised ValueError or RecursionError out of int() or json.loads: a 500
# on the server's /api/v1/imports/, a traceback from `benchhub-agent import`.
@pytest.mark.parametrize(
    ("tool", "text", "expected"),
    [
        ("benchbase", "[" * 100_000, "nested too deeply to read"),
        ("benchbase", '{"Benchmark Type": ' + BIG + "}", "the key"),
        ("benchbase", _benchbase(terminals="²"), "under 'terminals' (at most 20 digits 0-9)"),
        ("benchbase", _benchbase(terminals=BIG), "(5000 characters)"),
        ("hammerdb", _replaced("hammerdb", "18664", BIG), "a whole number of NOPM"),
        ("hammerdb", _replaced("hammerdb", "43386", BIG), "a whole number of TPM"),
        ("pgbench", _replaced("pgbench", "number of clients: 4", "number of clients: ²"), "'²'"),
        ("pgbench", _replaced("pgbench", "duration: 5 s", f"duration: {BIG} s"), "duration"),
        ("pgbench-log", _replaced("pgbench-log", "1908", "²"), "whole numbers"),
        ("pgbench-log", _replaced("pgbench-log", "1908", BIG), "whole numbers"),
        (
            "sysbench",
            _replaced("sysbench", "Number of threads: ", f"Number of threads: {BIG}"),
            "threads",
        ),
    ],
)
def test_a_number_int_cannot_read_is_refused_saying_what_was_expected(tool, text, expected):
    parameters = {"clients": 4} if tool == "pgbench-log" else {"test": "oltp_read_write"}
    if tool not in ("pgbench-log", "sysbench"):
        parameters = None
    with pytest.raises(ImportFormatError, match=EXPECTED[tool]) as refused:
        parse_tool_output(tool, text, parameters=parameters)
    assert expected in str(refused.value)


@pytest.mark.parametrize(
    ("tool", "first", "second", "parameters"),
    [
        ("pgbench", "pgbench15-tpcb.txt", "pgbench15-tpcb-progress.txt", None),
        ("pgbench", "pgbench15-tpcb-rate.txt", "pgbench15-tpcb.txt", None),
        ("sysbench", "sysbench10-mariadb-oltp_read_write.txt",
         "sysbench10-postgresql-oltp_read_write.txt", {"test": "oltp_read_write"}),
    ],
)  # fmt: skip
def test_two_reports_in_one_file_are_refused_not_mixed(tool, first, second, parameters):
    # Read as one, the first report's clients would go with the second's tps.
    with pytest.raises(ImportFormatError, match=r"two .* reports in one file"):
        parse_tool_output(tool, fixture(first) + fixture(second), parameters=parameters)
