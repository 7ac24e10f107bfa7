"""The combined score's bootstrap (``verdicts.geometric_mean_verdict``): the
means of ``BOOTSTRAP_ROUNDS`` resamples of the operations' log ratios,
sorted, each ``math.fsum(resample) / n`` (statistics.fmean's own
arithmetic) to the last bit, without a step of the interpreter per value
drawn (a comparison of operations makes 2,000 resamples per series;
summing each with fsum was most of its scores).

A verdict reads few of the 2,000 means: two quantiles, and how many lie on
each side of 0 (by bisection, a dozen each). Up to ``_KEPT_DRAWS`` logs,
each mean is therefore computed only when read (``SortedMeans``): computing
them all was half of a series' score (0.36 of 0.91 ms for 46 operations).
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Iterator, Sequence
from functools import lru_cache

from .inference import _KEPT_DRAWS, BOOTSTRAP_ROUNDS, _index_draws, _resample_indices

__all__ = ["SortedMeans", "bootstrap_means"]


def bootstrap_means(logs: list[float], seed: int) -> Sequence[float]:
    """The means of ``BOOTSTRAP_ROUNDS`` resamples of ``logs``, sorted, each
    ``math.fsum(resample) / n``."""
    n = len(logs)
    if n <= _KEPT_DRAWS:
        return _packed_bootstrap_means(logs, seed)
    pick = logs.__getitem__
    return sorted(math.fsum(map(pick, drawn)) / n for drawn in _resample_indices(n, seed))


class SortedMeans(Sequence[float]):
    """Means in order, each computed when read from its resample's sum as
    an integer (``_packed_bootstrap_means``): ``(total + shift) /
    denominator / n``. The sums are sorted as integers, so the means are
    sorted as the doubles they round to."""

    __slots__ = ("_denominator", "_n", "_shift", "_sums")

    def __init__(self, sums: list[int], shift: int, denominator: int, n: int):
        self._sums, self._shift, self._denominator, self._n = sums, shift, denominator, n

    def __len__(self) -> int:
        return len(self._sums)

    def __getitem__(self, at):  # type: ignore[override]
        if isinstance(at, slice):
            return [self._mean(total) for total in self._sums[at]]
        return self._mean(self._sums[at])

    def __iter__(self) -> Iterator[float]:
        return map(self._mean, self._sums)

    def _mean(self, total: int) -> float:
        return (total + self._shift) / self._denominator / self._n


def _packed_bootstrap_means(logs: list[float], seed: int) -> SortedMeans:
    """``bootstrap_means`` to the last bit.

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
    return SortedMeans(sums, low * n, denominator, n)


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
