"""Robust summaries of a set of results. Pure functions."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

# Below this many approved results a baseline is shown, but new results are
# not scored against it: a spread of three points says little.
MIN_RESULTS_TO_SCORE = 5


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float
    mad: float


def summarize(values: list[float]) -> Summary:
    ordered = sorted(values)
    median = statistics.median(ordered)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = median
    mad = statistics.median(abs(v - median) for v in ordered)
    return Summary(len(ordered), median, q1, q3, ordered[0], ordered[-1], mad)


def outlier_score(value: float, summary: Summary) -> float | None:
    """Iglewicz and Hoaglin's modified z-score, 0.6745 (x - median) / MAD.
    None when there are too few results, or no spread to measure against."""
    if summary.n < MIN_RESULTS_TO_SCORE or summary.mad == 0:
        return None
    return 0.6745 * (value - summary.median) / summary.mad


def percentile_rank(value: float, ordered: list[float], direction: str) -> float:
    """Share of results (in %) that ``value`` does better than, ties half.
    For direction 'none' it is the plain share below."""
    below = sum(1 for v in ordered if v < value)
    above = sum(1 for v in ordered if v > value)
    ties = len(ordered) - below - above
    better = above if direction == "lower" else below
    return 100.0 * (better + ties / 2) / len(ordered)
