"""Robust summaries of a set of results. Pure functions."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from benchhub.lib.spread import spread_of

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
    spread = spread_of(values)
    mad = statistics.median(abs(v - spread.median) for v in values)
    return Summary(spread.n, spread.median, spread.q1, spread.q3, spread.min, spread.max, mad)


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
