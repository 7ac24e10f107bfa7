"""Verdicts: is a cell's difference from the reference real? The pure
function against known values, then as the API and the CSV carry it."""

from __future__ import annotations

import csv
import io
import math
import random

import pytest
from benchhub_contract.inference import (
    mann_whitney_u,
)
from benchhub_contract.verdicts import (
    BOOTSTRAP,
    MANN_WHITNEY,
    RunValues,
    values_verdict,
    verdict,
)

from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

URL = "/api/v1/comparisons/"
BY_FILESYSTEM = {
    "benchmark": "select-update",
    "metric": "throughput",
    "x": "param.clients",
    "series": "filesystem",
    "reference": "ext4",
}


def runs(*values: float) -> list[RunValues]:
    return [RunValues(v) for v in values]


# --- Mann-Whitney U against published values -----------------------------------


def test_u_test_exact_for_two_separated_samples_of_four():
    # All 4 x below all 4 y: U = 0, P = 2 / C(8, 4) = 2/70.
    result = mann_whitney_u([1, 2, 3, 4], [5, 6, 7, 8])
    assert (result.u, result.exact) == (0, True)
    assert result.p_value == pytest.approx(2 / 70)


def test_u_test_matches_r_wilcox_test_documentation_example():
    # R's ?wilcox.test (Hollander & Wolfe): W = 35, two-sided exact p = 0.2544.
    x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
    y = [1.15, 0.88, 0.90, 0.74, 1.21]
    result = mann_whitney_u(x, y)
    assert (result.u, result.exact) == (35, True)
    assert result.p_value == pytest.approx(0.2544122544122544)


def test_u_test_normal_approximation_with_ties_matches_scipy():
    # scipy.stats.mannwhitneyu([1,2,2,3,4,5], [3,4,5,5,6,7,8]) → U 5, p 0.025359042166350515
    result = mann_whitney_u([1, 2, 2, 3, 4, 5], [3, 4, 5, 5, 6, 7, 8])
    assert (result.u, result.exact) == (5, False)
    assert result.p_value == pytest.approx(0.025359042166350515, rel=1e-12)


def test_u_test_large_samples_without_ties_use_the_normal_approximation():
    # scipy: mannwhitneyu(range(20), [v + 5.5 for v in range(20)]) → U 105, p 0.0105812114431656
    result = mann_whitney_u(list(range(20)), [v + 5.5 for v in range(20)])
    assert (result.u, result.exact) == (105, False)
    assert result.p_value == pytest.approx(0.010581211443165648, rel=1e-12)


# --- verdicts ----------------------------------------------------------------------


def test_four_runs_a_side_clearly_apart_are_better_for_a_higher_is_better_metric():
    result = verdict(runs(120, 125, 118, 122), runs(100, 101, 99, 102), direction="higher")

    assert (result.verdict, result.test) == ("better", MANN_WHITNEY)
    assert result.p_value == pytest.approx(2 / 70)
    assert result.ratio == pytest.approx(121 / 100.5)
    assert result.ratio_low < result.ratio < result.ratio_high


def test_the_same_difference_is_worse_when_lower_is_better_and_higher_without_direction():
    faster, slower = runs(120, 125, 118, 122), runs(100, 101, 99, 102)
    assert verdict(faster, slower, direction="lower").verdict == "worse"
    assert verdict(faster, slower, direction="none").verdict == "higher"
    assert verdict(slower, faster, direction="none").verdict == "lower"


def test_a_significant_difference_smaller_than_the_minimum_effect_is_equivalent():
    # 3 % apart and perfectly separated: significant, but under 5 %, and its
    # interval (103 / 100.3 to 103.3 / 100) inside 0.95-1.05.
    result = verdict(
        runs(103, 103.1, 103.2, 103.3), runs(100, 100.1, 100.2, 100.3), direction="higher"
    )
    assert result.p_value < 0.05
    assert 0.95 < result.ratio_low < result.ratio_high < 1.05
    assert result.verdict == "equivalent"
    assert (
        verdict(
            runs(103, 103.1, 103.2, 103.3),
            runs(100, 100.1, 100.2, 100.3),
            direction="higher",
            minimum_effect=0.02,
        ).verdict
        == "better"
    )


def test_overlapping_runs_are_inconclusive_whatever_their_medians():
    result = verdict(runs(90, 130, 100, 125), runs(95, 120, 105, 98), direction="higher")
    assert result.verdict == "inconclusive"
    assert result.p_value > 0.05
    assert result.ratio_low < 0.95 and result.ratio_high > 1.05  # it allows either


def test_a_single_unrepeated_value_is_never_a_winner():
    result = verdict(runs(1000), runs(1, 2, 1, 2, 1), direction="higher")
    assert result.verdict == "insufficient data"
    assert (result.test, result.p_value) == (None, None)
    assert verdict(runs(1, 2, 1, 2), runs(1000), direction="higher").verdict == "insufficient data"


def test_two_unrepeated_runs_a_side_are_no_winner_however_far_apart():
    """Their bootstrap resampled the runs' own values, two a side: every
    resample on one side of 1, "better" at p = 0.0005. The exact U test on
    the four values cannot go below 1/3: no test can tell, which is
    insufficient data (it said "within noise", as if it had looked), the
    ratio still given."""
    result = values_verdict([200.0, 210.0], [100.0, 101.0], direction="higher")

    assert (result.verdict, result.test, result.p_value) == ("insufficient data", None, None)
    assert result.ratio == pytest.approx(205 / 100.5)
    assert verdict(runs(200, 210), runs(100, 101), direction="higher") == result


@pytest.mark.parametrize(
    ("m", "n", "judged"),
    [(2, 7, False), (2, 8, True), (3, 4, False), (3, 5, True), (4, 4, True)],
)
def test_unrepeated_runs_are_judged_from_the_first_counts_a_u_test_can_tell(m, n, judged):
    """The smallest two-sided p of the exact U test is 2 / C(m + n, m):
    2/36 = 0.056 for 2 against 7, 2/45 = 0.044 for 2 against 8, 2/35 for
    3 against 4, 2/56 for 3 against 5, 2/70 for 4 against 4."""
    far_apart = values_verdict(
        [100.0 * (i + 1) for i in range(m)], [10_000.0 + i for i in range(n)], direction="higher"
    )
    assert far_apart.ratio < 0.05
    if judged:
        assert (far_apart.verdict, far_apart.test) == ("worse", MANN_WHITNEY)
        assert far_apart.p_value == pytest.approx(2 / math.comb(m + n, m))
    else:
        assert (far_apart.verdict, far_apart.test) == ("insufficient data", None)


def test_few_runs_with_repetitions_are_judged_by_a_seeded_bootstrap():
    candidate = [RunValues(110, (109, 111, 110, 112, 108))]
    reference = [RunValues(100, (99, 101, 100, 100.5, 98)), RunValues(101, (100, 102, 101))]

    first = verdict(candidate, reference, direction="higher")
    again = verdict(candidate, reference, direction="higher")

    assert (first.verdict, first.test) == ("better", BOOTSTRAP)
    assert first == again  # deterministic
    assert first.ratio_low > 1.05
    assert 0 < first.p_value < 0.01


def test_one_run_of_three_repetitions_a_side_far_apart_is_a_winner():
    """The agent's default (--repeat 3) against one published run: far apart
    and tight, a difference whatever test bounds the bootstrap."""
    candidate = [RunValues(201.0, (200.0, 203.0, 201.0))]
    reference = [RunValues(100.0, (101.0, 100.0, 99.5))]

    result = verdict(candidate, reference, direction="higher")

    assert (result.verdict, result.test) == ("better", BOOTSTRAP)
    assert result.p_value < 0.01
    assert result.ratio == pytest.approx(2.01)
    assert 1.9 < result.ratio_low < result.ratio < result.ratio_high < 2.1


@pytest.mark.slow
def test_the_bootstrap_of_few_repetitions_keeps_its_false_alarms_below_alpha():
    """No difference at all (every sample from one normal distribution), one
    or two runs of 3-5 repetitions a side: p < 0.05 at most 5 % of the time.
    The bootstrap's own p alone said so 16 % of the time for 3 against 3."""
    rng = random.Random(11)

    def run(repetitions: int) -> RunValues:
        samples = tuple(rng.gauss(100, 3) for _ in range(repetitions))
        return RunValues(sorted(samples)[repetitions // 2], samples)

    for runs_a_side, repetitions in ((1, 3), (1, 4), (2, 3)):
        trials = 300
        alarms = 0
        for _ in range(trials):
            candidate = [run(repetitions) for _ in range(runs_a_side)]
            reference = [run(repetitions) for _ in range(runs_a_side)]
            result = verdict(candidate, reference, direction="higher", minimum_effect=0.0)
            assert result.test == BOOTSTRAP
            alarms += result.p_value < 0.05
        assert alarms / trials <= 0.05, (runs_a_side, repetitions, alarms)


def test_a_bootstrap_of_overlapping_repetitions_is_inconclusive():
    candidate = [RunValues(104, (90, 120, 104))]
    reference = [RunValues(100, (85, 115, 100, 110))]
    result = verdict(candidate, reference, direction="higher")
    assert (result.verdict, result.test) == ("inconclusive", BOOTSTRAP)
    assert result.ratio_low < 1 < result.ratio_high


def test_runs_given_as_values_are_judged_as_runs_without_repetitions():
    """values_verdict (what a comparison calls for runs without samples) is
    verdict of RunValues(value) each: every path, in run order (a bootstrap
    resamples the runs as listed), with ties, zeros, negatives and sides of
    0 to 9 runs."""
    rng = random.Random(7)
    pools = ([1.0, 2.0, 2.0, 3.0], [0.0, 0.0, 1.0], [-2.0, -1.0, 5.0, 7.5], [9.5, 10.0, 10.5, 30.0])
    seen = set()
    for _ in range(400):
        sizes = rng.randrange(10), rng.randrange(10)
        candidate, reference = (
            [rng.choice(pool) * rng.choice((1, 1.02, 1.3)) for _ in range(size)]
            for pool, size in zip(rng.sample(pools, 2), sizes, strict=True)
        )
        for direction in ("higher", "lower", ""):
            expected = verdict(runs(*candidate), runs(*reference), direction=direction)
            got = values_verdict(candidate, reference, direction=direction)
            assert got == expected, (candidate, reference, direction)
            seen.add((expected.test, expected.verdict))
    # every path was taken: insufficient and the U test (runs without
    # repetitions are never bootstrapped), and their verdicts
    assert {test for test, _ in seen} == {None, MANN_WHITNEY}
    assert {name for _, name in seen} >= {"better", "worse", "inconclusive", "insufficient data"}


# --- in the API --------------------------------------------------------------------


def store(user, document) -> None:
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


def test_each_cell_carries_its_verdict_against_the_reference(anonymous_api, bob):
    # Skewed, non-canonical: one xfs run far off, clients sent as text once.
    for value in (100.0, 102.0, 98.0, 101.0, 99.0):
        store(bob, sweep_document({1: value, 8: value * 4}, storage={"filesystem": "EXT4"}))
    for value in (130.0, 128.0, 135.0, 131.0, 400.0):
        store(bob, sweep_document({1: value, "8": value * 4 * 0.99}, storage={"filesystem": "xfs"}))

    body = anonymous_api.get(URL, BY_FILESYSTEM).json()

    ext4, xfs = body["series"]
    assert ext4["label"] == "ext4" and all(p["verdict"] is None for p in ext4["points"])
    at_1, at_8 = xfs["points"]
    assert at_1["verdict"]["verdict"] == "better"
    assert at_1["verdict"]["test"] == "mann-whitney-u"
    assert at_1["verdict"]["ratio"] == pytest.approx(131 / 100)
    assert at_1["verdict"]["minimum_effect"] == 0.05
    assert at_8["verdict"]["verdict"] == "better"


def test_without_a_reference_the_first_series_is_the_one_judged_against(anonymous_api, bob):
    for value in (100.0, 102.0, 98.0, 101.0):
        store(bob, sweep_document({1: value}, storage={"filesystem": "ext4"}))
        store(bob, sweep_document({1: value * 0.5}, storage={"filesystem": "xfs"}))

    query = {key: v for key, v in BY_FILESYSTEM.items() if key != "reference"}
    body = anonymous_api.get(URL, query).json()

    assert [s["label"] for s in body["series"]] == ["ext4", "xfs"]
    assert body["series"][1]["points"][0]["verdict"]["verdict"] == "worse"


def test_minimum_effect_is_a_percentage_and_a_bad_one_is_named(anonymous_api, bob):
    for value in (100.0, 100.5, 99.5, 100.2):
        store(bob, sweep_document({1: value}, storage={"filesystem": "ext4"}))
        store(bob, sweep_document({1: value * 1.03}, storage={"filesystem": "xfs"}))

    default = anonymous_api.get(URL, BY_FILESYSTEM).json()
    two_percent = anonymous_api.get(URL, {**BY_FILESYSTEM, "minimum_effect": "2"}).json()
    bad = anonymous_api.get(URL, {**BY_FILESYSTEM, "minimum_effect": "lots"})

    assert default["series"][1]["points"][0]["verdict"]["verdict"] == "equivalent"
    assert two_percent["series"][1]["points"][0]["verdict"]["verdict"] == "better"
    assert bad.status_code == 400
    assert bad.json()["error"]["details"][0]["path"] == "$.minimum_effect"


def test_the_csv_carries_the_verdict_test_p_value_and_interval(anonymous_api, bob):
    store(bob, sweep_document({1: 100.0}, storage={"filesystem": "ext4"}))
    store(bob, sweep_document({1: 150.0}, storage={"filesystem": "xfs"}))

    response = anonymous_api.get(URL, {**BY_FILESYSTEM, "format": "csv"})

    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["series"], r["verdict"], r["test"]) for r in rows] == [
        ("ext4", "", ""),
        ("xfs", "insufficient data", ""),
    ]
    assert {"p_value", "ratio", "ratio_low", "ratio_high"} <= set(rows[0])


def test_ratios_carry_no_float_noise_in_json_csv_or_the_page(anonymous_api, bob, client):
    """105.6 / 96 is 1.0999999999999999 in floats: the JSON and the CSV gave
    it so. Every output rounds ratios alike, to 12 significant digits."""
    assert 105.6 / 96.0 == 1.0999999999999999
    for ext4, xfs in ((94.0, 103.4), (96.0, 105.6), (96.0, 105.6), (98.0, 107.8)):
        store(bob, sweep_document({1: ext4}, storage={"filesystem": "ext4"}))
        store(bob, sweep_document({1: xfs}, storage={"filesystem": "xfs"}))

    body = anonymous_api.get(URL, BY_FILESYSTEM).json()
    csv_text = anonymous_api.get(URL, {**BY_FILESYSTEM, "format": "csv"}).content.decode()
    page = client.get("/compare/", BY_FILESYSTEM).content.decode()

    judged = body["series"][1]["points"][0]["verdict"]
    assert (judged["test"], judged["ratio"]) == ("mann-whitney-u", 1.1)
    bounds = (judged["ratio_low"], judged["ratio_high"])
    assert all(bound == float(f"{bound:.12g}") for bound in bounds)
    (xfs,) = [row for row in csv.DictReader(io.StringIO(csv_text)) if row["series"] == "xfs"]
    assert xfs["ratio"] == "1.1"
    assert (float(xfs["ratio_low"]), float(xfs["ratio_high"])) == bounds
    assert "ratio 1.1 (" in page


def test_few_runs_are_judged_from_their_stored_repetitions(anonymous_api, bob):
    """Two runs a side, too few for the U test: their repetitions decide.
    Run values alone (100, 100 against 110, 110) would look 10 % apart
    without any doubt; the repetitions overlap, so it is inconclusive."""
    for filesystem, value, samples in (
        ("ext4", 100.0, [80.0, 100.0, 125.0, 95.0]),
        ("ext4", 100.0, [120.0, 100.0, 78.0]),
        ("xfs", 110.0, [90.0, 110.0, 128.0, 105.0]),
        ("xfs", 110.0, [131.0, 110.0, 85.0]),
    ):
        document = sweep_document({1: value}, storage={"filesystem": filesystem})
        document["runs"][0]["measurements"][0]["samples"] = samples
        store(bob, document)

    body = anonymous_api.get(URL, BY_FILESYSTEM).json()

    judged = body["series"][1]["points"][0]["verdict"]
    assert (judged["verdict"], judged["test"], judged["ratio"]) == (
        "inconclusive",
        "bootstrap",
        1.1,
    )
    assert judged["ratio_low"] < 1 < judged["ratio_high"]


SEED_002_TOTALS = {
    "benchmark": "sql-bench",
    "metric": "seconds",
    "x": "param.operation",
    "series": "filesystem",
    "param.operation": "TOTALS",
}


@pytest.mark.django_db
def test_seed_002_totals_read_inconclusive_with_their_interval_everywhere(anonymous_api, client):
    """The articles' UFS runs against their ZFS runs, five TOTALS against
    four: ratio 1.71 (265.5 / 155), p = 1/9, 95 % interval 0.856-2.63.
    Nothing shows the two as the same."""
    articles_load()

    body = anonymous_api.get(URL, SEED_002_TOTALS).json()
    csv_text = anonymous_api.get(URL, {**SEED_002_TOTALS, "format": "csv"}).content.decode()
    page = client.get("/compare/", SEED_002_TOTALS).content.decode()

    (zfs,) = body["series"][1]["points"]
    assert zfs["verdict"] == {
        "verdict": "inconclusive",
        "test": "mann-whitney-u",
        "p_value": pytest.approx(1 / 9),
        "ratio": 1.71290322581,  # 265.5 / 155
        # the second-smallest and -largest of the 20 ratios of a ZFS run to a
        # UFS run (exact U, 5 against 4: k = 2)
        "ratio_low": 0.856209150327,  # 262 / 306
        "ratio_high": 2.63157894737,  # 400 / 152
        "minimum_effect": 0.05,
    }
    (row,) = [r for r in csv.DictReader(io.StringIO(csv_text)) if r["series"] == "zfs"]
    assert (row["verdict"], row["ratio_low"], row["ratio_high"]) == (
        "inconclusive",
        "0.856209150327",
        "2.63157894737",
    )
    assert "? inconclusive: 0.856\u20132.63 \u00d7</span>" in page
    assert "within noise" not in page + csv_text
