"""A latency histogram that merges exactly across clients and processes.

Percentiles of a concurrent run must come from all transactions together:
averaging each client's p99 gives a number no transaction ever had. Every
client records into its own histogram (no locking on the hot path); the
histograms are summed bucket by bucket and percentiles read from the sum.

Buckets are log-linear over integer microseconds, like HdrHistogram with 7
significant bits: exact below 128 µs, then 64 buckets per power of two, so a
percentile is off by at most 1/64 (1.6 %) of its value. Count, sum, sum of
squares, min and max are kept exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

_SUB_BITS = 6
_SUB = 1 << _SUB_BITS  # 64 buckets per power of two
_EXACT = 2 * _SUB  # values below this have a bucket each


def bucket_of(micros: int) -> int:
    if micros < _EXACT:
        return max(micros, 0)
    shift = micros.bit_length() - (_SUB_BITS + 1)
    return shift * _SUB + (micros >> shift)


def bucket_bounds(index: int) -> tuple[int, int]:
    """The [low, high) microseconds a bucket covers."""
    if index < _EXACT:
        return index, index + 1
    shift = index // _SUB - 1
    top = index % _SUB + _SUB
    return top << shift, (top + 1) << shift


@dataclass
class Histogram:
    counts: dict[int, int] = field(default_factory=dict)
    count: int = 0
    total_micros: int = 0
    total_sq_micros: int = 0
    min_micros: int | None = None
    max_micros: int = 0

    def record(self, micros: int) -> None:
        index = bucket_of(micros)
        self.counts[index] = self.counts.get(index, 0) + 1
        self.count += 1
        self.total_micros += micros
        self.total_sq_micros += micros * micros
        if micros > self.max_micros:
            self.max_micros = micros
        if self.min_micros is None or micros < self.min_micros:
            self.min_micros = micros

    def record_counts(self, exact: dict[int, int]) -> None:
        """Record every value of ``exact`` (microseconds → how many times it occurred).

        The engines' hot loops count exact values in a plain dict, one lookup per
        transaction instead of :meth:`record`'s two Python calls, and fold them in here
        once at the end: the same histogram, sums, minimum and maximum."""
        for micros, n in exact.items():
            index = bucket_of(micros)
            self.counts[index] = self.counts.get(index, 0) + n
            self.count += n
            self.total_micros += micros * n
            self.total_sq_micros += micros * micros * n
            if micros > self.max_micros:
                self.max_micros = micros
            if self.min_micros is None or micros < self.min_micros:
                self.min_micros = micros

    def merge(self, other: Histogram) -> None:
        for index, n in other.counts.items():
            self.counts[index] = self.counts.get(index, 0) + n
        self.count += other.count
        self.total_micros += other.total_micros
        self.total_sq_micros += other.total_sq_micros
        self.max_micros = max(self.max_micros, other.max_micros)
        if other.min_micros is not None:
            self.min_micros = (
                other.min_micros
                if self.min_micros is None
                else min(self.min_micros, other.min_micros)
            )

    @classmethod
    def merged(cls, parts: list[Histogram]) -> Histogram:
        result = cls()
        for part in parts:
            result.merge(part)
        return result

    def mean_ms(self) -> float:
        return self.total_micros / self.count / 1000 if self.count else 0.0

    def max_ms(self) -> float:
        return self.max_micros / 1000

    def stddev_ms(self) -> float:
        """Sample standard deviation, exact (from the sums, not the buckets)."""
        if self.count < 2:
            return 0.0
        mean = self.total_micros / self.count
        variance = (self.total_sq_micros - mean * self.total_micros) / (self.count - 1)
        return math.sqrt(max(variance, 0.0)) / 1000

    def percentile_ms(self, percent: float) -> float:
        """The value below which ``percent`` % of the transactions fall.

        Reported as the middle of its bucket, clamped to the exact min/max.
        """
        if not self.count:
            return 0.0
        rank = max(1, -(-self.count * percent // 100))  # ceil, at least the first value
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                low, high = bucket_bounds(index)
                middle = (low + high - 1) / 2
                clamped = min(max(middle, self.min_micros or 0), self.max_micros)
                return clamped / 1000
        return self.max_ms()

    def to_dict(self) -> dict[str, object]:
        return {
            "counts": self.counts,
            "count": self.count,
            "total_micros": self.total_micros,
            "total_sq_micros": self.total_sq_micros,
            "min_micros": self.min_micros,
            "max_micros": self.max_micros,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Histogram:
        return cls(**data)  # type: ignore[arg-type]
