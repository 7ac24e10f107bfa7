"""Is a difference real? One cell of a comparison against the reference's
cell at the same x, or one run's point against another's (the agent's
``run --like``): the server and the agent both judge with this module.
Standard library only; the tests and intervals are in ``inference``.

The unit of replication is the run: each side is a list of runs, each run
its value at this point and the samples of its repetitions.

- Both sides with at least ``MIN_RUNS_FOR_U`` runs: the Mann-Whitney U test
  (two-sided) on the runs' values; the effect is the ratio of the medians,
  its 95 % interval the U test's own (``inference.u_interval``).
- Fewer runs: a bootstrap of the ratio of medians from the runs' repetition
  samples (a run without samples counts as its one value); the p-value is
  the two-sided bootstrap share on the other side of 1, or Welch's t
  test's of the same samples where that is larger (a bootstrap of three
  repetitions against three, where nothing differs, said p < 0.05 16 % of
  the time). Without a single repeated run there is nothing to resample but
  the runs' own values, two or three of them a side, whose bootstrap put
  every resample on one side of 1 and called two runs against two a winner
  at p = 0.0005: those are
  judged by the U test too, whose exact p (1/3 for two runs a side) says
  what so few runs can show.
- A side that is a single unrepeated value: ``insufficient data``, never a
  winner.

The words say what the test showed, with ``m`` the ``minimum_effect``
(asv's minimum factor, a fraction):

- ``better`` / ``worse`` (``higher`` / ``lower`` for a metric without a
  direction): significant (p < ``ALPHA``) *and* the ratio at least ``m``
  away from 1;
- ``equivalent``: the ratio's 95 % interval lies wholly inside
  (1 - m, 1 + m), so any difference the data allow is smaller than ``m``
  (the interval rule; two one-sided tests at 2.5 % each);
- ``inconclusive``: neither; the interval reaches past a bound, so the data
  cannot tell whether the difference reaches ``m`` (also where p < ``ALPHA``
  but the ratio is closer to 1 than ``m``). A 0.3 % difference measured a
  million times is ``equivalent``; a 71 % one with an interval of 0.86 to
  2.63 is ``inconclusive``, never "the same";
- ``insufficient data``: no test can tell (one unrepeated value, too few
  runs for any p below ``ALPHA``, a reference of 0).

Bootstraps are seeded, so the same data give the same verdict every time.

Values may be anything finite an upload carries (±1e18, 5e-324, zero): a
ratio or interval bound that has no finite value (1e18 / 5e-324) is None,
and a ratio of None is ``insufficient data``, never inf or NaN.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import NamedTuple

from .inference import (
    ALPHA,
    BOOTSTRAP_ROUNDS,
    EXACT_SIGN_FLIPS,
    exp_or_none,
    finite,
    mann_whitney_u,
    median_of_sorted,
    one_sample_t,
    quantile,
    sign_flip_interval,
    sign_flip_p,
    u_interval,
    welch_p_and_log_interval,
)
from .mean_bootstrap import bootstrap_means
from .ranked_bootstrap import bootstrap_counts, counted_quantile

__all__ = [
    "ALPHA",
    "BETTER",
    "BOOTSTRAP_ROUNDS",
    "DEFAULT_MINIMUM_EFFECT",
    "EQUIVALENT",
    "HIGHER",
    "INCONCLUSIVE",
    "INSUFFICIENT",
    "LOWER",
    "MIN_RUNS_FOR_U",
    "SEED",
    "WORSE",
    "RunValues",
    "Verdict",
    "geometric_mean_insufficient",
    "geometric_mean_verdict",
    "ratio_of",
    "values_verdict",
    "verdict",
]

MIN_RUNS_FOR_U = 4
DEFAULT_MINIMUM_EFFECT = 0.05
SEED = 20260101

BETTER, WORSE = "better", "worse"
HIGHER, LOWER = "higher", "lower"  # a difference, for a metric without a direction
EQUIVALENT, INCONCLUSIVE = "equivalent", "inconclusive"
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
    ratio = ratio_of(median_of_sorted(x), median_of_sorted(y))
    if ratio is None:
        # a ratio to zero, or beyond a double, says nothing
        return _insufficient(minimum_effect)
    if not resampled or (len(x) >= MIN_RUNS_FOR_U and len(y) >= MIN_RUNS_FOR_U):
        if _beyond_any_test(len(x), len(y)):
            # Even the runs of one side all above the other's would not be
            # a difference at 5 % (2 against 2 to 7, 3 against 3 or 4): no
            # test can tell, and "inconclusive" would say it looked.
            return _insufficient(minimum_effect, ratio)
        test = mann_whitney_u(x, y)
        low, high = u_interval(x, y, exact=test.exact)
        return _judged(ratio, direction, MANN_WHITNEY, test.p_value, low, high, minimum_effect)
    pooled_candidate, pooled_reference = candidate_samples(), reference_samples()
    # the bootstrap's ratios as (ratio, rounds that drew it), in order
    drawn = bootstrap_counts(pooled_candidate, pooled_reference, seed)
    total = sum(count for _, count in drawn)
    if not total:
        return _insufficient(minimum_effect, ratio)
    # Two-sided: the resamples on the far side of 1, with the +1 that keeps a
    # finite number of resamples from claiming p = 0. A bootstrap of a few
    # samples is overconfident (3 against 3 where nothing differs: p < 0.05
    # 16 % of the time), so p is never below Welch's t test of the same
    # samples, which holds its 5 % there. (Counted one by one: a NaN, which
    # is on neither side, may stand anywhere.)
    far = min(
        sum(count for r, count in drawn if r <= 1), sum(count for r, count in drawn if r >= 1)
    )
    welch_p_value, welch = welch_p_and_log_interval(pooled_candidate, pooled_reference)
    p_value = max(min(1.0, (2 * far + 1) / (total + 1)), welch_p_value)
    low = finite(counted_quantile(drawn, total, 0.025))
    high = finite(counted_quantile(drawn, total, 0.975))
    # and its interval never narrower than Welch's of the logs: a bootstrap's
    # alone could leave out 1 where the p said no difference
    if welch is not None and low is not None and high is not None:
        low, high = min(low, welch[0]), max(high, welch[1])
    return _judged(ratio, direction, BOOTSTRAP, p_value, low, high, minimum_effect)


@lru_cache(maxsize=4096)
def _beyond_any_test(m: int, n: int) -> bool:
    """Whether no arrangement of m runs against n is a difference at
    ``ALPHA``: the likeliest extreme one has p = 2 / C(m + n, m). Kept per
    pair of sizes: C(400, 200) has 120 digits, and a comparison judges
    hundreds of cells of the same sizes."""
    return 2 / math.comb(m + n, m) >= ALPHA


def ratio_of(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator``, or None where that has no finite value:
    a zero denominator, or a quotient beyond a double (1e18 / 5e-324)."""
    if not denominator:
        return None
    return finite(numerator / denominator)


def _judged(
    ratio: float,
    direction: str,
    test: str,
    p_value: float,
    low: float | None,
    high: float | None,
    minimum_effect: float,
) -> Verdict:
    if p_value < ALPHA and abs(ratio - 1) >= minimum_effect:
        name = _name(ratio, direction)
    elif _within_minimum_effect(low, high, minimum_effect):
        name = EQUIVALENT
    else:
        name = INCONCLUSIVE
    return Verdict(name, test, p_value, ratio, low, high, minimum_effect)


def _within_minimum_effect(low: float | None, high: float | None, minimum_effect: float) -> bool:
    """The interval lies strictly inside (1 - m, 1 + m): a bound on the edge
    allows a difference of m, which counts. No interval bounds nothing."""
    if low is None or high is None:
        return False
    return 1 - minimum_effect < low and high < 1 + minimum_effect


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
    0.25. Its interval is the test's own (``sign_flip_interval``), none
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
        low, high = sign_flip_interval(logs)
        return _judged(ratio, direction, SIGN_FLIP, sign_flip_p(logs), low, high, minimum_effect)
    means = bootstrap_means(logs, seed)
    # the means at or below 0 and at or above it, counted by bisection
    far = min(bisect_right(means, 0.0), len(means) - bisect_left(means, 0.0))
    # Never more sure than the t test of the mean log ratio: a bootstrap's
    # interval of 11 to 20 units held the true ratio in only 89-93 % of
    # simulated draws.
    t_p, t_low, t_high = one_sample_t(logs)
    p_value = max(min(1.0, (2 * far + 1) / (len(means) + 1)), t_p)
    low = exp_or_none(min(quantile(means, 0.025), t_low))
    high = exp_or_none(max(quantile(means, 0.975), t_high))
    return _judged(ratio, direction, BOOTSTRAP, p_value, low, high, minimum_effect)


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
