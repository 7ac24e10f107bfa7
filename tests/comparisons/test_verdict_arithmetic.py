"""The verdicts' arithmetic against values worked out by hand: the interval
of the ratio of medians, the bootstrap's percentiles, the ranks with ties,
the exact/normal switch of the U test and its edges. Skewed and repeated
data, so that a formula that is only nearly right gives another number.
(tests/comparisons/test_verdicts.py has the verdicts themselves.)"""

from __future__ import annotations

import math
import random
import statistics

import pytest
from benchhub_contract.inference import (
    UTest,
    _normal_approximation,
    _order_statistic_interval,
    _t_critical,
    bootstrap_ratios,
    mann_whitney_u,
    quantile,
    student_t_sf2,
    u_interval,
    welch_log_interval,
    welch_p,
)
from benchhub_contract.verdicts import (
    BOOTSTRAP_ROUNDS,
    SEED,
    RunValues,
    Verdict,
    _samples,
    verdict,
)


def runs(*values: float) -> list[RunValues]:
    return [RunValues(v) for v in values]


# --- the ratio's interval from order statistics ----------------------------------------


def test_the_interval_of_the_ratio_of_medians_is_the_hand_computed_one():
    # x (n = 9): half width 1.96·√9/2 = 2.94, so the order statistics
    # floor(4.5 - 2.94) = 1 and ceil(4.5 + 2.94) = 8: 2 and 256, a spread of
    # ln(256/2) / 3.92 = 7·ln 2 / 3.92 for the log of the median 16.
    x = [256.0, 1.0, 64.0, 2.0, 32.0, 4.0, 128.0, 8.0, 16.0]
    # y (n = 4): half width 1.96, so floor(0.04) = 0 and ceil(3.96) = 4, cut to
    # the last index 3: 1 and 4, a spread of 2·ln 2 / 3.92 around the median 2.5.
    y = [4.0, 1.0, 3.0, 2.0]
    # margin = 1.96·√(spread_x² + spread_y²) = ln 2 · √53 / 2
    margin = math.log(2) * math.sqrt(53) / 2

    low, high = _order_statistic_interval(x, y)

    assert low == pytest.approx(6.4 * math.exp(-margin), rel=1e-12)
    assert high == pytest.approx(6.4 * math.exp(margin), rel=1e-12)


def test_the_interval_of_two_values_uses_both_of_them():
    # n = 2: floor(1 - 1.386) = -1 and ceil(1 + 1.386) = 3, both cut to the ends.
    low, high = _order_statistic_interval([1.0, 4.0], [1.0, 4.0])
    margin = 1.96 * math.sqrt(2) * math.log(4) / 3.92
    assert (low, high) == (pytest.approx(math.exp(-margin)), pytest.approx(math.exp(margin)))


@pytest.mark.parametrize(
    ("x", "y"),
    [([0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]), ([1.0, 2.0, 3.0, 4.0], [2.0, 0.0, 3.0, 4.0])],
)
def test_no_interval_when_a_side_has_a_value_that_has_no_logarithm(x, y):
    assert _order_statistic_interval(x, y) == (None, None)


# --- the bootstrap -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        (0.0, 1.0),
        (0.025, 1.1),  # position 0.1: 1 + 0.1·(2 - 1)
        (0.5, 4.0),
        (0.975, 90.8),  # position 3.9: 8 + 0.9·(100 - 8)
        (1.0, 100.0),
    ],
)
def test_bootstrap_percentiles_interpolate_between_the_closest_ranks(q, expected):
    # numpy.quantile([1, 2, 4, 8, 100], q) gives the same
    assert quantile([1.0, 2.0, 4.0, 8.0, 100.0], q) == pytest.approx(expected, rel=1e-12)


def test_resamples_whose_reference_median_is_zero_are_left_out():
    ratios = bootstrap_ratios([2.0, 2.0], [0.0, 0.0, 1.0], random.Random(7))

    # the reference resample's median is 0 (left out) or 1 (ratio 2)
    assert 0 < len(ratios) < BOOTSTRAP_ROUNDS
    assert set(ratios) == {2.0}


def test_bootstrap_ratios_are_sorted_and_come_from_both_sides():
    ratios = bootstrap_ratios([30.0, 10.0, 20.0], [5.0, 1.0, 2.0], random.Random(7))

    assert len(ratios) == BOOTSTRAP_ROUNDS
    assert ratios == sorted(ratios)
    # medians of resamples of each side: 10..30 over 1..5
    assert min(ratios) >= 10 / 5 and max(ratios) <= 30 / 1
    assert len(set(ratios)) > 3


def test_a_run_without_samples_counts_as_its_one_value_beside_runs_with_samples():
    side = [RunValues(7.0), RunValues(1.0, (2.0, 3.0, 2.0)), RunValues(5.0)]
    assert _samples(side) == [7.0, 2.0, 3.0, 2.0, 5.0]


def test_a_bootstrap_mixing_runs_with_and_without_samples_judges_all_of_them():
    # The unrepeated runs are far above the repeated one: dropping them (or
    # taking the repeated run's value instead of its samples) changes the ratio.
    candidate = [RunValues(300.0), RunValues(100.0, (99.0, 100.0, 101.0)), RunValues(310.0)]
    reference = [RunValues(100.0, (98.0, 100.0, 102.0))]

    result = verdict(candidate, reference, direction="higher")

    assert result.test == "bootstrap"
    assert result.ratio == pytest.approx(3.0)
    assert result.ratio_high > 2.9  # the 300s are in the resamples


# --- ranks and the U test -------------------------------------------------------------


def mean_ranks(values: list[float]) -> list[float]:
    """Ranks from 1, tied values given their mean rank: the textbook way,
    the oracle of the U test's counting."""
    ranks = []
    for value in values:
        below = sum(1 for other in values if other < value)
        tied = sum(1 for other in values if other == value)
        ranks.append(below + (tied + 1) / 2)
    return ranks


def test_the_oracles_ranks_share_their_mean_at_both_ends():
    assert mean_ranks([3.0, 1.0, 3.0, 1.0, 2.0]) == [4.5, 1.5, 4.5, 1.5, 3.0]
    assert mean_ranks([5.0, 5.0, 5.0]) == [2.0, 2.0, 2.0]


def test_u_counted_by_bisection_is_the_rank_sums_exactly_with_ties():
    """U and its tie term from mean ranks (scipy's way), against the test's
    counting in sorted y: equal to the last bit, for sides in any order,
    with ties within and across sides, zeros of both signs and negatives."""
    rng = random.Random(11)
    pool = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 1.0, 3.25, 7.0, 1e18]
    for _ in range(500):
        x = [rng.choice(pool) for _ in range(rng.randrange(1, 30))]
        y = [rng.choice(pool) for _ in range(rng.randrange(1, 30))]
        ranks = mean_ranks([*x, *y])
        n1, n2 = len(x), len(y)
        n = n1 + n2
        u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
        groups = {}
        for rank in ranks:
            groups[rank] = groups.get(rank, 0) + 1
        tie_term = sum(t**3 - t for t in groups.values()) / (n * (n - 1))
        result = mann_whitney_u(x, y)
        assert result.u == u1, (x, y)
        if tie_term:
            assert result == _normal_approximation(u1, n1, n2, tie_term), (x, y)


@pytest.mark.parametrize(("x", "y"), [([], [1.0, 2.0]), ([1.0, 2.0], [])])
def test_the_u_test_refuses_an_empty_side(x, y):
    with pytest.raises(ValueError, match=r"^both samples need at least one value$"):
        mann_whitney_u(x, y)


def test_eight_values_without_ties_get_the_exact_distribution():
    # all 8 x below all 9 y: U = 0, p = 2 / C(17, 8)
    result = mann_whitney_u([float(v) for v in range(8)], [float(v) for v in range(8, 17)])
    assert (result.u, result.exact) == (0, True)
    assert result.p_value == pytest.approx(2 / math.comb(17, 8), rel=1e-12)


def test_nine_values_a_side_get_the_normal_approximation():
    # U = 0: z = (81 - 40.5 - 0.5) / √(81·19/12) → p = 2·sf(z)
    result = mann_whitney_u([float(v) for v in range(9)], [float(v) for v in range(9, 18)])
    z = 40 / math.sqrt(81 * 19 / 12)
    assert (result.u, result.exact) == (0, False)
    assert result.p_value == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)


def test_u_in_the_middle_of_its_distribution_has_p_one_not_more():
    # x ranks 1 and 4: U = 2 = n1·n2/2; twice the upper tail is 2·4/6, capped at 1
    result = mann_whitney_u([1.0, 4.0], [2.0, 3.0])
    assert (result.u, result.exact, result.p_value) == (2, True, 1.0)


@pytest.mark.parametrize("ties", [False, True], ids=["distinct values", "ties"])
def test_u_counts_the_pairs_the_first_sample_wins_in_any_order(ties):
    """U of x is how many (x, y) pairs x wins, a tie counting half, whatever
    the order the samples come in (unsorted, skewed, negative)."""
    rng = random.Random(41)
    for _ in range(200):
        n1, n2 = rng.randint(1, 40), rng.randint(1, 40)
        if ties:
            x = [float(rng.randint(-3, 3)) for _ in range(n1)]
            y = [float(rng.randint(-3, 3)) for _ in range(n2)]
        else:
            values = rng.sample(range(-(10**6), 10**6), n1 + n2)
            x, y = [v**3 / 7 for v in values[:n1]], [v**3 / 7 for v in values[n1:]]
        wins = sum((a > b) + (a == b) / 2 for a in x for b in y)
        result = mann_whitney_u(x, y)
        assert result.u == wins
        assert result.exact == (not ties and min(n1, n2) <= 8)
        if ties and len(set(x + y)) == 1:
            assert result.p_value == 1.0


# --- the verdict's branches at their edges ------------------------------------------


def test_all_equal_values_are_no_difference_at_all():
    assert mann_whitney_u([5.0] * 9, [5.0] * 9) == UTest(40.5, 1.0, exact=False)


def test_the_normal_approximation_caps_a_centred_u_at_p_one():
    # identical samples with ties: U at the centre, z below 0, twice the tail above 1
    assert mann_whitney_u(list(range(1, 10)), list(range(1, 10))).p_value == 1.0


def test_the_interval_does_not_depend_on_values_beyond_its_order_statistics():
    # n = 25: the upper order statistic is the 18th value, not the largest
    y = [float(v) for v in range(10, 35)]
    spread = [float(v) for v in range(1, 26)]
    outlying = [*spread[:-1], 1000.0]
    assert _order_statistic_interval(spread, y) == _order_statistic_interval(outlying, y)


def test_a_lower_candidate_is_better_when_lower_is_better():
    faster, slower = runs(120, 125, 118, 122), runs(100, 101, 99, 102)
    assert verdict(slower, faster, direction="lower").verdict == "better"


def test_a_difference_of_exactly_the_minimum_effect_counts():
    result = verdict(
        runs(149, 150, 150, 151), runs(99, 100, 100, 101), direction="higher", minimum_effect=0.5
    )
    assert result.ratio == 1.5
    assert (result.verdict, result.test) == ("better", "mann-whitney-u")


def test_a_reference_median_of_one_is_a_reference_and_of_zero_is_none():
    assert verdict(runs(2, 2.1, 1.9, 2.05), runs(1, 0.99, 1.01, 1), direction="higher").verdict == (
        "better"
    )
    nothing = verdict(
        runs(2, 2.1, 1.9, 2.05), runs(0, 0, 0, 0), direction="higher", minimum_effect=0.2
    )
    assert nothing == Verdict("insufficient data", None, None, None, None, None, 0.2)


def test_four_runs_against_two_repeated_ones_are_bootstrapped():
    candidate = runs(120, 125, 118, 122)
    reference = [RunValues(100, (99, 100, 101)), RunValues(101, (100, 102, 101))]
    assert verdict(candidate, reference, direction="higher").test == "bootstrap"


def test_a_bootstrap_without_a_usable_resample_keeps_the_ratio_and_the_minimum_effect():
    # the reference's median value is 5, but its samples are zeros: no resample counts
    result = verdict(
        [RunValues(10.0, (9.0, 11.0))],
        [RunValues(5.0, (0.0, 0.0))],
        direction="higher",
        minimum_effect=0.1,
    )
    assert result == Verdict("insufficient data", None, None, 2.0, None, None, 0.1)


def test_the_bootstrap_p_value_is_twice_the_far_side_share_ties_on_both_sides():
    # identical repetitions: many resampled ratios are exactly 1 and count on both sides
    side = [RunValues(2.0, (1.0, 2.0, 3.0))]
    ratios = bootstrap_ratios(_samples(side), _samples(side), random.Random(SEED))
    at_most_one = sum(1 for r in ratios if r <= 1)
    at_least_one = sum(1 for r in ratios if r >= 1)
    assert sum(1 for r in ratios if r == 1) > 100  # the case this test is about
    expected = min(1.0, (2 * min(at_most_one, at_least_one) + 1) / (len(ratios) + 1))

    assert verdict(side, side, direction="higher").p_value == expected


def test_far_apart_repetitions_get_the_bootstraps_least_p():
    # no resample on the other side: 1 / (2000 + 1), which Welch's p of
    # these tight samples (about 4e-6) does not raise
    candidate, reference = (299.0, 300.0, 301.0), (99.0, 100.0, 101.0)
    ratios = bootstrap_ratios(list(candidate), list(reference), random.Random(SEED))
    assert min(ratios) > 1
    assert welch_p(candidate, reference) < 1e-4

    far = verdict([RunValues(300.0, candidate)], [RunValues(100.0, reference)], direction="higher")

    assert (far.test, far.p_value) == ("bootstrap", 1 / (BOOTSTRAP_ROUNDS + 1))


def test_three_against_three_apart_but_spread_get_welchs_p():
    # every resample on one side of 1 (the ranks are apart), but the spread
    # is wide for three values: the bootstrap said 0.0005, Welch says 0.046
    candidate, reference = (112.0, 130.0, 121.0), (100.0, 110.0, 95.0)
    ratios = bootstrap_ratios(list(candidate), list(reference), random.Random(SEED))
    assert min(ratios) > 1

    result = verdict(
        [RunValues(121.0, candidate)], [RunValues(100.0, reference)], direction="higher"
    )

    assert result.test == "bootstrap"
    assert result.p_value == welch_p(candidate, reference)
    assert 0.01 < result.p_value < 0.05


@pytest.mark.parametrize("t", [0.0, 0.3, 1.0, 1.7, 5.0, 40.0, -2.5])
def test_students_t_tail_matches_its_closed_forms(t):
    # one degree of freedom is Cauchy, two have a closed form too
    assert student_t_sf2(t, 1) == pytest.approx(1 - 2 * math.atan(abs(t)) / math.pi, rel=1e-9)
    assert student_t_sf2(t, 2) == pytest.approx(1 - abs(t) / math.sqrt(2 + t * t), rel=1e-9)


def test_students_t_tail_at_tabled_critical_values():
    # two-sided 5 % points of the t table, whole and between
    assert student_t_sf2(2.776445105, 4) == pytest.approx(0.05, rel=1e-6)
    assert student_t_sf2(2.228138852, 10) == pytest.approx(0.05, rel=1e-6)
    assert student_t_sf2(1.959963985, 1e7) == pytest.approx(0.05, rel=1e-4)
    assert student_t_sf2(3.0, 4) < student_t_sf2(3.0, 3.5) < student_t_sf2(3.0, 3)


def t_tail_by_integration(t: float, df: float, steps: int = 20_000) -> float:
    """P(|T| >= |t|) another way: 1 less Simpson's rule of the t density
    over [-|t|, |t|]."""

    def density(v: float) -> float:
        log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
        return math.exp(log_c - (df + 1) / 2 * math.log1p(v * v / df))

    h = 2 * abs(t) / steps
    inside = density(-abs(t)) + density(abs(t))
    inside += sum((4 if i % 2 else 2) * density(-abs(t) + i * h) for i in range(1, steps))
    return 1 - inside * h / 3


def welch_by_the_book(x: list[float], y: list[float]) -> float:
    """Welch's t and its degrees of freedom from the statistics module, and
    the tail by integrating the t density."""
    v1, v2 = statistics.variance(x) / len(x), statistics.variance(y) / len(y)
    t = (statistics.mean(x) - statistics.mean(y)) / math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1**2 / (len(x) - 1) + v2**2 / (len(y) - 1))
    return t_tail_by_integration(t, df)


def test_welchs_t_test_of_positive_values_is_of_their_logs():
    # unequal sizes and spreads
    x = [19.0, 22.0, 16.0, 29.0, 24.0]
    y = [20.0, 11.0, 17.0, 12.0]
    expected = welch_by_the_book([math.log(v) for v in x], [math.log(v) for v in y])

    assert 0.05 < expected < 0.1
    assert welch_p(x, y) == pytest.approx(expected, rel=1e-7)
    assert welch_p(y, x) == pytest.approx(expected, rel=1e-7)


def test_welchs_t_test_with_a_value_of_zero_or_less_is_linear():
    # means 22 and 14.25, variances 24.5 and 118.92: t = 1.317, df = 3.99
    x = [19.0, 22.0, 16.0, 29.0, 24.0]
    y = [20.0, 0.0, 25.0, 12.0]
    expected = welch_by_the_book(x, y)

    assert 0.1 < expected < 0.3
    assert welch_p(x, y) == pytest.approx(expected, rel=1e-7)


def test_welchs_t_test_without_spread_or_beyond_a_double():
    assert welch_p([5.0, 5.0], [5.0, 5.0, 5.0]) == 1.0
    assert welch_p([5.0, 5.0], [6.0, 6.0]) == 0.0  # bounds nothing: the bootstrap decides
    # a side at both ends of a double: on a linear scale, by the largest size
    assert welch_p([1e308, -1e308], [1.0, 2.0]) == pytest.approx(1.0)
    assert welch_p([-3.0, 0.0, -1.0], [2.0, 4.0]) == pytest.approx(
        welch_p([-3e300, 0.0, -1e300], [2e300, 4e300]), rel=1e-12
    )
    assert welch_p([1.0], [1.0, 2.0]) == 0.0
    # spreads whose squares vanish: the same p as the same samples scaled up
    tiny = welch_p([1e-170, 3e-170, 2e-170], [4e-170, 6e-170])
    assert tiny == pytest.approx(welch_p([1.0, 3.0, 2.0], [4.0, 6.0]), rel=1e-9)


@pytest.mark.parametrize(
    ("candidate", "reference", "larger"),
    [
        # overlapping, skewed: the bootstrap's share says more (0.140, 0.149)
        # than Welch's t (0.100), the far side below 1 and above it
        ((95.0, 100.0, 104.0, 110.0, 121.0), (90.0, 96.0, 99.0, 101.0, 97.0), "bootstrap"),
        ((90.0, 96.0, 99.0, 101.0, 97.0), (95.0, 100.0, 104.0, 110.0, 121.0), "bootstrap"),
        # two of four far out: Welch's t says more (0.087 against 0.046)
        ((97.0, 140.0, 106.0, 134.0), (91.0, 88.0, 109.0, 92.0), "welch"),
    ],
)
def test_the_bootstrap_p_value_is_the_larger_of_its_share_and_welchs(candidate, reference, larger):
    # A few resampled ratios fall on the far side of 1 (below it when the
    # candidate is higher, above it when lower): the bootstrap's p is twice
    # their share, each counted once, plus the +1; the verdict's p is that or
    # Welch's t test's of the same samples, whichever is larger.
    ratios = bootstrap_ratios(list(candidate), list(reference), random.Random(SEED))
    candidate_higher = statistics.median(candidate) > statistics.median(reference)
    far = sum(1 for r in ratios if (r <= 1 if candidate_higher else r >= 1))
    assert 0 < far < len(ratios) / 4  # the smaller side, not empty: the case at hand
    share = (2 * far + 1) / (BOOTSTRAP_ROUNDS + 1)
    welch = welch_p(candidate, reference)
    assert (share > welch) == (larger == "bootstrap")

    result = verdict(
        [RunValues(100.0, candidate)], [RunValues(98.0, reference)], direction="higher"
    )

    assert result.test == "bootstrap"
    assert result.p_value == max(share, welch)


# --- the U test's interval -----------------------------------------------------------


def judged_interval(x: list[float], y: list[float]) -> tuple[float | None, float | None]:
    """The interval as a verdict asks for it: exact when its U test was."""
    return u_interval(x, y, exact=mann_whitney_u(x, y).exact)


def test_the_u_tests_interval_of_four_runs_against_four_is_the_extreme_ratios():
    # 4 against 4, exact: P(U = 0) = 1/70 <= 2.5 % < P(U <= 1) = 2/70, so
    # k = 1: the smallest and the largest of the 16 ratios x_i / y_j.
    low, high = judged_interval([10.0, 11.0, 12.5, 13.0], [20.0, 21.0, 22.0, 23.0])
    assert low == pytest.approx(10.0 / 23.0, rel=1e-12)
    assert high == pytest.approx(13.0 / 20.0, rel=1e-12)


@pytest.mark.parametrize(("m", "n"), [(2, 2), (2, 5), (3, 3)])
def test_too_few_runs_for_a_95_percent_interval_give_none(m, n):
    # Even U = 0 has a probability above 2.5 % (1/6, 1/21, 1/20): no 95 %
    # interval is bounded, and an interval from these values would be narrower
    # than the truth.
    x = [10.0 + i for i in range(m)]
    y = [30.0 + 2 * i for i in range(n)]
    assert judged_interval(x, y) == (None, None)
    judged = verdict(runs(*x), runs(*y), direction="higher")
    # nor can any test tell at 5 % (2 / C(m + n, m) >= 0.05)
    assert (judged.verdict, judged.ratio_low, judged.ratio_high) == (
        "insufficient data",
        None,
        None,
    )


@pytest.mark.parametrize(("m", "n"), [(4, 4), (3, 6), (5, 5), (12, 9), (30, 40)])
def test_the_interval_beside_the_u_test_covers_the_true_ratio_95_times_in_100(m, n):
    """Skewed (log-normal) runs, the candidate 1.3 times the reference: the
    interval holds 1.3 at least 95 % of the time, up to simulation noise (the
    medians' order-statistic interval held it 91 % of the time at 4 against 4,
    79 % at 3 against 3)."""
    rng = random.Random(m * 100 + n)
    draws, held = 1500, 0
    for _ in range(draws):
        x = sorted(1.3 * math.exp(rng.gauss(0, 1)) for _ in range(m))
        y = sorted(math.exp(rng.gauss(0, 1)) for _ in range(n))
        low, high = judged_interval(x, y)
        held += low <= 1.3 <= high
    assert held / draws >= 0.94


# --- a bootstrap's interval never narrower than Welch's --------------------------------


@pytest.mark.parametrize(
    ("df", "tabled"),
    [(1, 12.70620474), (2, 4.30265273), (4, 2.776445105), (10, 2.228138852), (30, 2.042272456)],
)
def test_the_t_critical_value_is_the_tables(df, tabled):
    assert _t_critical(df) == pytest.approx(tabled, rel=1e-9)


@pytest.mark.parametrize("df", [1.3, 2.71, 7.5, 123.4])
def test_the_t_critical_value_between_whole_degrees_leaves_5_percent(df):
    assert student_t_sf2(_t_critical(df), df) == pytest.approx(0.05, rel=1e-9)


def test_welchs_interval_of_the_ratio_by_the_book():
    # logs 1, 2, 3 against 0, 1, 2: equal spreads and sizes, so Welch's
    # degrees of freedom are 2 (n - 1) = 4 and its t the table's 2.776445105
    x, y = [math.e, math.e**2, math.e**3], [1.0, math.e, math.e**2]
    reach = 2.776445105 * math.sqrt(1 / 3 + 1 / 3)

    low, high = welch_log_interval(x, y)

    assert low == pytest.approx(math.exp(1 - reach), rel=1e-9)
    assert high == pytest.approx(math.exp(1 + reach), rel=1e-9)


@pytest.mark.parametrize(
    ("x", "y"), [([1.0], [1.0, 2.0]), ([0.0, 1.0], [1.0, 2.0]), ([2.0, 2.0], [3.0, 3.0])]
)
def test_welchs_interval_needs_two_positive_values_a_side_and_a_spread(x, y):
    assert welch_log_interval(x, y) is None


def test_an_inconclusive_bootstrap_has_an_interval_that_holds_one():
    """Three repetitions a side, one far out: the p (Welch's, 0.22) said
    no difference while the bootstrap's interval, 1.08-1.6, left 1 out."""
    candidate = [RunValues(112, (110, 112, 160))]
    reference = [RunValues(101, (100, 101, 102))]

    judged = verdict(candidate, reference, direction="higher")

    assert (judged.test, judged.verdict) == ("bootstrap", "inconclusive")
    assert judged.ratio_low < 1 < judged.ratio_high
    welch = welch_log_interval([110, 112, 160], [100, 101, 102])
    assert (judged.ratio_low, judged.ratio_high) == (
        pytest.approx(welch[0], rel=1e-12),
        pytest.approx(welch[1], rel=1e-12),
    )
