from __future__ import annotations

import math

import pytest
from benchhub_contract.importers import ImportFormatError, parse_tool_output

from .helpers import assert_valid_document, fixture, points


def parse(name: str, **parameters):
    return parse_tool_output("pgbench-log", fixture(name), parameters=parameters or None)


def test_pg15_log_is_summarized_from_pgbench_sums():
    imported = parse("pgbench15-aggregate.log", clients=2)
    found = {key[0]: value for key, value in points(imported).items()}
    assert set(points(imported)) == {(m, ("clients", 2)) for m in found}
    # Every interval but the first and the last: (2032+2149+2165+2121) transactions in 4 s.
    assert found["tps"] == 8467 / 4
    total = 1908 + 2032 + 2149 + 2165 + 2121 + 2091
    sum_latency = 1891949 + 1998298 + 1997398 + 1997040 + 1996672 + 1993081
    sum_latency_2 = 1960573969 + 2070099450 + 1900150908 + 1900036708 + 1918278648 + 2027083137
    assert found["latency_mean"] == pytest.approx(sum_latency / total / 1000)
    mean_us = sum_latency / total
    assert found["latency_stddev"] == pytest.approx(
        math.sqrt(sum_latency_2 / total - mean_us**2) / 1000
    )
    run = imported.runs[0]
    assert run["benchmark"] == "tpcb"
    assert run["parameters"] == {"aggregate_interval": 1}
    assert_valid_document(imported)


def test_summary_is_close_to_the_report_of_the_same_run():
    # Same run: the report says 0.955 ms. The log holds 12466 of the 12570
    # transactions the report counts, so the two agree closely, not exactly.
    report = points(parse_tool_output("pgbench", fixture("pgbench15-aggregate-run.txt")))
    log = points(parse("pgbench15-aggregate.log", clients=2))
    key = ("latency_mean", ("clients", 2))
    assert abs(log[key] - report[key]) < 0.005


def test_two_threads_logs_concatenated_are_added_per_interval():
    imported = parse("pgbench15-aggregate-rate-2threads.log")
    found = points(imported)
    # Only the middle interval of three is whole: 277 + 287 transactions in 2 s.
    assert found[("tps",)] == (277 + 287) / 2
    assert imported.runs[0]["parameters"] == {"aggregate_interval": 2, "rate_limited": True}


def test_pg14_docs_log_with_six_fields():
    found = points(parse("published/pgbench-log-docs-pg14.log"))
    assert found[("tps",)] == (7884 + 7208 + 7685) / 6
    total = 5601 + 7884 + 7208 + 7685 + 7073
    sum_latency = 1542744 + 1979812 + 1979422 + 1980268 + 1979779
    assert found[("latency_mean",)] == pytest.approx(sum_latency / total / 1000)


def test_pg15_docs_log_with_fifteen_fields():
    imported = parse("published/pgbench-log-docs-pg15.log")
    found = points(imported)
    # Two intervals are the run's first and last: neither is whole, so no tps.
    assert ("tps",) not in found
    assert found[("latency_mean",)] == pytest.approx((26171317 + 25573984) / (5178 + 4808) / 1000)
    assert imported.runs[0]["parameters"]["rate_limited"] is True
    assert_valid_document(imported)


def test_a_single_interval_gives_latency_but_no_tps():
    text = fixture("pgbench15-aggregate.log").split("\n")[0]
    found = points(parse_tool_output("pgbench-log", text))
    assert ("tps",) not in found
    assert found[("latency_mean",)] == pytest.approx(1891949 / 1908 / 1000)


def test_a_truncated_last_line_is_refused():
    text = fixture("pgbench15-aggregate.log").rstrip("\n")[:-12]
    with pytest.raises(ImportFormatError, match="line 6 has 9 fields"):
        parse_tool_output("pgbench-log", text)


def test_a_last_line_cut_to_a_valid_older_layout_is_still_refused():
    lines = fixture("pgbench15-aggregate.log").splitlines()
    lines[-1] = " ".join(lines[-1].split()[:6])
    with pytest.raises(ImportFormatError, match="every line with 15 fields like the first"):
        parse_tool_output("pgbench-log", "\n".join(lines))


def test_a_missing_interval_is_refused():
    lines = fixture("pgbench15-aggregate.log").splitlines()
    with pytest.raises(ImportFormatError, match="evenly spaced interval starts"):
        parse_tool_output("pgbench-log", "\n".join(lines[:2] + lines[3:]))


def test_the_report_is_not_a_log():
    with pytest.raises(ImportFormatError, match=r"aggregate log .* line 1 is 'pgbench"):
        parse_tool_output("pgbench-log", fixture("pgbench15-tpcb.txt"))


def test_a_short_first_interval_is_left_out_of_tps():
    # Two threads, 1 s intervals: the first second held 960 + 1007
    # transactions while the clients connected, the whole ones 2,704 to 3,185.
    found = points(parse("pgbench15-aggregate-2threads.log"))
    whole = (1343 + 1361) + (1604 + 1557) + (1614 + 1571) + (1557 + 1579)
    assert found[("tps",)] == whole / 4


def test_tps_is_close_to_pgbench_report_of_the_same_run():
    # -c 3 -T 8 --aggregate-interval=2: pgbench said tps = 2170.356206; the
    # two whole intervals held 4351 + 4363 transactions in 4 s.
    found = points(parse("pgbench15-aggregate-2s.log", clients=3))
    report = points(parse_tool_output("pgbench", fixture("pgbench15-aggregate-2s-run.txt")))
    assert found[("tps", ("clients", 3))] == (4351 + 4363) / 4
    assert abs(found[("tps", ("clients", 3))] / report[("tps", ("clients", 3))] - 1) < 0.01


@pytest.mark.parametrize(
    "name", ["pgbench15-per-transaction.log", "pgbench15-per-transaction-rate.log"]
)
def test_a_per_transaction_log_is_named_and_refused(name):
    # The 6-column one has as many whole numbers a line as an aggregate log
    # of PostgreSQL 13-14: counted as one, it gives a tps a hundred times too high.
    with pytest.raises(ImportFormatError, match=r"per-transaction log .* --aggregate-interval"):
        parse(name)


def test_a_per_transaction_line_after_aggregate_lines_is_refused():
    lines = fixture("published/pgbench-log-docs-pg14.log").splitlines()
    per_transaction = fixture("pgbench15-per-transaction.log").splitlines()[7]
    with pytest.raises(ImportFormatError, match="line 3 starts with 1, not a Unix time"):
        parse_tool_output("pgbench-log", "\n".join([*lines[:2], per_transaction, *lines[2:]]))


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("1345828503 7884 1979812 565806736 1479 60", "min_latency 1479 above max_latency 60"),
        ("1345828503 7884 19798 565806736 60 1479", "sum_latency 19798 outside"),
        ("1345828503 7884 1979812 5658067 60 1479", "sum_latency_2 below"),
        ("1345828503 0 1979812 565806736 60 1479", "latencies for an interval without"),
    ],
)
def test_an_interval_that_no_latencies_can_give_is_refused(line, problem):
    lines = fixture("published/pgbench-log-docs-pg14.log").splitlines()
    lines[1] = line
    with pytest.raises(ImportFormatError, match=problem):
        parse_tool_output("pgbench-log", "\n".join(lines))
