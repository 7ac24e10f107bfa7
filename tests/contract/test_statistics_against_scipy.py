"""The contract's statistics against scipy.stats, on random uneven data.

benchhub_contract computes its tests with the standard library alone (the
agent installs on database hosts); every test and interval that scipy also
has must give scipy's answer to 1e-9. What scipy has no equivalent for (the
seeded bootstraps, the U test's interval of the ratio) is checked by hand in
tests/comparisons/test_verdict_arithmetic.py and
test_geometric_mean_arithmetic.py.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from benchhub_contract.inference import (
    _exact_p,
    _incomplete_beta,
    _normal_sf,
    _t_critical,
    mann_whitney_u,
    one_sample_t,
    quantile,
    sign_flip_p,
    student_t_sf2,
    welch_log_interval,
    welch_p,
)
from benchhub_contract.verdicts import geometric_mean_verdict, values_verdict
from scipy import special, stats

CLOSE = {"rel": 1e-9, "abs": 1e-9}
CASES = 60  # random draws per check, each with its own seed: a failure names it


def lognormal_sides(rng: random.Random) -> tuple[list[float], list[float]]:
    """Two samples of uneven sizes (2 to 23 against 3 to 17), medians and
    spreads apart: throughput-like values, skewed to the right."""
    n1, n2 = rng.randint(2, 23), rng.randint(3, 17)
    centre = rng.uniform(0.5, 9.0)
    shift = rng.uniform(-0.7, 0.9)
    x = [rng.lognormvariate(centre, rng.uniform(0.02, 0.6)) for _ in range(n1)]
    y = [rng.lognormvariate(centre + shift, rng.uniform(0.02, 0.9)) for _ in range(n2)]
    return x, y


@pytest.mark.parametrize("seed", range(CASES))
def test_welch_p_is_scipys_welch_t_test_of_the_logs(seed):
    x, y = lognormal_sides(random.Random(seed))
    expected = stats.ttest_ind(np.log(x), np.log(y), equal_var=False).pvalue
    assert welch_p(x, y) == pytest.approx(expected, **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_welch_p_of_values_that_are_not_all_positive_is_scipys_of_the_values(seed):
    rng = random.Random(seed)
    x = [rng.gauss(-3.5, 11.0) for _ in range(rng.randint(2, 19))]
    y = [rng.gauss(4.25, 2.5) for _ in range(rng.randint(2, 13))] + [0.0]
    expected = stats.ttest_ind(x, y, equal_var=False).pvalue
    assert welch_p(x, y) == pytest.approx(expected, **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_welch_interval_is_scipys_interval_of_the_log_difference_exponentiated(seed):
    x, y = lognormal_sides(random.Random(seed))
    interval = stats.ttest_ind(np.log(x), np.log(y), equal_var=False).confidence_interval(0.95)
    low, high = welch_log_interval(x, y)
    assert low == pytest.approx(math.exp(interval.low), **CLOSE)
    assert high == pytest.approx(math.exp(interval.high), **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_the_one_sample_t_test_and_interval_are_scipys(seed):
    rng = random.Random(seed)
    logs = [
        rng.gauss(rng.uniform(-0.4, 0.4), rng.uniform(0.01, 0.8)) for _ in range(rng.randint(2, 40))
    ]
    p_value, low, high = one_sample_t(logs)
    result = stats.ttest_1samp(logs, 0.0)
    interval = result.confidence_interval(0.95)
    assert p_value == pytest.approx(result.pvalue, **CLOSE)
    assert (low, high) == pytest.approx((interval.low, interval.high), **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_students_two_sided_tail_is_scipys_at_fractional_degrees_of_freedom(seed):
    rng = random.Random(seed)
    t = rng.choice([-1, 1]) * rng.expovariate(0.4)
    df = rng.uniform(1.01, 250.0)
    assert student_t_sf2(t, df) == pytest.approx(2 * stats.t.sf(abs(t), df), **CLOSE)


@pytest.mark.parametrize("df", [1.0, 1.37, 2.0, 2.91, 4.5, 7.0, 13.3, 29.0, 61.7, 200.0, 4321.5])
def test_the_t_critical_value_is_scipys_97_5_percent_point(df):
    assert _t_critical(df) == pytest.approx(stats.t.ppf(0.975, df), **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_the_regularized_incomplete_beta_is_scipys(seed):
    rng = random.Random(seed)
    a, b, x = rng.uniform(0.05, 60.0), rng.uniform(0.05, 60.0), rng.random()
    assert _incomplete_beta(a, b, x) == pytest.approx(special.betainc(a, b, x), **CLOSE)


@pytest.mark.parametrize("z", [-3.7, -1.2, 0.0, 0.31, 1.96, 2.58, 5.5, 8.2])
def test_the_normal_tail_is_scipys(z):
    assert _normal_sf(z) == pytest.approx(stats.norm.sf(z), **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_mann_whitney_u_is_scipys_auto_method(seed):
    """Exact without ties up to 8 a side, else normal with the tie and
    continuity corrections; every third draw rounded, so that it has ties."""
    rng = random.Random(seed)
    x, y = lognormal_sides(rng)
    if seed % 3 == 0:
        x, y = [round(v, 1) for v in x], [round(v, 1) for v in y]
    ours = mann_whitney_u(x, y)
    theirs = stats.mannwhitneyu(x, y, alternative="two-sided")
    assert ours.u == theirs.statistic
    assert ours.p_value == pytest.approx(theirs.pvalue, **CLOSE)


@pytest.mark.parametrize(("n1", "n2"), [(2, 9), (3, 5), (4, 4), (5, 8), (7, 3), (8, 8)])
def test_the_exact_u_distribution_is_scipys_at_every_u(n1, n2):
    for u in range(n1 * n2 + 1):
        # scipy's exact p for a U of u: samples whose ranks give exactly it
        # are not needed, the distribution is what is compared
        expected = stats.mannwhitneyu(
            *_samples_with_u(n1, n2, u), alternative="two-sided", method="exact"
        ).pvalue
        assert _exact_p(u, n1, n2) == pytest.approx(expected, **CLOSE)


def _samples_with_u(n1: int, n2: int, u: int) -> tuple[list[float], list[float]]:
    """An x of n1 values and a y of n2, no ties, where x beats exactly u of
    the (x, y) pairs: the first x's beat as many y's as they can."""
    beats = []
    for _ in range(n1):
        beats.append(min(n2, u - sum(beats)))
    x = [b + 0.5 for b in beats]
    return x, [float(j) + 1.0 for j in range(n2)]


@pytest.mark.parametrize("seed", range(CASES))
def test_a_cell_judged_by_the_u_test_has_scipys_p_value(seed):
    """values_verdict of unrepeated runs: its p is the U test's on the runs."""
    x, y = lognormal_sides(random.Random(seed))
    x, y = [*x, x[0] * 1.37, x[-1] * 0.61], [*y, y[0] * 1.13]  # at least 4 a side
    judged = values_verdict(x, y, direction="higher")
    assert judged.p_value == pytest.approx(
        stats.mannwhitneyu(x, y, alternative="two-sided").pvalue, **CLOSE
    )


@pytest.mark.parametrize("seed", range(CASES))
def test_the_sign_flip_p_is_scipys_exact_permutation_test(seed):
    rng = random.Random(seed)
    logs = [
        rng.gauss(rng.uniform(-0.3, 0.3), rng.uniform(0.05, 0.5)) for _ in range(rng.randint(2, 10))
    ]
    expected = stats.permutation_test(
        (np.array(logs),),
        np.mean,
        permutation_type="samples",
        n_resamples=math.inf,
        alternative="two-sided",
    ).pvalue
    assert sign_flip_p(logs) == pytest.approx(expected, **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_a_combined_score_of_six_to_ten_operations_has_scipys_sign_flip_p(seed):
    rng = random.Random(seed)
    ratios = [rng.lognormvariate(rng.uniform(-0.2, 0.3), 0.25) for _ in range(rng.randint(6, 10))]
    expected = stats.permutation_test(
        (np.log(ratios),),
        np.mean,
        permutation_type="samples",
        n_resamples=math.inf,
        alternative="two-sided",
    ).pvalue
    judged = geometric_mean_verdict(ratios, direction="lower")
    assert judged.p_value == pytest.approx(expected, **CLOSE)


@pytest.mark.parametrize("seed", range(CASES))
def test_a_combined_score_of_more_operations_is_never_surer_than_scipys_t_test(seed):
    """Beyond ten operations the bootstrap's p and interval are bounded by
    Student's t test of the mean log ratio: p at least its p, the interval
    at least as wide as its interval."""
    rng = random.Random(seed)
    ratios = [rng.lognormvariate(rng.uniform(-0.2, 0.3), 0.2) for _ in range(rng.randint(11, 37))]
    judged = geometric_mean_verdict(ratios, direction="higher")
    t_test = stats.ttest_1samp(np.log(ratios), 0.0)
    interval = t_test.confidence_interval(0.95)
    assert judged.p_value >= t_test.pvalue * (1 - 1e-9)
    assert judged.ratio_low <= math.exp(interval.low) * (1 + 1e-9)
    assert judged.ratio_high >= math.exp(interval.high) * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(CASES))
def test_the_quantile_is_numpys_linear_default(seed):
    rng = random.Random(seed)
    ordered = sorted(rng.lognormvariate(2.0, 1.1) for _ in range(rng.randint(1, 300)))
    for q in (0.025, 0.5, 0.975):
        assert quantile(ordered, q) == pytest.approx(np.quantile(ordered, q), **CLOSE)
