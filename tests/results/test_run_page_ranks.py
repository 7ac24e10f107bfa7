"""Where a run stands among comparable runs, on its page: the headline's
percentile and n, each measurement's rank, and when it is not ranked
(alone, fewer than RANK_MIN_RESULTS, all results equal)."""

from __future__ import annotations

import re

import pytest

from benchhub.baselines.services import baselines_refresh
from benchhub.results.models import Submission
from tests.factories import small_document
from tests.results.run_pages import run_of, store


def headline_of(page: str) -> str:
    """The paragraph that says where the run stands."""
    headline = page[page.index('id="headline-standing"') :]
    return headline[: headline.index("</p>")]


def with_throughput_at_20(value: float, **environment) -> dict:
    document = small_document(**environment)
    document["runs"][0]["measurements"][1]["value"] = value
    document["runs"][0]["measurements"][1]["samples"] = [value * 0.7, value, value * 1.3]
    return document


@pytest.fixture
def ranked_run(bob):
    """Five approved runs of one key (1000…1400 tx/s at clients=20) with
    baselines computed, and the one at 1300 to look at."""
    runs = [run_of(store(bob, with_throughput_at_20(v))) for v in (1200, 1000, 1400, 1300, 1100)]
    baselines_refresh()
    return runs[3]


def test_the_run_page_says_where_the_run_stands_among_comparable_runs(client, ranked_run, settings):
    settings.RANK_MIN_RESULTS = 1  # the arithmetic of a rank, among few
    page = client.get(f"/runs/{ranked_run.pk}/").content.decode()

    headline = headline_of(page)
    # 1300 does better than 1000, 1100 and 1200 of the 4 others (its own
    # value, in the baseline, is not a tie it half beats: not 70 %)
    assert "throughput at clients=20: 1300 tx/s" in headline
    assert '<strong id="headline-percentile">75%</strong>' in headline
    assert "the <strong>4</strong> other comparable approved results" in headline
    assert "of all n=5, this one included" in headline
    table = page[page.index('id="measurements"') :]
    assert "75% of 4 others" in table
    assert 'class="distribution"' in page


def test_the_baseline_figures_show_the_digits_the_baseline_holds(client, bob, settings):
    """The baseline counts values at 4 significant digits: its median of
    2650.1 and 2651.2 is 2650.5, the mean of buckets 2650 and 2651, where
    /compare/ says 2650.65. The page showed "2650.5" (and "2650.500" to a
    screen reader): digits it does not hold. It says "≈2650" instead."""
    settings.RANK_MIN_RESULTS = 1  # the arithmetic of a rank, among few
    runs = [run_of(store(bob, with_throughput_at_20(v))) for v in (2600, 2650.1, 2651.2, 2700)]
    baselines_refresh()

    page = client.get(f"/runs/{runs[-1].pk}/").content.decode()

    headline = headline_of(page)
    assert "(median ≈2650, middle half ≈2638\u2013≈2663 tx/s" in headline
    assert "from ≈2600 to ≈2700 tx/s, median ≈2650;" in page
    assert "≈: the comparable results are counted at 4 significant digits" in page
    assert "2650.5" not in page


def test_a_point_spelt_as_a_float_is_ranked_among_the_same_point(client, bob, settings):
    settings.RANK_MIN_RESULTS = 1  # the arithmetic of a rank, among few
    # the baselines pool clients=20 and clients=20.0 as one point; the page must find it
    others = [with_throughput_at_20(v) for v in (1200, 1000, 1400, 1100)]
    for document in others:
        store(bob, document)
    spelt_as_float = with_throughput_at_20(1300)
    spelt_as_float["runs"][0]["measurements"][1]["parameters"] = {"clients": 20.0}
    run = run_of(store(bob, spelt_as_float))
    baselines_refresh()

    page = client.get(f"/runs/{run.pk}/").content.decode()

    assert '<strong id="headline-percentile">75%</strong>' in page
    assert "n=5" in page


def test_a_run_alone_in_its_key_is_not_ranked(client, bob):
    run = run_of(store(bob, small_document()))
    baselines_refresh()

    page = client.get(f"/runs/{run.pk}/").content.decode()

    assert "nothing to rank it against" in page
    assert "headline-percentile" not in page


def test_a_pending_run_is_ranked_against_the_one_approved_result_of_its_key(client, bob):
    """Its own values are not in the baselines: the one approved result
    there is another's (an approved run alone, counted, is not ranked)."""
    approved = run_of(store(bob, with_throughput_at_20(1000)))
    pending = run_of(store(bob, with_throughput_at_20(1300), status=Submission.Status.PENDING))
    baselines_refresh()
    client.force_login(bob)

    page = client.get(f"/runs/{pending.pk}/").content.decode()
    headline = headline_of(page)
    assert "n=1" in headline
    assert "nothing to rank it against" not in page
    # its rows too: ranked against that one, none of them "the only one"
    assert "the only one" not in page[page.index('id="measurements"') :]

    alone = client.get(f"/runs/{approved.pk}/").content.decode()
    assert "nothing to rank it against" in alone


def standing_cell(page: str, metric: str, point: str) -> str:
    """The "Among comparable runs" cell of one measurement row."""
    table = page[page.index('id="measurements"') :]
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        if f'<th scope="row">{metric}</th>' in row and f"<td>{point}</td>" in row:
            return re.findall(r"<td>(.*?)</td>", row, re.S)[-2]
    raise AssertionError(f"no row {metric} {point}")


def test_a_run_is_ranked_among_ten_others_and_not_among_nine(client, bob):
    """RANK_MIN_RESULTS (10 by default): with 9 other results the page names
    n and no percentile; a tenth and it ranks, with n beside it."""
    values = [1000.0, 1210.5, 1000.0, 1333.0, 1800.0, 1100.0, 1055.0, 990.0, 1402.0]
    for value in values:
        store(bob, with_throughput_at_20(value))
    run = run_of(store(bob, with_throughput_at_20(1250.0)))
    baselines_refresh()

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "headline-percentile" not in page
    assert "Not ranked: 9 comparable results, fewer than 10" in headline_of(page)
    cell = standing_cell(page, "throughput", "clients=20")
    assert "not ranked: 9 comparable results, fewer than 10" in cell and "%" not in cell

    store(bob, with_throughput_at_20(1275.0))
    baselines_refresh()
    page = client.get(f"/runs/{run.pk}/").content.decode()
    # 1250 beats 990, 1000, 1000, 1055, 1100, 1210.5 of the 10 others: 60 %
    assert '<strong id="headline-percentile">60%</strong>' in headline_of(page)
    assert "the <strong>10</strong> other comparable approved results" in headline_of(page)
    assert standing_cell(page, "throughput", "clients=20").startswith("60% of 10 others")


def test_a_metric_whose_results_are_all_equal_is_not_ranked(client, bob, anonymous_api):
    """count_distinct = 0 s in every sql-bench run: "better than 69 %" of
    results that do not differ says nothing. The rest of the run, which
    differs, is still ranked."""
    runs = []
    for index in range(12):
        document = with_throughput_at_20(1000.0 + 37.5 * index)
        document["runs"][0]["measurements"][0]["value"] = 0.0  # clients=1: all zero
        runs.append(run_of(store(bob, document)))
    baselines_refresh()

    page = client.get(f"/runs/{runs[5].pk}/").content.decode()
    assert standing_cell(page, "throughput", "clients=1") == (
        '<span class="muted unranked">not ranked: all 12 comparable results are equal (0)</span>'
    )
    assert standing_cell(page, "throughput", "clients=20").startswith("45% of 11 others")
    rank = anonymous_api.get(
        "/api/v1/baselines/rank/",
        {
            "fingerprint": runs[0].fingerprint,
            "metric": "throughput",
            "value": 0,
            "param.clients": 1,
        },
    ).json()
    assert (rank["n"], rank["percentile"]) == (12, None)
    assert rank["unranked"] == "not ranked: all 12 comparable results are equal (0)"
