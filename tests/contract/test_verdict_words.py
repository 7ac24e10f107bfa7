"""Each verdict word at its thresholds, from both sides.

Four runs a side, no ties: the exact U test, whose 95 % interval of the
ratio is then the least and the greatest ratio of a run of each side
(min(x) / max(y) to max(x) / min(y); k = 1, since P(U = 0) = 1/70 is under
2.5 % and P(U <= 1) = 2/70 is not). Its p is 2/70 = 0.029 when the sides do
not overlap and 4/70 = 0.057 when one pair does. So a bound and a p can be
placed exactly, one value moved a hair across.
"""

from __future__ import annotations

import pytest
from benchhub_contract.verdicts import (
    DEFAULT_MINIMUM_EFFECT,
    RunValues,
    geometric_mean_verdict,
    values_verdict,
    verdict,
)

M = DEFAULT_MINIMUM_EFFECT  # 5 %
HAIR = 1e-6
REFERENCE = [97.0, 99.5, 100.0, 102.0]


def judged(candidate: list[float], reference: list[float] = REFERENCE, direction: str = "higher"):
    return values_verdict(candidate, reference, direction=direction)


# --- equivalent: the interval wholly inside (1 - m, 1 + m) -----------------------------


@pytest.mark.parametrize(("factor", "word"), [(1 - HAIR, "equivalent"), (1 + HAIR, "inconclusive")])
def test_equivalent_ends_where_the_upper_bound_reaches_one_plus_the_minimum_effect(factor, word):
    top = 97.0 * (1 + M) * factor  # max(x) / min(y) is the upper bound
    result = judged([98.0, 100.3, 101.1, top])
    assert result.ratio_high == pytest.approx((1 + M) * factor, rel=1e-12)
    assert result.ratio_low == pytest.approx(98.0 / 102.0, rel=1e-12)  # well inside
    assert result.p_value > 0.05
    assert result.verdict == word


@pytest.mark.parametrize(("factor", "word"), [(1 + HAIR, "equivalent"), (1 - HAIR, "inconclusive")])
def test_equivalent_ends_where_the_lower_bound_reaches_one_less_the_minimum_effect(factor, word):
    bottom = 102.0 * (1 - M) * factor  # min(x) / max(y) is the lower bound
    result = judged([bottom, 100.3, 101.1, 101.2])
    assert result.ratio_low == pytest.approx((1 - M) * factor, rel=1e-12)
    assert result.ratio_high == pytest.approx(101.2 / 97.0, rel=1e-12)
    assert result.verdict == word


def test_a_larger_minimum_effect_turns_the_same_interval_equivalent():
    result = values_verdict(
        [90.0, 99.0, 104.0, 111.0], REFERENCE, direction="higher", minimum_effect=0.15
    )
    assert (result.ratio_low, result.ratio_high) == pytest.approx((90 / 102, 111 / 97))
    assert result.verdict == "equivalent"
    assert judged([90.0, 99.0, 104.0, 111.0]).verdict == "inconclusive"


# --- better / worse: significant and at least the minimum effect ----------------------


def test_better_needs_the_sides_apart_one_overlapping_pair_is_not_significant():
    apart = judged([110.0, 115.0, 118.0, 125.0], [100.0, 104.0, 106.0, 109.0])
    assert apart.p_value == pytest.approx(2 / 70)
    assert apart.verdict == "better"
    # the reference's top run now just above the candidate's lowest: U = 1
    overlapping = judged([110.0, 115.0, 118.0, 125.0], [100.0, 104.0, 106.0, 110.5])
    assert overlapping.p_value == pytest.approx(4 / 70)
    assert overlapping.ratio == apart.ratio == pytest.approx(116.5 / 105.0)
    assert overlapping.ratio_low < 1 < overlapping.ratio_high
    assert overlapping.verdict == "inconclusive"


@pytest.mark.parametrize(("factor", "word"), [(1 + HAIR, "better"), (1 - HAIR, "inconclusive")])
def test_better_needs_the_ratio_at_least_the_minimum_effect_from_one(factor, word):
    """Significant either way (the sides apart), 5 % apart or a hair less:
    below 5 %, with an interval reaching past 1.05, it is not better, and not
    equivalent either."""
    reference = [100.0, 100.4, 100.9, 101.3]
    candidate = [v * (1 + M) * factor for v in reference]
    result = judged(candidate, reference)
    assert result.p_value == pytest.approx(2 / 70)
    assert result.ratio == pytest.approx((1 + M) * factor, rel=1e-12)
    assert result.ratio_high > 1 + M
    assert result.verdict == word


@pytest.mark.parametrize(
    ("direction", "faster", "slower"),
    [("higher", "better", "worse"), ("lower", "worse", "better"), ("", "higher", "lower")],
)
def test_the_direction_names_a_difference(direction, faster, slower):
    high, low = [110.0, 115.0, 118.0, 125.0], [100.0, 104.0, 106.0, 109.0]
    assert judged(high, low, direction).verdict == faster
    assert judged(low, high, direction).verdict == slower


def test_a_metric_without_a_direction_is_equivalent_or_inconclusive_as_any_other():
    assert judged([98.0, 100.3, 101.1, 101.2], direction="").verdict == "equivalent"
    assert judged([90.0, 99.0, 104.0, 111.0], direction="").verdict == "inconclusive"


# --- insufficient data: no test can tell --------------------------------------------


def test_two_runs_against_seven_are_insufficient_and_against_eight_are_judged():
    """The smallest p two runs against n can reach is 2 / C(n + 2, 2): 0.056
    against 7, no test at 5 %; 0.044 against 8."""
    two = [150.0, 161.0]
    seven = [100.0, 101.5, 99.0, 103.0, 98.5, 100.7, 102.2]
    against_seven = judged(two, seven)
    assert against_seven.verdict == "insufficient data"
    assert (against_seven.test, against_seven.p_value) == (None, None)
    against_eight = judged(two, [*seven, 97.3])
    assert against_eight.p_value == pytest.approx(2 / 45)
    assert against_eight.verdict == "better"


def test_one_unrepeated_value_is_insufficient_and_one_repeated_run_is_judged():
    reference = [RunValues(100.0, (98.0, 100.0, 103.0, 99.5))]
    single = verdict([RunValues(160.0)], reference, direction="higher")
    assert single.verdict == "insufficient data"
    repeated = verdict([RunValues(160.0, (158.0, 160.0, 163.5))], reference, direction="higher")
    assert repeated.verdict == "better"


def test_five_operations_are_insufficient_and_six_are_judged():
    """A combined score: 2 / 2^5 = 0.0625 is the least p of five operations."""
    ratios = [1.21, 1.3, 1.18, 1.25, 1.4, 1.22]
    assert geometric_mean_verdict(ratios[:5], direction="lower").verdict == "insufficient data"
    six = geometric_mean_verdict(ratios, direction="lower")
    assert (six.p_value, six.verdict) == (2 / 64, "worse")


def test_a_combined_score_is_equivalent_only_inside_the_bounds():
    inside = geometric_mean_verdict([1.01, 0.99, 1.03, 0.98, 1.02, 1.04], direction="higher")
    assert 0.95 < inside.ratio_low < inside.ratio_high < 1.05
    assert inside.verdict == "equivalent"
    past = geometric_mean_verdict([1.01, 0.99, 1.03, 0.98, 1.02, 1.09], direction="higher")
    assert past.ratio_high > 1.05
    assert past.verdict == "inconclusive"
