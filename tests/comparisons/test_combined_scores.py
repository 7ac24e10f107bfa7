"""Combined scores of a multi-operation benchmark: seed 002's TOTALS over
the operations both sides ran (the others named) and the geometric mean of
ratios, as a summary row per series with its own verdict."""

from __future__ import annotations

import csv
import io

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sql_bench_document, sweep_document

URL = "/api/v1/comparisons/"
QUERY = {
    "benchmark": "sql-bench",
    "metric": "seconds",
    "x": "param.operation",
    "series": "filesystem",
    "reference": "ufs",
}


def sql_bench(user, filesystem: str, seconds: dict[str, float]) -> None:
    document = sql_bench_document(seconds, filesystem)
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


UFS = {"insert": 10.0, "select": 20.0, "update": 4.0, "delete": 2.0, "alter_table": 5.0}
# ZFS is slower on every operation, by different factors, and never ran alter_table.
ZFS_FACTORS = {"insert": 1.5, "select": 1.2, "update": 1.3, "delete": 1.1}


@pytest.fixture
def ufs_and_zfs(bob):
    # Four runs a side, each with the article's own TOTALS row as well.
    for jitter in (0.0, 0.1, -0.1, 0.05):
        sql_bench(bob, "UFS2", {op: v + jitter for op, v in UFS.items()} | {"TOTALS": 41})
        zfs = {op: UFS[op] * factor + jitter for op, factor in ZFS_FACTORS.items()}
        sql_bench(bob, "zfs", zfs | {"TOTALS": 50})
    # A fifth ZFS run that stopped before select: no comparable total of its own.
    sql_bench(bob, "zfs", {"insert": 15.0, "update": 5.2, "delete": 2.2})


def test_totals_sum_the_common_operations_and_name_the_missing_ones(anonymous_api, ufs_and_zfs):
    body = anonymous_api.get(URL, QUERY).json()

    (row,) = body["summary"]
    assert (row["label"], row["operations"], row["missing"], row["extra"]) == (
        "zfs",
        4,
        ["alter_table"],
        [],
    )
    totals = row["totals"]
    # Sums of the medians over the four common operations (insert, update and
    # delete with the fifth run's values); TOTALS not added again.
    assert totals["value"] == pytest.approx(15.0 + 24.025 + 5.2 + 2.2)
    assert totals["reference"] == pytest.approx(36.1)
    assert totals["verdict"]["verdict"] == "worse"  # lower is better
    # Run totals, 4 against 4 and fully apart (the partial run has none).
    assert totals["verdict"]["test"] == "mann-whitney-u"
    assert totals["verdict"]["p_value"] == pytest.approx(2 / 70)


def test_the_geometric_mean_of_ratios_has_its_own_verdict(anonymous_api, ufs_and_zfs):
    body = anonymous_api.get(URL, QUERY).json()

    mean = body["summary"][0]["geometric_mean"]
    points = {
        series["label"]: {p["x"]: p["value"] for p in series["points"]} for series in body["series"]
    }
    product = 1.0
    for op in ZFS_FACTORS:
        product *= points["zfs"][op] / points["ufs"][op]
    assert mean["ratio"] == pytest.approx(product**0.25, rel=1e-9)
    # Four operations, all slower: 2 of the 16 sign patterns are as far from
    # a ratio of 1, p = 0.125 at best. Operations are the units here, and
    # four cannot make a difference at 5 %, nor bound a 95 % interval: no
    # test can tell.
    assert mean["verdict"]["test"] is None
    assert mean["verdict"]["p_value"] is None
    assert mean["verdict"]["verdict"] == "insufficient data"
    assert (mean["ratio_low"], mean["ratio_high"]) == (None, None)


def test_the_summary_is_in_the_csv_and_on_the_page(anonymous_api, client, ufs_and_zfs):
    response = anonymous_api.get(URL, {**QUERY, "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    summary = [r for r in rows if r["x"].startswith("(")]
    assert [(r["series"], r["x"], r["verdict"]) for r in summary] == [
        ("zfs", "(TOTALS over common operations)", "worse"),
        ("zfs", "(geometric mean of ratios)", "insufficient data"),
    ]
    assert int(summary[0]["n"]) == 4

    page = client.get("/compare/", QUERY).content.decode()
    assert 'id="comparison-summary"' in page
    assert "alter_table" in page
    assert ">TOTALS (s)</th>" in page


def test_a_numeric_sweep_has_no_combined_score(anonymous_api, bob):
    for value in (100.0, 110.0):
        submission_create(
            submitter=bob,
            document=sweep_document({1: value, 2: value}, storage={"filesystem": "xfs"}),
            status=Submission.Status.APPROVED,
        )
        submission_create(
            submitter=bob,
            document=sweep_document({1: value, 2: value}),
            status=Submission.Status.APPROVED,
        )

    body = anonymous_api.get(
        URL,
        {
            "benchmark": "select-update",
            "metric": "throughput",
            "x": "param.clients",
            "series": "filesystem",
        },
    ).json()

    assert body["summary"] == []


def test_each_series_totals_are_judged_against_the_reference_over_its_own_operations(
    anonymous_api, bob
):
    """ext2 never ran alter_table, xfs ran everything exactly as ufs: xfs's
    total is the reference's over all five operations, not over ext2's four."""
    for jitter in (0.0, 0.1, -0.1, 0.05):
        runs = {op: v + jitter for op, v in UFS.items()}
        sql_bench(bob, "UFS2", runs)
        sql_bench(bob, "xfs", runs)
        sql_bench(bob, "ext2", {op: UFS[op] * 1.5 + jitter for op in ZFS_FACTORS})

    summary = {row["label"]: row for row in anonymous_api.get(URL, QUERY).json()["summary"]}

    assert list(summary) == ["ext2", "xfs"]  # ext2's four operations judged first
    assert summary["ext2"]["operations"] == 4
    assert summary["ext2"]["totals"]["verdict"]["verdict"] == "worse"
    assert summary["xfs"]["operations"] == 5
    assert summary["xfs"]["totals"]["reference"] == pytest.approx(41 + 5 * 0.025)  # medians
    assert summary["xfs"]["totals"]["verdict"]["verdict"] == "equivalent"
    assert summary["xfs"]["totals"]["verdict"]["p_value"] == 1.0


def test_one_run_a_side_has_a_geometric_mean_but_no_winner(anonymous_api, bob):
    """Every operation slower on ZFS, but one run a side: the cells and the
    totals say insufficient data, and so does the geometric mean, whose
    bootstrap over operations knows nothing of how a second run would differ."""
    sql_bench(bob, "UFS2", UFS)
    sql_bench(bob, "zfs", {op: UFS[op] * factor for op, factor in ZFS_FACTORS.items()})

    (row,) = anonymous_api.get(URL, QUERY).json()["summary"]

    mean = row["geometric_mean"]
    assert mean["ratio"] == pytest.approx((1.5 * 1.2 * 1.3 * 1.1) ** 0.25)
    assert mean["verdict"]["verdict"] == "insufficient data"
    assert (mean["ratio_low"], mean["verdict"]["p_value"]) == (None, None)
    assert row["totals"]["verdict"]["verdict"] == "insufficient data"


def test_one_run_a_side_is_not_tested_only_to_be_called_insufficient(
    anonymous_api, bob, monkeypatch
):
    """The test over operations costs 1-3 ms a series, and its answer would
    be replaced by insufficient data: it does not run."""
    from benchhub.comparisons import scores

    def tested(*args, **kwargs):
        raise AssertionError("geometric_mean_verdict ran for a single run a side")

    monkeypatch.setattr(scores, "geometric_mean_verdict", tested)
    sql_bench(bob, "UFS2", UFS)
    sql_bench(bob, "zfs", {op: UFS[op] * factor for op, factor in ZFS_FACTORS.items()})

    (row,) = anonymous_api.get(URL, QUERY).json()["summary"]

    assert row["geometric_mean"]["ratio"] == pytest.approx((1.5 * 1.2 * 1.3 * 1.1) ** 0.25)
    assert row["geometric_mean"]["verdict"]["verdict"] == "insufficient data"


def test_no_summary_where_no_series_shares_two_operations_with_the_reference(
    anonymous_api, client, bob
):
    """Seed 003's raw device is a series of its own, alone at x = raw: the
    summary was a row of dashes per series, "0 common", "insufficient data"."""
    sql_bench(bob, "UFS2", {"insert": 10.0, "delete": 2.0})
    sql_bench(bob, "zfs", {"insert": 12.0, "select": 20.0})
    sql_bench(bob, "xfs", {"select": 21.0, "update": 4.0})

    assert anonymous_api.get(URL, QUERY).json()["summary"] == []
    assert 'id="comparison-summary"' not in client.get("/compare/", QUERY).content.decode()
