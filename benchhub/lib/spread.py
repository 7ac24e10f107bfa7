"""The one definition of a group's median, spread and n, for every page and
endpoint that shows a value per group (comparisons, benchmark and dimension
pages, baselines and what reads them).

n counts the values; the median is the middle value, or the mean of the two
middle ones for an even n (``statistics.median``); the quartiles are
interpolated, ``statistics.quantiles(method="inclusive")``, which is what
PostgreSQL's ``percentile_cont`` computes, so the in-database path of a
comparison gives the same numbers; min and max are the extremes.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Spread:
    n: int
    median: float
    q1: float
    q3: float
    min: float
    max: float


def spread_of(values: Iterable[float]) -> Spread:
    """The spread of ``values`` (at least one)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("a spread needs at least one value")
    median = statistics.median(ordered)
    if len(ordered) > 1:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = median
    return Spread(len(ordered), median, q1, q3, ordered[0], ordered[-1])
