"""The verdicts' bootstrap of a few repetitions a side by the order of each
side's values (``ranked_bootstrap``): the ratios, the p-value and the
interval of the definition, float for float, in a few divisions a cell."""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right

import pytest
from benchhub_contract.inference import (
    _beta_fraction,
    bootstrap_ratios,
    finite,
    quantile,
    seeded_bootstrap_ratios,
    welch_log_interval,
    welch_p,
    welch_p_and_log_interval,
)
from benchhub_contract.ranked_bootstrap import bootstrap_counts, counted_quantile
from benchhub_contract.verdicts import SEED, RunValues, verdict


def side(rng: random.Random, n: int, centre: float) -> list[float]:
    """Lognormal values with ties, zeros and a negative now and then."""
    pick = [0.0, centre, centre, -centre / 3, 2.5]
    return [
        rng.choice(pick) if rng.random() < 0.15 else round(rng.lognormvariate(centre, 0.2), 2)
        for _ in range(n)
    ]


def expanded(drawn: list[tuple[float, int]]) -> list[float]:
    return [ratio for ratio, count in drawn for _ in range(count)]


SIZES = [(3, 3), (2, 3), (4, 3), (1, 4), (4, 4), (2, 2), (5, 3), (3, 9)]


@pytest.mark.parametrize(("n_candidate", "n_reference"), SIZES)
def test_the_same_ratios_in_the_same_order_as_the_definition(n_candidate, n_reference):
    rng = random.Random(n_candidate * 31 + n_reference)
    for _ in range(25):
        candidate, reference = side(rng, n_candidate, 3.1), side(rng, n_reference, 2.7)

        drawn = bootstrap_counts(candidate, reference, SEED)

        assert [repr(r) for r in expanded(drawn)] == [
            repr(r) for r in seeded_bootstrap_ratios(candidate, reference, SEED)
        ]
        assert expanded(drawn) == bootstrap_ratios(candidate, reference, random.Random(SEED))


def test_a_quantile_of_the_counted_ratios_is_the_quantile_of_the_list():
    rng = random.Random(5)
    for _ in range(60):
        candidate, reference = side(rng, 3, 1.0), side(rng, 4, 1.3)
        drawn = bootstrap_counts(candidate, reference, SEED)
        ratios = expanded(drawn)
        if not ratios:
            continue
        for q in (0.0, 0.025, 0.5, 0.975, 1.0, 0.3333):
            assert repr(counted_quantile(drawn, len(ratios), q)) == repr(quantile(ratios, q))


def test_welch_taken_once_gives_both_of_its_answers():
    rng = random.Random(9)
    for n1, n2 in [(3, 3), (2, 5), (6, 4), (3, 3)]:
        for _ in range(30):
            x, y = side(rng, n1, 2.0), side(rng, n2, 2.2)
            assert welch_p_and_log_interval(x, y) == (welch_p(x, y), welch_log_interval(x, y))
    assert welch_p_and_log_interval([5.0, 5.0], [5.0, 5.0]) == (1.0, None)


def definition(candidate: list[float], reference: list[float]) -> tuple:
    """The bootstrap verdict's p and interval from the whole list of resample ratios."""
    ratios = bootstrap_ratios(candidate, reference, random.Random(SEED))
    if any(map(math.isnan, ratios)):
        far = min(sum(1 for r in ratios if r <= 1), sum(1 for r in ratios if r >= 1))
    else:
        far = min(bisect_right(ratios, 1.0), len(ratios) - bisect_left(ratios, 1.0))
    p_value = max(min(1.0, (2 * far + 1) / (len(ratios) + 1)), welch_p(candidate, reference))
    low, high = finite(quantile(ratios, 0.025)), finite(quantile(ratios, 0.975))
    welch = welch_log_interval(candidate, reference)
    if welch is not None and low is not None and high is not None:
        low, high = min(low, welch[0]), max(high, welch[1])
    return p_value, low, high


@pytest.mark.parametrize(("n_candidate", "n_reference"), [s for s in SIZES if min(s) > 1])
def test_a_verdict_reads_the_definitions_p_and_interval(n_candidate, n_reference):
    rng = random.Random(n_candidate * 7 + n_reference * 101)
    judged_by_bootstrap = 0
    for _ in range(25):
        candidate, reference = side(rng, n_candidate, 4.0), side(rng, n_reference, 4.1)
        judged = verdict(
            [RunValues(candidate[0], tuple(candidate))],
            [RunValues(reference[0], tuple(reference))],
            direction="higher",
        )
        if judged.test != "bootstrap":
            continue
        judged_by_bootstrap += 1
        assert (judged.p_value, judged.ratio_low, judged.ratio_high) == definition(
            candidate, reference
        )
    assert judged_by_bootstrap > 5


@pytest.mark.parametrize(
    ("candidate", "reference"),
    [
        ([0.0, 0.0, 5.0], [-1.0, 2.0, 3.0]),  # 0 / -1 is -0.0, 0 / 2 is 0.0
        ([1.7e308, 1.6e308, 2.0, 1.5e308], [1.0, 1.7e308, 1.6e308, 1.2e308]),  # inf / inf
    ],
)
def test_zeros_of_either_sign_and_nan_stand_where_the_definition_puts_them(candidate, reference):
    drawn = bootstrap_counts(candidate, reference, SEED)

    assert [repr(r) for r in expanded(drawn)] == [
        repr(r) for r in seeded_bootstrap_ratios(candidate, reference, SEED)
    ]


def beta_fraction_as_a_loop(a: float, b: float, x: float) -> float:
    """The incomplete beta's continued fraction with its two steps a loop."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def test_the_continued_fraction_written_out_is_the_loops_to_the_last_bit():
    rng = random.Random(12)
    for _ in range(3000):
        a, b, x = rng.uniform(0.2, 60), rng.choice([0.5, rng.uniform(0.1, 9)]), rng.random()
        assert repr(_beta_fraction(a, b, x)) == repr(beta_fraction_as_a_loop(a, b, x))
