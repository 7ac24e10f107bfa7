"""Baselines as mergeable histograms. Pure functions.

A baseline keeps, per bucket, how many of its pooled values fall in it: an
approval adds its run's values (+1 per value to their buckets), a rejection
or deletion takes them away (-1), and nothing else is read. The buckets are
decimal and log-spaced: a value is counted at its rounding to
``SIGNIFICANT_DIGITS`` significant digits (1234.567 → 1235, 0.012344 →
0.01234), so a bucket is at most 0.1 % wide and every value is within
``RELATIVE_ERROR`` (0.05 %) of the bucket it counts in. Values that already
have 4 significant digits or fewer (1000, 2500, 0.125) are counted exactly.

Every statistic is then the *exact* statistic of the rounded values, which
bounds its error against the unrounded ones (ε = RELATIVE_ERROR; tested in
tests/baselines/test_histogram.py on skewed random data):

- minimum, maximum, q1, median, q3: rounding is monotone, so each order
  statistic of the rounded values is the rounding of the exact one: within
  ε of it, relatively (an interpolated quartile or the median of an even
  count: within ε times the larger magnitude of the two values it
  averages);
- MAD: |MAD' - MAD| ≤ ε·MAD + 2ε·M, M the larger magnitude of the (two)
  middle values (each deviation moves by at most ε|v| + ε·M ≤ ε·d + 2ε·M);
- percentile rank: exact for every result not in the value's bucket; the
  results in it count half, as ties do, so the rank differs from the exact
  one by at most 50 times the share of results in that bucket;
- n is exact.

The nightly full recompute builds the same buckets from the data, so the
incremental and the full path give the same numbers, bit for bit.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate

from benchhub.baselines.statistics import Summary

SIGNIFICANT_DIGITS = 4
RELATIVE_ERROR = 0.5 * 10 ** (1 - SIGNIFICANT_DIGITS)  # half a unit of the last digit: 0.05 %
_FORMAT = f".{SIGNIFICANT_DIGITS - 1}e"


def bucket_of(value: float) -> float | None:
    """The bucket a value counts in: its correctly rounded decimal with
    SIGNIFICANT_DIGITS significant digits. None for a value that is not a
    finite number (it is counted nowhere)."""
    if not math.isfinite(value):
        return None
    if value == 0:
        return 0.0  # one bucket for 0.0 and -0.0
    return float(format(value, _FORMAT))


def _order_statistic(values: Sequence[float], cumulative: Sequence[int], k: int) -> float:
    """The k-th smallest (0-based) of the values each counted as often as
    its bucket says; ``cumulative`` holds the running totals of the counts."""
    return values[bisect_right(cumulative, k)]


def summarize_buckets(buckets: Iterable[tuple[float, int]]) -> Summary | None:
    """The summary of a histogram: the same numbers (bit for bit) as
    statistics.summarize over the list in which every bucket's value is
    repeated ``count`` times. Reads each bucket once, never that list.
    None for an empty histogram."""
    pairs = sorted((value, count) for value, count in buckets if count > 0)
    if not pairs:
        return None
    values = [value for value, _ in pairs]
    cumulative = list(accumulate(count for _, count in pairs))
    n = cumulative[-1]

    def at(k: int) -> float:
        return _order_statistic(values, cumulative, k)

    median = _median(at, n)
    if n >= 2:
        # statistics.quantiles(n=4, method="inclusive"), step by step.
        m = n - 1
        quartiles = []
        for i in (1, 3):
            j, delta = divmod(i * m, 4)
            quartiles.append((at(j) * (4 - delta) + at(j + 1) * delta) / 4)
        q1, q3 = quartiles
    else:
        q1 = q3 = median

    deviations = sorted((abs(value - median), count) for value, count in pairs)
    dev_values = [d for d, _ in deviations]
    dev_cumulative = list(accumulate(c for _, c in deviations))
    mad = _median(lambda k: _order_statistic(dev_values, dev_cumulative, k), n)
    return Summary(n, median, q1, q3, values[0], values[-1], mad)


def _median(at, n: int) -> float:
    """statistics.median's rule: the middle one, or the mean of the two."""
    if n % 2:
        return at(n // 2)
    return (at(n // 2 - 1) + at(n // 2)) / 2


def percentile_from_counts(below: int, same: int, above: int, direction: str) -> float:
    """statistics.percentile_rank from counts: the share (in %) of results a
    value does better than, by the metric's direction, the results in its
    own bucket counting half (ties)."""
    n = below + same + above
    better = above if direction == "lower" else below
    return 100.0 * (better + same / 2) / n
