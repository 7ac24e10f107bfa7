"""Is a difference real? The same rule as the server's comparisons, for ``run --like``.

A copy of ``benchhub/comparisons/verdicts.py`` (the agent does not import
server code); ``tests/agent/test_verdict_mirror.py`` fails when the two differ
below this docstring. The server's description of the rule:

Is a difference real? One cell of a comparison against the reference's
cell at the same x. Pure Python, standard library only (no Django): the
agent's ``--like`` verdict can carry a copy of this module as it is.

The unit of replication is the run: each side is a list of runs, each run
its value at this point and the samples of its repetitions.

- Both sides with at least ``MIN_RUNS_FOR_U`` runs: the Mann-Whitney U test
  (two-sided) on the runs' values; the effect is the ratio of the medians,
  its 95 % interval from each median's distribution-free interval (order
  statistics), combined on the log scale.
- Fewer runs: a bootstrap of the ratio of medians from the runs' repetition
  samples (a run without samples counts as its one value); the p-value is
  the two-sided bootstrap share on the other side of 1, or Welch's t
  test's of the same samples where that is larger (a bootstrap of three
  repetitions against three, where nothing differs, said p < 0.05 16 % of
  the time). Sides without a repeated run go to the U test whatever their
  size (the server's text says why: a bootstrap of two values a side is no
  test).
- A side that is a single unrepeated value: ``insufficient data``, never a
  winner.

A difference counts when it is significant (p < ``ALPHA``) *and* the ratio
is at least ``minimum_effect`` away from 1 (asv's minimum factor): a 0.3 %
difference measured a million times is ``within noise`` for a reader.
Bootstraps are seeded, so the same data give the same verdict every time.
"""

from __future__ import annotations

import math
import operator
import random
import statistics
import struct
import sys
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from itertools import repeat, starmap
from typing import NamedTuple

ALPHA = 0.05
MIN_RUNS_FOR_U = 4
DEFAULT_MINIMUM_EFFECT = 0.05
BOOTSTRAP_ROUNDS = 2000
SEED = 20260101

BETTER, WORSE, WITHIN_NOISE = "better", "worse", "within noise"
HIGHER, LOWER = "higher", "lower"
INSUFFICIENT = "insufficient data"
MANN_WHITNEY, BOOTSTRAP, SIGN_FLIP = "mann-whitney-u", "bootstrap", "sign-flip"


class RunValues(NamedTuple):
    """One run at one point: its value and its repetitions' samples. (A
    tuple: a comparison builds one per run per cell, tens of thousands.)"""

    value: float
    samples: tuple[float, ...] = ()

    @property
    def repeated(self) -> bool:
        return len(self.samples) >= 2


@dataclass(frozen=True)
class Verdict:
    verdict: str
    test: str | None  # MANN_WHITNEY, BOOTSTRAP, SIGN_FLIP, or None (insufficient data)
    p_value: float | None
    ratio: float | None  # median(candidate) / median(reference)
    ratio_low: float | None  # its 95 % interval
    ratio_high: float | None
    minimum_effect: float

    def as_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "test": self.test,
            "p_value": self.p_value,
            "ratio": self.ratio,
            "ratio_low": self.ratio_low,
            "ratio_high": self.ratio_high,
            "minimum_effect": self.minimum_effect,
        }


def verdict(
    candidate: Sequence[RunValues],
    reference: Sequence[RunValues],
    *,
    direction: str,
    minimum_effect: float = DEFAULT_MINIMUM_EFFECT,
    seed: int = SEED,
) -> Verdict:
    """``candidate`` against ``reference``; ``direction`` is the metric's
    ("higher" or "lower" is better, anything else has none)."""

    if _single_unrepeated(candidate) or _single_unrepeated(reference):
        return _insufficient(minimum_effect)
    return _verdict(
        [run.value for run in candidate],
        [run.value for run in reference],
        partial(_samples, candidate),
        partial(_samples, reference),
        direction,
        minimum_effect,
        seed,
        resampled=any(run.repeated for run in candidate) or any(run.repeated for run in reference),
    )


def values_verdict(
    candidate: Sequence[float],
    reference: Sequence[float],
    *,
    direction: str,
    minimum_effect: float = DEFAULT_MINIMUM_EFFECT,
    seed: int = SEED,
) -> Verdict:
    """``verdict`` of runs without repetition samples, given their values in
    run order: the same answer as ``verdict`` of ``RunValues(value)`` each,
    without building them (a comparison judges tens of thousands of runs)."""
    if len(candidate) <= 1 or len(reference) <= 1:  # a single unrepeated value
        return _insufficient(minimum_effect)
    return _verdict(
        candidate,
        reference,
        partial(list, candidate),
        partial(list, reference),
        direction,
        minimum_effect,
        seed,
        resampled=False,
    )


def _insufficient(minimum_effect: float, ratio: float | None = None) -> Verdict:
    return Verdict(INSUFFICIENT, None, None, ratio, None, None, minimum_effect)


def _verdict(
    candidate: Sequence[float],
    reference: Sequence[float],
    candidate_samples: Callable[[], list[float]],
    reference_samples: Callable[[], list[float]],
    direction: str,
    minimum_effect: float,
    seed: int,
    *,
    resampled: bool,
) -> Verdict:
    """Runs' values in, each side at least two runs or one repeated run; the
    samples a bootstrap resamples are asked for only when it runs, which is
    only when a run is ``resampled`` (repeated): else the U test judges."""
    # sorted once: the median, the ranks and the interval each sort again,
    # which is linear on sorted input
    x = sorted(candidate)
    y = sorted(reference)
    ratio = ratio_of(_median_of_sorted(x), _median_of_sorted(y))
    if ratio is None:
        # a ratio to zero, or beyond a double, says nothing
        return _insufficient(minimum_effect)
    if not resampled or (len(x) >= MIN_RUNS_FOR_U and len(y) >= MIN_RUNS_FOR_U):
        if 2 / math.comb(len(x) + len(y), len(x)) >= ALPHA:
            # Even the runs of one side all above the other's would not be
            # a difference at 5 % (2 against 2 to 7, 3 against 3 or 4): no
            # test can tell, and "within noise" would say it looked.
            return _insufficient(minimum_effect, ratio)
        test = mann_whitney_u(x, y)
        low, high = _u_interval(x, y, exact=test.exact)
        return _judged(ratio, direction, MANN_WHITNEY, test.p_value, low, high, minimum_effect)
    rng = random.Random(seed)  # noqa: S311 -- reproducible resampling, not a secret
    pooled_candidate, pooled_reference = candidate_samples(), reference_samples()
    ratios = _bootstrap_ratios(pooled_candidate, pooled_reference, rng)
    if not ratios:
        return _insufficient(minimum_effect, ratio)
    # Two-sided: the resamples on the far side of 1, with the +1 that keeps a
    # finite number of resamples from claiming p = 0. A bootstrap of a few
    # samples is overconfident (3 against 3 where nothing differs: p < 0.05
    # 16 % of the time), so p is never below Welch's t test of the same
    # samples, which holds its 5 % there.
    far = min(sum(1 for r in ratios if r <= 1), sum(1 for r in ratios if r >= 1))
    p_value = max(
        min(1.0, (2 * far + 1) / (len(ratios) + 1)),
        welch_p(pooled_candidate, pooled_reference),
    )
    low, high = _finite(_quantile(ratios, 0.025)), _finite(_quantile(ratios, 0.975))
    # and its interval never narrower than Welch's of the logs: a bootstrap's
    # alone could leave out 1 where the p said "within noise"
    welch = welch_log_interval(pooled_candidate, pooled_reference)
    if welch is not None and low is not None and high is not None:
        low, high = min(low, welch[0]), max(high, welch[1])
    return _judged(ratio, direction, BOOTSTRAP, p_value, low, high, minimum_effect)


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
    low, high = _exp(difference - reach), _exp(difference + reach)
    return None if low is None or high is None else (low, high)


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


def _median_of_sorted(ordered: Sequence[float]) -> float:
    """statistics.median of values already in order, without sorting them
    again: the middle one, or the mean of the two middle ones."""
    n = len(ordered)
    if n % 2:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def ratio_of(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator``, or None where that has no finite value:
    a zero denominator, or a quotient beyond a double (1e18 / 5e-324)."""
    if not denominator:
        return None
    return _finite(numerator / denominator)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _exp(value: float) -> float | None:
    """e**value, or None beyond a double (a ratio's bound of 1e18 / 5e-324)."""
    return math.exp(value) if value < _LARGEST_LOG else None


_LARGEST_LOG = math.log(sys.float_info.max)


def _judged(
    ratio: float,
    direction: str,
    test: str,
    p_value: float,
    low: float | None,
    high: float | None,
    minimum_effect: float,
) -> Verdict:
    significant = p_value < ALPHA and abs(ratio - 1) >= minimum_effect
    name = _name(ratio, direction) if significant else WITHIN_NOISE
    return Verdict(name, test, p_value, ratio, low, high, minimum_effect)


def _single_unrepeated(side: Sequence[RunValues]) -> bool:
    return len(side) == 0 or (len(side) == 1 and not side[0].repeated)


def _samples(side: Sequence[RunValues]) -> list[float]:
    return [s for run in side for s in (run.samples if run.samples else (run.value,))]


def _name(ratio: float, direction: str) -> str:
    if direction == "higher":
        return BETTER if ratio > 1 else WORSE
    if direction == "lower":
        return BETTER if ratio < 1 else WORSE
    return HIGHER if ratio > 1 else LOWER


def _bootstrap_ratios(candidate: list[float], reference: list[float], rng: random.Random):
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


def _u_interval(
    x: list[float], y: list[float], *, exact: bool
) -> tuple[float | None, float | None]:
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
    return _exp(differences[k - 1]), _exp(differences[m * n - k])


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
    if min(x) <= 0 or min(y) <= 0:
        return None, None

    def log_median_and_variance(values: list[float]) -> tuple[float, float]:
        ordered = sorted(values)
        n = len(ordered)
        half_width = 1.96 * math.sqrt(n) / 2
        lo = ordered[max(0, math.floor(n / 2 - half_width))]
        hi = ordered[min(n - 1, math.ceil(n / 2 + half_width))]
        spread = (math.log(hi) - math.log(lo)) / (2 * 1.96)
        return math.log(_median_of_sorted(ordered)), spread**2

    mx, vx = log_median_and_variance(x)
    my, vy = log_median_and_variance(y)
    margin = 1.96 * math.sqrt(vx + vy)
    return _exp(mx - my - margin), _exp(mx - my + margin)


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    position = q * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def geometric_mean_verdict(
    ratios: Sequence[float],
    *,
    direction: str,
    minimum_effect: float = DEFAULT_MINIMUM_EFFECT,
    seed: int = SEED,
) -> Verdict:
    """ClickBench's combined score: the geometric mean of per-operation
    ratios (candidate / reference). Each operation is one unit here: the
    question is whether the operations agree. Up to EXACT_SIGN_FLIPS
    operations, the p-value is the exact sign-flip test's (of the 2^n ways
    to give each log ratio a sign, the share whose mean is at least as far
    from 0): a bootstrap of so few units called three operations that agree
    a difference at p = 0.0005, where no test of three units can go below
    0.25. Its interval is the test's own (``_sign_flip_interval``), none
    below 6 operations, where no sign-flip test reaches 5 %; a bootstrap's
    held the true ratio in only 82-90 % of simulated draws of 6 to 10
    operations (tests/comparisons/test_geometric_mean_arithmetic.py).
    More operations: a seeded bootstrap over them for both, never more
    sure than Student's t test of the mean log ratio (the larger p, the
    wider interval: the bootstrap's alone held the true ratio in 89-93 %
    of draws of 11 to 20 operations). Fewer than two operations, or a
    ratio that is not positive, is insufficient data."""
    logs = _log_ratios(ratios)
    if logs is None:
        return _insufficient(minimum_effect)
    ratio = math.exp(statistics.fmean(logs))  # between the finite ratios'
    if 2 / (1 << len(logs)) >= ALPHA:
        # up to 5 operations: not even all agreeing would be a difference at 5 %
        return _insufficient(minimum_effect, ratio)
    if len(logs) <= EXACT_SIGN_FLIPS:
        low, high = _sign_flip_interval(logs)
        return _judged(ratio, direction, SIGN_FLIP, _sign_flip_p(logs), low, high, minimum_effect)
    means = _bootstrap_means(logs, seed)
    # the means at or below 0 and at or above it, counted by bisection
    far = min(bisect_right(means, 0.0), len(means) - bisect_left(means, 0.0))
    # Never more sure than the t test of the mean log ratio: a bootstrap's
    # interval of 11 to 20 units held the true ratio in only 89-93 % of
    # simulated draws.
    t_p, t_low, t_high = _one_sample_t(logs)
    p_value = max(min(1.0, (2 * far + 1) / (len(means) + 1)), t_p)
    low = _exp(min(_quantile(means, 0.025), t_low))
    high = _exp(max(_quantile(means, 0.975), t_high))
    return _judged(ratio, direction, BOOTSTRAP, p_value, low, high, minimum_effect)


def _one_sample_t(logs: list[float]) -> tuple[float, float, float]:
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


def geometric_mean_insufficient(
    ratios: Sequence[float], *, minimum_effect: float = DEFAULT_MINIMUM_EFFECT
) -> Verdict:
    """Insufficient data, with the ratio ``geometric_mean_verdict`` would
    give (None where it gives none): for a caller that knows before any test
    that the operations cannot be judged (a side with a single run), without
    the test's cost."""
    logs = _log_ratios(ratios)
    return _insufficient(minimum_effect, None if logs is None else math.exp(statistics.fmean(logs)))


def _log_ratios(ratios: Sequence[float]) -> list[float] | None:
    """The logs of ``ratios``; None for fewer than two, or one that is not
    positive and finite."""
    if len(ratios) < 2 or min(ratios) <= 0 or not all(map(math.isfinite, ratios)):
        return None
    return [math.log(r) for r in ratios]


EXACT_SIGN_FLIPS = 10  # 1,024 sign patterns, about 1 ms


def _sign_flip_p(logs: list[float]) -> float:
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


def _sign_flip_interval(logs: list[float]) -> tuple[float | None, float | None]:
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
    return _exp(means[k - 1]), _exp(means[-k])


def _bootstrap_means(logs: list[float], seed: int) -> list[float]:
    """The means of ``BOOTSTRAP_ROUNDS`` resamples of ``logs``, sorted, each
    ``math.fsum(resample) / n`` (statistics.fmean's own arithmetic)."""
    n = len(logs)
    if n <= _KEPT_DRAWS:
        return _packed_bootstrap_means(logs, seed)
    pick = logs.__getitem__
    return sorted(math.fsum(map(pick, drawn)) / n for drawn in _resample_indices(n, seed))


def _packed_bootstrap_means(logs: list[float], seed: int) -> list[float]:
    """``_bootstrap_means`` to the last bit, without a step of the
    interpreter per value drawn (a comparison of operations makes 2,000
    resamples per series; summing each with fsum was most of its scores).

    A double is an integer over a power of two, so over the largest
    denominator each log is an integer, and each resample's sum an exact
    integer: divided by that power of two (int / int rounds correctly, as
    fsum does) it is fsum's double. Every resample's sum comes out of one
    multiplication per log: ``_packed_counts`` holds, per index, how often
    each resample drew it, one byte-aligned lane per resample, wide enough
    that no lane carries into the next (the logs are shifted to be
    non-negative, and the shift added back)."""
    n = len(logs)
    fractions = [value.as_integer_ratio() for value in logs]
    denominator = max(d for _, d in fractions)
    scaled = [numerator * (denominator // d) for numerator, d in fractions]
    low = min(scaled)
    # bytes per lane: 8 when that is enough, so that struct reads the lanes
    width = max(8, ((max(scaled) - low) * n).bit_length() // 8 + 1)
    packed = sum(
        map(operator.mul, [value - low for value in scaled], _packed_counts(n, seed, width))
    )
    lanes = packed.to_bytes(BOOTSTRAP_ROUNDS * width, "little")
    if width == 8:
        sums = sorted(struct.unpack(f"<{BOOTSTRAP_ROUNDS}Q", lanes))
    else:
        sums = sorted(
            int.from_bytes(lanes[at : at + width], "little") for at in range(0, len(lanes), width)
        )
    shift = low * n
    # sorted as integers, so sorted as the doubles they round to
    return [(total + shift) / denominator / n for total in sums]


@lru_cache(maxsize=4)
def _packed_counts(n: int, seed: int, width: int) -> tuple[int, ...]:
    """Per index of ``_index_draws(n, seed)``: how often each resample drew
    it, resample r's count in byte r x ``width`` of one integer. (n at most
    ``_KEPT_DRAWS``: a count fits in its byte; 46 operations take 0.8 MB.)"""
    rounds = BOOTSTRAP_ROUNDS * width
    packed = []
    for drawn in _draw_counts(n, seed):
        lanes = bytearray(rounds)
        lanes[::width] = drawn
        packed.append(int.from_bytes(lanes, "little"))
    return tuple(packed)


@lru_cache(maxsize=8)
def _draw_counts(n: int, seed: int) -> tuple[bytes, ...]:
    """Per index, how often each of ``_index_draws(n, seed)``'s resamples drew it."""
    counts = [bytearray(BOOTSTRAP_ROUNDS) for _ in range(n)]
    for at, drawn in enumerate(_index_draws(n, seed)):
        for index in drawn:
            counts[index][at] += 1
    return tuple(map(bytes, counts))


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
    position = dict(zip(combined, range(n), strict=True))  # the last of equal values
    if len(position) == n:
        # No ties, the usual case: an x's position in the combined order
        # less the x's before it is how many y's it beats; no tie term.
        beaten = sum(map(position.__getitem__, x)) - n1 * (n1 - 1) // 2
        u1 = float(beaten)
        if min(n1, n2) <= 8:
            return UTest(u1, _exact_p(beaten, n1, n2), exact=True)
        return _normal_approximation(u1, n1, n2, 0.0)
    # Ties: the y's each x beats and ties, counted by bisection in sorted y.
    ordered_y = sorted(y)
    beaten = sum(map(partial(bisect_left, ordered_y), x))
    u1 = (beaten + sum(map(partial(bisect_right, ordered_y), x))) / 2
    # the groups of tied values: equal values share one rank
    return _normal_approximation(
        u1, n1, n2, sum(t**3 - t for t in Counter(combined).values()) / (n * (n - 1))
    )


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
