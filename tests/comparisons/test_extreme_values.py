"""Comparisons of values at the edges of what an upload may carry: the
schema admits any finite number within ±1e18, subnormals and zero included,
and a stranger will send them. Every comparison of them answers 200 with
finite numbers (JSON has no inf or NaN), in the API, its CSV and /compare/;
a ratio that has no finite value is left out with a note, not invented."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from benchhub_contract.verdicts import RunValues, verdict

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sql_bench_document, sweep_document

URL = "/api/v1/comparisons/"
HUGE = 1e18  # the schema's bound
TINY = 5e-324  # the smallest positive double
XFS = {"filesystem": "xfs", "kind": "ssd"}
QUERY = {
    "benchmark": "select-update",
    "metric": "throughput",
    "x": "param.clients",
    "series": "filesystem",
    "reference": "ext4",
}
# clients -> (ext4, xfs): overflow, underflow, a zero reference, zero against
# zero, and an ordinary pair, so that a bug in one does not hide behind another.
EDGES = {
    1: (TINY, HUGE),
    2: (HUGE, TINY),
    4: (0.0, 3.5),
    8: (0.0, 0.0),
    16: (HUGE, HUGE / 2),
    32: (5e-289, HUGE),  # a finite ratio, 2e306, whose percentage is not
    64: (None, HUGE),  # a finite ratio whose interval's upper bound is not
}
# ext4's runs at 64 clients: a median ratio of 6.7e307, an upper bound near 2e308.
SPREAD_AT_64 = (0.5e-290, 1e-290, 2e-290, 4e-290)


def _with_samples(document: dict, spread: float) -> dict:
    for measurement in document["runs"][0]["measurements"]:
        value = measurement["value"]
        # never above the value: the schema bounds samples at 1e18 too
        measurement["samples"] = [value, value * (1 - spread), value * (1 - spread / 2)]
    return document


@pytest.fixture
def edges(bob):
    # Four repeated runs a side, so that both the rank test and (with fewer
    # runs at some points) the bootstrap meet the extremes.
    for run, spread in enumerate((0.0, 0.01, 0.02, 0.03)):
        ext4 = {clients: pair[0] for clients, pair in EDGES.items()} | {64: SPREAD_AT_64[run]}
        xfs = {clients: pair[1] for clients, pair in EDGES.items() if run < 2 or clients != 16}
        for values, storage in ((ext4, {}), (xfs, {"storage": XFS})):
            document = _with_samples(sweep_document(values, **storage), spread)
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)


def _finite_everywhere(value) -> None:
    if isinstance(value, float):
        assert math.isfinite(value), value
    elif isinstance(value, dict):
        for item in value.values():
            _finite_everywhere(item)
    elif isinstance(value, list):
        for item in value:
            _finite_everywhere(item)


def test_extreme_values_compare_to_finite_numbers_in_the_api(anonymous_api, edges):
    response = anonymous_api.get(URL, QUERY)

    assert response.status_code == 200, response.content[:500]
    # Strict JSON: Python's parser would accept Infinity and NaN, a browser's not.
    body = json.loads(response.content, parse_constant=lambda name: pytest.fail(name))
    _finite_everywhere(body)
    xfs = {p["x"]: p for p in next(s for s in body["series"] if s["label"] == "xfs")["points"]}
    assert xfs[1]["value"] == HUGE
    # 1e18 / 5e-324 has no finite ratio, and nothing is relative to zero.
    for clients in (1, 4, 8):
        assert xfs[clients]["relative"] is None, xfs[clients]
        assert xfs[clients]["verdict"]["verdict"] not in ("better", "worse"), xfs[clients]
    # Finite ratios are judged, whatever their size; only what overflows is null.
    for clients in (32, 64):
        assert xfs[clients]["relative"] is None, xfs[clients]
        assert xfs[clients]["verdict"]["verdict"] == "better", xfs[clients]
    assert xfs[32]["verdict"]["ratio"] == pytest.approx(2e306)
    assert xfs[64]["verdict"]["ratio"] == pytest.approx(HUGE / 1.5e-290)
    assert xfs[64]["verdict"]["ratio_high"] is None
    # 5e-324 / 1e18 is a ratio of zero: a finite, honest "worse".
    assert xfs[2]["relative"] == 0.0
    assert xfs[16]["relative"] == pytest.approx(50.0)
    notes = " ".join(body["notes"])
    assert "clients = 4" in notes, body["notes"]  # the reference is 0 there
    assert "clients = 1, 32, 64: a value's ratio to ext4 is beyond" in notes, body["notes"]


def test_extreme_values_export_as_csv_without_inf_or_nan(anonymous_api, edges):
    response = anonymous_api.get(URL, {**QUERY, "format": "csv"})

    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert rows
    cells = [value.lower() for row in rows for value in row.values() if value]
    assert not [value for value in cells if value in ("inf", "-inf", "nan", "infinity")]


def test_extreme_values_draw_on_the_compare_page(client, edges):
    response = client.get("/compare/", QUERY)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Infinity" not in page and "NaN" not in page
    assert "1e+18" in page or "1,000,000,000,000,000,000" in page or "1e18" in page


def test_a_geometric_mean_over_zero_seconds_answers(anonymous_api, bob):
    # sql-bench with an operation that took 0 s on one side: no ratio of it.
    for filesystem, seconds in (
        ("ufs", {"insert": 0.0, "select": 2.0}),
        ("zfs", {"insert": 1.0, "select": TINY}),
    ):
        for _ in range(2):
            document = sql_bench_document(seconds, filesystem)
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    response = anonymous_api.get(
        URL,
        {
            "benchmark": "sql-bench",
            "metric": "seconds",
            "x": "param.operation",
            "series": "filesystem",
            "reference": "ufs",
        },
    )

    assert response.status_code == 200, response.content[:500]
    body = json.loads(response.content, parse_constant=lambda name: pytest.fail(name))
    _finite_everywhere(body)
    (row,) = body["summary"]
    # insert has no ratio (0 s on the reference), select's underflows to 0:
    # no geometric mean to judge; the totals (1 + 5e-324 against 2) stand.
    assert row["geometric_mean"]["verdict"]["verdict"] == "insufficient data"
    assert row["totals"]["value"] == pytest.approx(1.0)
    assert row["totals"]["ratio"] == pytest.approx(0.5)


def test_a_bootstrap_whose_resamples_reach_infinity_has_no_bound_there():
    # Two runs a side: the bootstrap. The reference's median is 1, but a
    # resample of its samples can have the median 5e-324, and 1e18 / 5e-324
    # is beyond a double: that bound is None, not inf, and the rest stands.
    candidate = [RunValues(HUGE, (HUGE, HUGE * 0.9, HUGE)), RunValues(HUGE, (HUGE,) * 3)]
    reference = [RunValues(1.0, (1.0, TINY, TINY)), RunValues(1.0, (1.0, 1.0, TINY))]

    judged = verdict(candidate, reference, direction="higher")

    assert judged.test == "bootstrap"
    assert judged.ratio == HUGE
    assert judged.ratio_high is None
    assert judged.ratio_low is not None and math.isfinite(judged.ratio_low)
    # On the ratio's own (log) scale the reference's samples span 744 powers
    # of e (1 and 5e-324) and the candidate sits 41 above 1: Welch's t test
    # of the logs, which bounds the bootstrap's p, says 0.056. No winner.
    assert judged.p_value == pytest.approx(0.0555, abs=5e-4)
    assert judged.verdict == "inconclusive"
