"""The combined score's arithmetic (verdicts.geometric_mean_verdict) against
values worked out independently: the geometric mean of skewed ratios, the
bootstrap over operations replayed from its seed, its percentiles through
statistics.quantiles, and the p-value from the count of resampled means on
the far side of a ratio of 1 (from eleven operations) or from every sign
pattern of the log ratios (up to ten). (tests/comparisons/test_combined_scores.py
has the summary rows built on it.)"""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest
from benchhub_contract.inference import _KEPT_DRAWS, sign_flip_p
from benchhub_contract.mean_bootstrap import _packed_bootstrap_means, bootstrap_means
from benchhub_contract.verdicts import (
    BOOTSTRAP_ROUNDS,
    SEED,
    Verdict,
    geometric_mean_insufficient,
    geometric_mean_verdict,
)

from tests.comparisons.test_verdict_arithmetic import t_tail_by_integration


def replayed_means(ratios: list[float], seed: int = SEED) -> list[float]:
    """The bootstrap as documented: BOOTSTRAP_ROUNDS resamples, with
    replacement, of as many operations as there are, from Random(seed)."""
    logs = [math.log(r) for r in ratios]
    rng = random.Random(seed)
    return sorted(
        math.fsum(rng.choices(logs, k=len(logs))) / len(logs) for _ in range(BOOTSTRAP_ROUNDS)
    )


def interval(means: list[float]) -> tuple[float, float]:
    # the 2.5th and 97.5th percentiles, interpolated as numpy's default
    cuts = statistics.quantiles(means, n=40, method="inclusive")
    return math.exp(cuts[0]), math.exp(cuts[-1])


# Eleven operations and more: the bootstrap over operations, never more sure
# than Student's t test of the mean log ratio. Skewed ratios, no two alike:
# their arithmetic mean and median are both off the geometric mean.
MANY = [1.25, 0.8, 5.0, 1.3, 0.9, 1.1, 2.0, 0.7, 1.45, 0.95, 1.6, 0.85]
# Most operations a little above 1, one far above: the bootstrap's upper
# bound is above the t test's, and its p (0.0045) far below it (0.07).
ONE_FAR = [0.83, 1.59, 1.01, 1.11, 2.14, 1.23, 1.11, 1.13, 1.08, 1.05, 1.1, 5.66]
T_975 = {11: 2.200985160}  # the t table's two-sided 5 % point


def t_by_the_book(ratios: list[float]) -> tuple[float, float, float]:
    """p of the one-sample t test of the mean log ratio, and its 95 %
    interval on the log scale, from the statistics module, the t table and
    the t density integrated."""
    logs = [math.log(r) for r in ratios]
    mean, error = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    reach = T_975[len(logs) - 1] * error
    return t_tail_by_integration(mean / error, len(logs) - 1), mean - reach, mean + reach


def bootstrap_p(means: list[float]) -> float:
    far = min(sum(1 for m in means if m <= 0), sum(1 for m in means if m >= 0))
    return (2 * far + 1) / (BOOTSTRAP_ROUNDS + 1)


def expected(ratios: list[float], seed: int = SEED) -> tuple[float, float, float]:
    means = replayed_means(ratios, seed)
    t_p, t_low, t_high = t_by_the_book(ratios)
    low, high = interval(means)
    return max(bootstrap_p(means), t_p), min(low, math.exp(t_low)), max(high, math.exp(t_high))


def test_the_score_is_the_geometric_mean_with_the_wider_of_two_intervals_and_the_larger_p():
    means = replayed_means(MANY)
    below = sum(1 for m in means if m <= 0)
    assert 0 < below < sum(1 for m in means if m >= 0)  # the far side, non-empty

    result = geometric_mean_verdict(MANY, direction="higher", minimum_effect=0.1)

    assert result.ratio == pytest.approx(math.prod(MANY) ** (1 / len(MANY)), rel=1e-12)
    assert result.test == "bootstrap"
    p_value, low, high = expected(MANY)
    assert result.p_value == pytest.approx(p_value, rel=1e-6)
    assert result.ratio_low == pytest.approx(low, rel=1e-9)
    assert result.ratio_high == pytest.approx(high, rel=1e-9)
    # here the t test is the less sure on every count
    t_p, t_low, t_high = t_by_the_book(MANY)
    assert (p_value, low, high) == (t_p, math.exp(t_low), math.exp(t_high))
    assert bootstrap_p(means) < t_p
    assert 0.7 < low < 1 < high < 5.0  # neither the extremes nor outside them
    assert (result.verdict, result.minimum_effect) == ("inconclusive", 0.1)


def test_the_far_side_is_above_one_when_the_operations_lean_below_it():
    ratios = [1 / r for r in MANY]
    means = replayed_means(ratios)
    assert 0 < sum(1 for m in means if m >= 0) < sum(1 for m in means if m <= 0)

    result = geometric_mean_verdict(ratios, direction="lower")

    assert result.ratio == pytest.approx(math.prod(MANY) ** (-1 / len(MANY)), rel=1e-12)
    p_value, low, high = expected(ratios)
    assert result.p_value == pytest.approx(p_value, rel=1e-6)
    assert (result.ratio_low, result.ratio_high) == (
        pytest.approx(low, rel=1e-9),
        pytest.approx(high, rel=1e-9),
    )


def test_one_operation_far_out_is_no_difference_the_t_test_would_not_call():
    """The bootstrap alone gave p = 0.0045 and 'better'; the operations'
    log ratios have a t of 2.0 on 11 degrees of freedom."""
    result = geometric_mean_verdict(ONE_FAR, direction="higher")

    means = replayed_means(ONE_FAR)
    t_p, t_low, t_high = t_by_the_book(ONE_FAR)
    assert bootstrap_p(means) < 0.01 < 0.05 < t_p
    assert result.p_value == pytest.approx(t_p, rel=1e-6)
    assert result.verdict == "inconclusive"
    # the bounds from either side: the lower the t test's, the upper the bootstrap's
    assert result.ratio_low == pytest.approx(math.exp(t_low), rel=1e-9)
    assert result.ratio_high == pytest.approx(interval(means)[1], rel=1e-9)
    assert interval(means)[1] > math.exp(t_high)


@pytest.mark.parametrize("operations", [12, 15, 20])
def test_eleven_operations_and_more_the_interval_holds_the_true_ratio_95_times_in_100(operations):
    """Log-normal draws around a true ratio of 1.3: the bootstrap's interval
    alone held it in 270, 267 and 276 of these 300 draws."""
    rng = random.Random(operations)
    held = 0
    for _ in range(300):
        ratios = [1.3 * math.exp(rng.gauss(0, 0.3)) for _ in range(operations)]
        result = geometric_mean_verdict(ratios, direction="higher")
        held += result.ratio_low <= 1.3 <= result.ratio_high
    assert held >= 278, held  # 95 % of 300 is 285, with a standard error of 3.8


# Up to ten operations: the exact sign-flip test.


def flipped_p(ratios: list[float]) -> float:
    """The sign-flip p worked out the long way: every sign pattern's mean."""
    logs = [math.log(r) for r in ratios]
    observed = abs(statistics.fmean(logs))
    patterns = list(itertools.product((1, -1), repeat=len(logs)))
    far = sum(
        abs(statistics.fmean(s * v for s, v in zip(signs, logs, strict=True)))
        >= observed * (1 - 1e-9)
        for signs in patterns
    )
    return far / len(patterns)


@pytest.mark.parametrize(
    "ratios",
    [[1.25, 0.8, 5.0, 1.3], [1.5, 3.0, 2.0], [0.8, 1.25, 0.2, 0.8, 0.9], [1.2, 1.1, 0.95, 1.3, 1.4,
     1.05, 1.25], [2.0, 0.7, 1.45, 0.95, 1.6, 0.85, 1.3, 0.9, 1.1, 5.0]],
)  # fmt: skip
def test_up_to_ten_operations_the_p_value_is_the_exact_sign_flip_tests(ratios):
    assert sign_flip_p([math.log(r) for r in ratios]) == pytest.approx(flipped_p(ratios), abs=1e-12)
    result = geometric_mean_verdict(ratios, direction="higher")
    if len(ratios) < 6:  # see test_up_to_five_operations_are_insufficient_data
        assert (result.test, result.p_value) == (None, None)
    else:
        assert result.test == "sign-flip"
        assert result.p_value == pytest.approx(flipped_p(ratios), abs=1e-12)


def test_three_operations_that_agree_are_no_difference_yet():
    """Every operation 1.5 to 3 times the reference: of the 8 sign patterns,
    2 are as far from 0 (all +, all -), p = 0.25. The bootstrap of three
    units said p = 1/2001, "better"; then "within noise" at p = 0.25 said it
    had looked. No test of three units can tell: insufficient data, with
    the geometric mean still given."""
    result = geometric_mean_verdict([1.5, 3.0, 2.0], direction="higher")
    assert result.ratio == pytest.approx(9 ** (1 / 3), rel=1e-12)
    assert (result.verdict, result.test, result.p_value) == ("insufficient data", None, None)
    assert (result.ratio_low, result.ratio_high) == (None, None)


@pytest.mark.parametrize("operations", [2, 3, 4, 5, 6])
def test_up_to_five_operations_are_insufficient_data(operations):
    """All agreeing is the sign-flip test's smallest p, 2 / 2^n: 0.0625 for
    five operations, 0.03125 for six."""
    result = geometric_mean_verdict([2.0 + i / 10 for i in range(operations)], direction="higher")
    if operations < 6:
        assert result.verdict == "insufficient data"
    else:
        assert (result.verdict, result.p_value) == ("better", 2 / 64)


@pytest.mark.parametrize(
    ("direction", "name"), [("higher", "better"), ("lower", "worse"), ("none", "higher")]
)
def test_six_operations_that_agree_are_a_difference_named_by_the_direction(direction, name):
    ratios = [1.5, 3.0, 2.0, 1.2, 2.5, 1.8]

    result = geometric_mean_verdict(ratios, direction=direction)

    assert result.p_value == 2 / 64
    assert result.verdict == name
    # of 63 subset means, the first and the last: the least and the greatest ratio
    assert (result.ratio_low, result.ratio_high) == (
        pytest.approx(1.2, rel=1e-12),
        pytest.approx(3.0, rel=1e-12),
    )


def subset_means_interval(ratios: list[float]) -> tuple[float, float]:
    """The sign-flip test's interval the long way: every nonempty subset's
    mean log, sorted, the k-th from each end."""
    logs = [math.log(r) for r in ratios]
    means = sorted(
        statistics.fmean(subset)
        for size in range(1, len(logs) + 1)
        for subset in itertools.combinations(logs, size)
    )
    k = math.floor(2 ** len(logs) * 0.025)
    return math.exp(means[k - 1]), math.exp(means[-k])


@pytest.mark.parametrize(
    "ratios",
    [[1.2, 1.1, 0.95, 1.3, 1.4, 1.05, 1.25], [0.5, 3.0, 1.1, 0.9, 2.2, 1.7, 0.8, 1.3],
     [2.0, 0.7, 1.45, 0.95, 1.6, 0.85, 1.3, 0.9, 1.1, 5.0]],
)  # fmt: skip
def test_six_to_ten_operations_the_interval_is_the_sign_flip_tests(ratios):
    result = geometric_mean_verdict(ratios, direction="higher")
    low, high = subset_means_interval(ratios)
    assert result.ratio_low == pytest.approx(low, rel=1e-12)
    assert result.ratio_high == pytest.approx(high, rel=1e-12)
    assert low < result.ratio < high


@pytest.mark.parametrize("operations", [6, 8, 10])
def test_six_to_ten_operations_the_interval_holds_the_true_ratio_95_times_in_100(operations):
    """Log-normal draws around a true ratio of 1.3: the bootstrap's interval
    held it in 82-90 % of them (too narrow for so few units); the test's
    own holds it in at least 95 % (2 k / 2^n is 3.1 %, 4.7 %, 4.9 % out)."""
    rng = random.Random(operations)
    draws = 300
    held = 0
    for _ in range(draws):
        ratios = [1.3 * math.exp(rng.gauss(0, 0.3)) for _ in range(operations)]
        result = geometric_mean_verdict(ratios, direction="higher")
        held += result.ratio_low <= 1.3 <= result.ratio_high
    # 95 % of 300 is 285, with a standard error of 3.8
    assert held >= 278, held


def test_a_score_of_exactly_one_has_p_one():
    # ln 0.5 + ln 2 + ln 0.25 + ln 4 + ln 1 + ln 1 = 0: every pattern is as far from 0 as 0 is.
    ratios = [0.5, 2.0, 0.25, 4.0, 1.0, 1.0]
    result = geometric_mean_verdict(ratios, direction="higher", minimum_effect=0.0)
    assert (result.ratio, result.p_value, result.verdict) == (1.0, 1.0, "inconclusive")


def test_a_consistent_difference_below_the_minimum_effect_is_equivalent():
    small = [1.04, 1.03, 1.045, 1.035, 1.02, 1.041]
    result = geometric_mean_verdict(small, direction="higher")
    assert result.p_value == 2 / 64
    assert (result.ratio_low, result.ratio_high) == (1.02, 1.045)  # the least and greatest
    assert result.verdict == "equivalent"
    larger = [1.06, 1.07, 1.08, 1.065, 1.09, 1.075]
    assert geometric_mean_verdict(larger, direction="higher").verdict == "better"


def test_another_seed_gives_another_bootstrap_the_same_seed_the_same():
    # ONE_FAR: the upper bound is the bootstrap's, under either seed (not under
    # most: the t test's is above the bootstrap's under 27 of seeds 1-29)
    seeded = geometric_mean_verdict(ONE_FAR, direction="higher", seed=23)
    assert seeded == geometric_mean_verdict(ONE_FAR, direction="higher", seed=23)
    p_value, low, high = expected(ONE_FAR, seed=23)
    assert (seeded.p_value, seeded.ratio_low, seeded.ratio_high) == (
        pytest.approx(p_value, rel=1e-6),
        pytest.approx(low, rel=1e-9),
        pytest.approx(high, rel=1e-9),
    )
    assert high == interval(replayed_means(ONE_FAR, seed=23))[1]
    assert seeded.ratio_high != geometric_mean_verdict(ONE_FAR, direction="higher").ratio_high


@pytest.mark.parametrize("ratios", [[], [3.0], [2.0, 0.0], [2.0, -1.0, 3.0]])
def test_fewer_than_two_operations_or_a_ratio_that_is_not_positive_is_insufficient(ratios):
    assert geometric_mean_verdict(ratios, direction="higher", minimum_effect=0.2) == Verdict(
        "insufficient data", None, None, None, None, None, 0.2
    )


@pytest.mark.parametrize(
    "ratios", [[], [3.0], [2.0, 0.0], [2.0, math.inf], [2.0, 8.0], [1.5, 1.2, 1.3, 1.1], MANY]
)
def test_an_insufficient_geometric_mean_keeps_the_ratio_the_verdict_would_give(ratios):
    judged = geometric_mean_verdict(ratios, direction="higher", minimum_effect=0.2)

    assert geometric_mean_insufficient(ratios, minimum_effect=0.2) == Verdict(
        "insufficient data", None, None, judged.ratio, None, None, 0.2
    )


def test_two_operations_are_never_a_difference():
    result = geometric_mean_verdict([2.0, 8.0], direction="higher")
    assert result.ratio == pytest.approx(4.0, rel=1e-12)
    assert (result.test, result.p_value, result.verdict) == (None, None, "insufficient data")


def random_logs(rng: random.Random, n: int) -> list[float]:
    """Logs of ratios as a comparison has them, and harder: signs mixed,
    magnitudes from 2**-60 to 2**9 in one list (every resample's sum is
    rounded, some of them halfway), repeated values, exact zeros."""
    shape = rng.choice(("spread", "near", "wide", "repeated"))
    if shape == "spread":
        return [rng.gauss(0, 0.4) for _ in range(n)]
    if shape == "near":  # ratios within a few ulps of each other
        return [math.log(1.3 + rng.randint(-3, 3) * 2**-52) for _ in range(n)]
    if shape == "wide":
        return [
            rng.choice((1, -1)) * rng.uniform(0.5, 1) * 2.0 ** rng.randint(-60, 9) for _ in range(n)
        ]
    values = [rng.choice((0.0, 1.0, 2**-53, -(2**-53), 3 * 2**-54, 0.1)) for _ in range(n)]
    return values


def fsum_means(logs: list[float], seed: int) -> list[float]:
    """The plain formula: fsum of each resample over its size, sorted."""
    rng = random.Random(seed)
    n = len(logs)
    return sorted(math.fsum(rng.choices(logs, k=n)) / n for _ in range(BOOTSTRAP_ROUNDS))


@pytest.mark.parametrize("case", range(60))
def test_the_packed_bootstrap_gives_fsums_means_to_the_last_bit(case):
    # _packed_bootstrap_means sums every resample at once, in integers: the
    # same doubles as fsum, or the combined scores would change.
    rng = random.Random(case)
    n = rng.choice((2, 3, rng.randint(4, 60), 128))
    logs = random_logs(rng, n)
    seed = rng.choice((SEED, case))

    assert list(_packed_bootstrap_means(logs, seed)) == fsum_means(logs, seed)


def test_halfway_sums_round_to_even_as_fsum_does():
    # 1 + 2**-53 is halfway between two doubles: fsum rounds it to 1.0, and
    # 1 + 3 * 2**-53 up to 1 + 2**-51 (the even neighbours)
    logs = [1.0, 2**-53, 2**-53, 2**-52]
    assert list(_packed_bootstrap_means(logs, SEED)) == fsum_means(logs, SEED)
    assert math.fsum([1.0, 2**-53]) == 1.0


def test_more_operations_than_kept_draws_take_the_plain_path_with_the_same_answer():
    logs = random_logs(random.Random(5), _KEPT_DRAWS + 1)
    assert bootstrap_means(logs, SEED) == fsum_means(logs, SEED)
