"""Every tool refuses what is not its output, and says what it expected."""

from __future__ import annotations

import os

import pytest
from benchhub_agent.importers import TOOLS, ImportFormatError, parse_tool_output

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
