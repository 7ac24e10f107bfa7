from __future__ import annotations

import math

import pytest
from benchhub_agent.importers import ImportFormatError, parse_tool_output

from .helpers import assert_valid_document, fixture, points


def parse(name: str, **parameters):
    return parse_tool_output("pgbench-log", fixture(name), parameters=parameters or None)


def test_pg15_log_is_summarized_from_pgbench_sums():
    imported = parse("pgbench15-aggregate.log", clients=2)
    found = {key[0]: value for key, value in points(imported).items()}
    assert set(points(imported)) == {(m, ("clients", 2)) for m in found}
    # Every interval but the last: (1908+2032+2149+2165+2121) transactions in 5 s.
    assert found["tps"] == 10375 / 5
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
    assert found[("tps",)] == (302 + 284 + 277 + 287) / 4
    assert imported.runs[0]["parameters"] == {"aggregate_interval": 2, "rate_limited": True}


def test_pg14_docs_log_with_six_fields():
    found = points(parse("published/pgbench-log-docs-pg14.log"))
    assert found[("tps",)] == (5601 + 7884 + 7208 + 7685) / 8
    total = 5601 + 7884 + 7208 + 7685 + 7073
    sum_latency = 1542744 + 1979812 + 1979422 + 1980268 + 1979779
    assert found[("latency_mean",)] == pytest.approx(sum_latency / total / 1000)


def test_pg15_docs_log_with_fifteen_fields():
    imported = parse("published/pgbench-log-docs-pg15.log")
    found = points(imported)
    assert found[("tps",)] == 5178 / 10
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
