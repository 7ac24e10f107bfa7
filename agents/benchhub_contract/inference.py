"""The tests and intervals the verdicts rest on, standard library only: a
server and an agent that must agree cannot depend on numpy or scipy.
``tests/contract/test_statistics_against_scipy.py`` holds each one that
scipy also has to scipy's answer, to 1e-9, on random uneven data.

- Welch's t test and its interval of the ratio of geometric means (of the
  logs), Student's t distribution (its two-sided tail by the regularized
  incomplete beta function, its 5 % point by Newton's method);
- the Mann-Whitney U test (exact, or normal with tie and continuity
  corrections, as scipy's "auto") and the ratio's interval beside it
  (Bauer's, or the medians' order statistics for large samples);
- the exact sign-flip test and its interval (Hartigan's subset means);
- a seeded bootstrap of a ratio of medians (of a mean log ratio:
  ``mean_bootstrap``).

Every test is two-sided at ``ALPHA``; every interval is the matching
1 - ``ALPHA`` interval (95 %), so a bound of 1 inside it agrees with p.
"""

from __future__ import annotations

import math
import operator
import random
import statistics
import sys
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import repeat, starmap

ALPHA = 0.05
BOOTSTRAP_ROUNDS = 2000


def welch_p(x: Sequence[float], y: Sequence[float]) -> float:
    """Two-sided p of Welch's t test that ``x`` and ``y`` have one mean (at
    least two values a side): of their logs where every value is above 0,
    as the ratio the verdict reports is (a run of 1,000, 1,800 and 2,700
    transactions a second is 1,000 times one of 0.9, 1.0 and 1.1, however
    its spread reads on a linear scale), else of the values over the
    largest one's size. 0 where it has no finite answer (no spread on
    either side and different means): then it bounds nothing."""
    n1, n2 = len(x), len(y)
    if n1 < 2 or n2 < 2:
        return 0.0
    if min(min(x), min(y)) > 0:
        x, y = list(map(math.log, x)), list(map(math.log, y))
    else:
        size = max(max(map(abs, x)), max(map(abs, y)))
        if size == 0:
            return 1.0
        x, y = [v / size for v in x], [v / size for v in y]
    difference, spread, df = _welch(x, y)
    if spread == 0:
        return 1.0 if difference == 0 else 0.0
    return student_t_sf2(difference / math.sqrt(spread), df)


def _welch(x: list[float], y: list[float]) -> tuple[float, float, float]:
    """The difference of the means, the sum of their variances (the spread)
    and the Welch-Satterthwaite degrees of freedom (0 without a spread)."""
    n1, n2 = len(x), len(y)
    mean1, mean2 = math.fsum(x) / n1, math.fsum(y) / n2
    v1 = math.fsum((v - mean1) * (v - mean1) for v in x) / (n1 - 1) / n1
    v2 = math.fsum((v - mean2) * (v - mean2) for v in y) / (n2 - 1) / n2
    spread = v1 + v2
    if spread == 0:
        return mean1 - mean2, 0.0, 0.0
    # in shares of the spread (no square of it vanishes)
    w1, w2 = v1 / spread, v2 / spread
    return mean1 - mean2, spread, 1 / (w1 * w1 / (n1 - 1) + w2 * w2 / (n2 - 1))


def welch_log_interval(x: Sequence[float], y: Sequence[float]) -> tuple[float, float] | None:
    """The 95 % interval of the ratio of ``x``'s geometric mean to ``y``'s,
    by Welch's t on the logs (at least two values a side, every one above
    0); None where it has none."""
    n1, n2 = len(x), len(y)
    if n1 < 2 or n2 < 2 or min(min(x), min(y)) <= 0:
        return None
    difference, spread, df = _welch(list(map(math.log, x)), list(map(math.log, y)))
    if spread == 0 or not math.isfinite(spread):
        return None
    reach = _t_critical(df) * math.sqrt(spread)
    low, high = exp_or_none(difference - reach), exp_or_none(difference + reach)
    return None if low is None or high is None else (low, high)


def welch_p_and_log_interval(
    x: Sequence[float], y: Sequence[float]
) -> tuple[float, tuple[float, float] | None]:
    """``(welch_p(x, y), welch_log_interval(x, y))``, the logs and their
    Welch statistics taken once where both read them (every value above 0)."""
    if len(x) < 2 or len(y) < 2 or min(min(x), min(y)) <= 0:
        return welch_p(x, y), welch_log_interval(x, y)
    difference, spread, df = _welch(list(map(math.log, x)), list(map(math.log, y)))
    if spread == 0:
        return (1.0 if difference == 0 else 0.0), None
    p_value = student_t_sf2(difference / math.sqrt(spread), df)
    if not math.isfinite(spread):
        return p_value, None
    reach = _t_critical(df) * math.sqrt(spread)
    low, high = exp_or_none(difference - reach), exp_or_none(difference + reach)
    return p_value, None if low is None or high is None else (low, high)


def student_t_sf2(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` (> 0, not only whole)
    degrees of freedom: the regularized incomplete beta I_x(df/2, 1/2) at
    x = df / (df + t²)."""
    if not math.isfinite(t):
        return 0.0
    return _incomplete_beta(df / 2, 0.5, df / (df + t * t))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued
    fraction (Numerical Recipes' betai and betacf, modified Lentz)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    # The two steps of each m written out, with the same arithmetic in the
    # same order: a verdict's Welch test and its 5 % point call this five
    # times, and a page of runs side by side judges hundreds of cells.
    a_plus_b = a + b
    for m in range(1, 300):
        a_2m = a + 2 * m
        numerator = m * (b - m) * x / ((a_2m - 1) * a_2m)
        d = 1.0 + numerator * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + numerator / c
        c = c if abs(c) > tiny else tiny
        result *= c * d
        numerator = -(a + m) * (a_plus_b + m) * x / (a_2m * (a_2m + 1))
        d = 1.0 + numerator * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + numerator / c
        c = c if abs(c) > tiny else tiny
        result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def median_of_sorted(ordered: Sequence[float]) -> float:
    """statistics.median of values already in order, without sorting them
    again: the middle one, or the mean of the two middle ones."""
    n = len(ordered)
    if n % 2:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def exp_or_none(value: float) -> float | None:
    """e**value, or None beyond a double (a ratio's bound of 1e18 / 5e-324)."""
    return math.exp(value) if value < _LARGEST_LOG else None


_LARGEST_LOG = math.log(sys.float_info.max)


def bootstrap_ratios(candidate: list[float], reference: list[float], rng: random.Random):
    """Ratios of the medians of resamples (with replacement) of each side;
    resamples whose reference median is 0 are left out."""
    ratios = []
    for _ in range(BOOTSTRAP_ROUNDS):
        denominator = statistics.median(_resample(reference, rng))
        numerator = statistics.median(_resample(candidate, rng))
        if denominator:
            # inf when beyond a double: still on its side of 1 for the p-value
            ratios.append(numerator / denominator)
    ratios.sort()
    return ratios


def seeded_bootstrap_ratios(
    candidate: list[float], reference: list[float], seed: int
) -> list[float]:
    """``bootstrap_ratios(candidate, reference, random.Random(seed))``, the same
    floats, without drawing and sorting 4,000 resamples per call. The indices
    drawn depend on the sides' sizes and the seed alone, and a median depends
    on which values a resample holds, not their order: each distinct multiset
    of indices (10 for three repetitions, of 2,000 rounds) is taken a median
    of once, and each distinct pair of them divided once, as often as drawn.
    A page judging hundreds of cells of the same sizes (runs side by side:
    every metric at every point) draws once."""
    ratios: list[float] = []
    for ratio, count in multiset_ratio_counts(candidate, reference, seed):
        ratios.extend(repeat(ratio, count))
    return ratios


def multiset_ratio_counts(
    candidate: list[float], reference: list[float], seed: int
) -> list[tuple[float, int]]:
    """``seeded_bootstrap_ratios`` as (ratio, how many rounds drew it) in its
    order, the ratio of each pair of distinct resamples once."""
    reference_sets, candidate_sets, pairs = _bootstrap_multisets(
        len(reference), len(candidate), seed
    )
    denominators = [statistics.median([reference[i] for i in s]) for s in reference_sets]
    numerators = [statistics.median([candidate[i] for i in s]) for s in candidate_sets]
    drawn = sorted(
        (numerators[c] / denominators[r], count) for (r, c), count in pairs if denominators[r]
    )
    if any(math.isnan(ratio) for ratio, _ in drawn):
        # inf / inf (two medians beyond a double): NaN has no place in a sorted
        # list, and where the definition's sort leaves it is its own
        return [(ratio, 1) for ratio in bootstrap_ratios(candidate, reference, random.Random(seed))]  # noqa: S311
    return drawn


def _bootstrap_multisets(n_reference: int, n_candidate: int, seed: int) -> tuple:
    """Per side its distinct resamples (sorted index tuples), and each pair of
    them a round drew, with how many rounds drew it; from ``Random(seed)`` as
    bootstrap_ratios draws them (the reference's n indices, then the
    candidate's, each round). Kept for small sides only, as
    ``_resample_indices`` keeps its draws."""
    if max(n_reference, n_candidate) <= _KEPT_DRAWS:
        return _bootstrap_multisets_kept(n_reference, n_candidate, seed)
    return _bootstrap_multisets_kept.__wrapped__(n_reference, n_candidate, seed)


@lru_cache(maxsize=16)
def _bootstrap_multisets_kept(n_reference: int, n_candidate: int, seed: int) -> tuple:
    rng = random.Random(seed)  # noqa: S311 -- reproducible resampling, not a secret
    sides: tuple[dict[tuple[int, ...], int], dict[tuple[int, ...], int]] = ({}, {})
    pairs: Counter[tuple[int, int]] = Counter()
    for _ in range(BOOTSTRAP_ROUNDS):
        drawn = []
        for side, n in enumerate((n_reference, n_candidate)):
            multiset = tuple(sorted(_draw_indices(n, rng)))
            drawn.append(sides[side].setdefault(multiset, len(sides[side])))
        pairs[drawn[0], drawn[1]] += 1
    return tuple(sides[0]), tuple(sides[1]), tuple(pairs.items())


def _resample(population: list[float], rng: random.Random) -> Iterator[float]:
    """A resample with replacement of ``population``'s size: the values
    ``rng.choices(population, k=len(population))`` draws (``floor(random() *
    n)`` each, the same stream from the same seed), without a step of the
    interpreter per draw; a comparison's bootstraps make half a million."""
    return map(population.__getitem__, _draw_indices(len(population), rng))


def _draw_indices(n: int, rng: random.Random) -> Iterator[int]:
    """``floor(random() * n)``, n times: the indices ``rng.choices`` draws."""
    return map(math.floor, map(float(n).__mul__, starmap(rng.random, repeat((), n))))


@lru_cache(maxsize=8)
def _index_draws(n: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """The indices ``_resample`` draws for ``BOOTSTRAP_ROUNDS`` resamples of
    ``n`` values from ``Random(seed)``: they depend on nothing else, and a
    comparison judges every series' operations with the same seed."""
    rng = random.Random(seed)  # noqa: S311 -- reproducible resampling, not a secret
    return tuple(tuple(_draw_indices(n, rng)) for _ in range(BOOTSTRAP_ROUNDS))


def _resample_indices(n: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """``_index_draws``, kept for small ``n`` only (at most 8 x 2,000 x 128
    indices in memory); a larger one is drawn afresh."""
    if n <= _KEPT_DRAWS:
        return _index_draws(n, seed)
    return _index_draws.__wrapped__(n, seed)


_KEPT_DRAWS = 128


# Up to this many pairs of runs (20 against 20), the U test's own interval:
# 0.024 ms a cell, against 0.14 ms at 50 against 50 (a comparison can have
# hundreds of cells). Beyond it the order-statistic interval errs on the
# wide side (it held a true ratio 98 % of the time at 20 against 20).
_PAIRED_INTERVAL_LIMIT = 400


def u_interval(x: list[float], y: list[float], *, exact: bool) -> tuple[float | None, float | None]:
    """The ratio's 95 % interval beside a U test, from sorted positive runs.

    Up to _PAIRED_INTERVAL_LIMIT pairs, the test's own interval (Bauer 1972;
    R's wilcox.test with conf.int): of the m·n ratios x_i / y_j in order, the
    k-th from each end, where k is the largest count with P(U < k) ≤ 2.5 %
    under the null (``exact``: the test's exact distribution, as the test
    was; else the normal approximation). Where no k exists (2 runs against 2, or against 3: even
    U = 0 is more likely than 2.5 %), no 95 % interval is bounded, and none
    is given (None, None). Beyond the limit, the medians' order-statistic
    interval, whose coverage holds at such sizes and costs no m·n list."""
    m, n = len(x), len(y)
    if m * n > _PAIRED_INTERVAL_LIMIT:
        return _order_statistic_interval(x, y)
    if x[0] <= 0 or y[0] <= 0:
        return None, None
    k = _u_critical_count(m, n, exact=exact)
    if k < 1:
        return None, None
    log_x = [math.log(v) for v in x]
    log_y = [math.log(v) for v in y]
    differences = sorted(a - b for a in log_x for b in log_y)
    return exp_or_none(differences[k - 1]), exp_or_none(differences[m * n - k])


def _u_critical_count(m: int, n: int, *, exact: bool) -> int:
    """The largest k with P(U <= k - 1) <= ALPHA / 2 under the null, for
    samples of m and n: by U's exact distribution, or by the normal
    approximation; 0 when none."""
    if exact:
        total = math.comb(m + n, m)
        below = 0
        for k in range(m * n + 1):
            below += _arrangements(m, n, k)
            if below / total > ALPHA / 2:
                return k
        return m * n
    half_width = 1.96 * math.sqrt(m * n * (m + n + 1) / 12)
    return max(0, math.floor(m * n / 2 - half_width))


def _order_statistic_interval(x: list[float], y: list[float]) -> tuple[float | None, float | None]:
    """The ratio's 95 % interval without resampling (2,000 resamples of 400
    runs cost a second a cell): each median's distribution-free interval
    (the order statistics n/2 ± 1.96 √n / 2) gives the spread of its
    logarithm, and the two spreads add. Only for positive values (a
    logarithm), else no interval."""
    # each side sorted once: its smallest value, its order statistics, its median
    ordered_x, ordered_y = sorted(x), sorted(y)
    if ordered_x[0] <= 0 or ordered_y[0] <= 0:
        return None, None
    mx, vx = _log_median_and_variance(ordered_x)
    my, vy = _log_median_and_variance(ordered_y)
    margin = 1.96 * math.sqrt(vx + vy)
    return exp_or_none(mx - my - margin), exp_or_none(mx - my + margin)


def _log_median_and_variance(ordered: list[float]) -> tuple[float, float]:
    n = len(ordered)
    half_width = 1.96 * math.sqrt(n) / 2
    lo = ordered[max(0, math.floor(n / 2 - half_width))]
    hi = ordered[min(n - 1, math.ceil(n / 2 + half_width))]
    spread = (math.log(hi) - math.log(lo)) / (2 * 1.96)
    return math.log(median_of_sorted(ordered)), spread**2


def quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    position = q * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def one_sample_t(logs: list[float]) -> tuple[float, float, float]:
    """The two-sided p of Student's t test that the mean of ``logs`` (at
    least two) is 0, and the mean's 95 % interval by the same t."""
    n = len(logs)
    mean = math.fsum(logs) / n
    error = math.sqrt(math.fsum((v - mean) * (v - mean) for v in logs) / (n - 1) / n)
    if error == 0 or not math.isfinite(error):
        return (1.0 if mean == 0 else 0.0), mean, mean
    reach = _t_critical(n - 1) * error
    return student_t_sf2(mean / error, n - 1), mean - reach, mean + reach


@lru_cache(maxsize=256)
def _t_critical(df: float) -> float:
    """t with P(|T| >= t) = ALPHA for ``df`` (> 0, not only whole) degrees
    of freedom: Newton's steps on the tail from the Cornish-Fisher start,
    kept inside a bracket that bisection narrows where a step leaves it."""
    z = 1.959963984540054  # the normal's two-sided 5 % point
    t = (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )
    low, high = 0.0, 1e6
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    for _ in range(100):
        tail = student_t_sf2(t, df)
        if tail > ALPHA:
            low = t
        else:
            high = t
        if abs(tail - ALPHA) <= 1e-15 or high - low <= 1e-12 * high:
            break
        density = math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))
        step = t + (tail - ALPHA) / (2 * density)
        t = step if low < step < high else (low + high) / 2
    return t


EXACT_SIGN_FLIPS = 10  # 1,024 sign patterns, about 1 ms


def sign_flip_p(logs: list[float]) -> float:
    """Two-sided exact p of the sign-flip test that the logs are symmetric
    about 0: the share of the 2^n sign patterns whose sum is at least as far
    from 0 as the observed one (which is among them: p >= 2 / 2^n). A
    relative tolerance of 1e-9 counts sums equal but for rounding as ties."""
    observed = abs(math.fsum(logs)) * (1 - 1e-9)
    n = len(logs)
    far = 0
    for pattern in range(1 << n):
        total = math.fsum(-v if pattern >> i & 1 else v for i, v in enumerate(logs))
        far += abs(total) >= observed
    return far / (1 << n)


def sign_flip_interval(logs: list[float]) -> tuple[float | None, float | None]:
    """The ratios the sign-flip test does not reject, each side at 2.5 %:
    of the means of the 2^n - 1 nonempty subsets of the logs, sorted, the
    k-th from each end, k = floor(2^n * 0.025) (Hartigan 1969: for logs
    symmetric about their true mean, that mean falls in each of the 2^n
    gaps between them with probability 1 / 2^n, so outside with 2k / 2^n,
    at most 5 %). At least 6 logs (k >= 1): fewer are insufficient data
    before any test."""
    n = len(logs)
    k = int((1 << n) * ALPHA / 2)
    means = sorted(
        math.fsum(v for i, v in enumerate(logs) if subset >> i & 1) / bin(subset).count("1")
        for subset in range(1, 1 << n)
    )
    return exp_or_none(means[k - 1]), exp_or_none(means[-k])


# --- Mann-Whitney U -----------------------------------------------------------------


@dataclass(frozen=True)
class UTest:
    u: float  # U of the first sample
    p_value: float  # two-sided
    exact: bool


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> UTest:
    """Two-sided Mann-Whitney U test, as scipy.stats.mannwhitneyu's default
    ("auto"): the exact distribution when a sample has at most 8 values and
    there are no ties, otherwise the normal approximation with the tie
    correction and a continuity correction."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    n = n1 + n2
    # U is the rank sum of x less n1(n1+1)/2: how many y's each x beats, a
    # tie counting one half (mean ranks). The same number as the ranks give,
    # exactly (whole numbers and halves).
    combined = sorted([*x, *y])  # two sorted runs from a verdict: merged
    ordered_y = sorted(y)
    # the y's each x beats, counted by bisection in sorted y
    beaten = sum(map(bisect_left, repeat(ordered_y), x))
    if all(map(operator.lt, combined, combined[1:])):
        # No ties (each value below the next), the usual case: no tie term.
        u1 = float(beaten)
        if min(n1, n2) <= 8:
            return UTest(u1, _exact_p(beaten, n1, n2), exact=True)
        return _normal_approximation(u1, n1, n2, 0.0)
    # Ties: each x's ties count one half.
    u1 = (beaten + sum(map(bisect_right, repeat(ordered_y), x))) / 2
    # the groups of tied values: equal values share one rank (a value
    # alone adds 0, and most are alone: only the others are summed)
    tied = filter((1).__lt__, Counter(combined).values())
    return _normal_approximation(u1, n1, n2, sum(t**3 - t for t in tied) / (n * (n - 1)))


def _normal_approximation(u1: float, n1: int, n2: int, tie_term: float) -> UTest:
    """The two-sided p of U with the tie correction (``tie_term``: the sum of
    t³ - t over the groups of t tied values, over n(n - 1)) and a continuity
    correction."""
    u2 = n1 * n2 - u1
    u = max(u1, u2)
    mean = n1 * n2 / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:
        return UTest(u1, 1.0, exact=False)  # every value the same
    z = (u - mean - 0.5) / math.sqrt(variance)
    p = min(1.0, 2 * _normal_sf(z))
    return UTest(u1, p, exact=False)


def _exact_p(u: int, n1: int, n2: int) -> float:
    """Two-sided exact p: twice the smaller tail of U's null distribution."""
    total = math.comb(n1 + n2, n1)
    u = max(u, n1 * n2 - u)  # the upper tail
    upper = sum(_arrangements(n1, n2, k) for k in range(u, n1 * n2 + 1))
    return min(1.0, 2 * upper / total)


@cache
def _arrangements(n1: int, n2: int, u: int) -> int:
    """How many orderings of n1 x's and n2 y's give U = u."""
    if u < 0 or u > n1 * n2:
        return 0
    if n1 == 0 or n2 == 0:
        return 1 if u == 0 else 0
    # The largest value is an x (it beats all n2 y's) or a y (it adds nothing).
    return _arrangements(n1 - 1, n2, u - n2) + _arrangements(n1, n2 - 1, u)


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))
