"""A latency histogram that worker processes fill and the parent merges.

Percentiles of merged histograms are exact to the bucket width (1 %); averaging each
worker's percentile would not be a percentile of anything.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

BUCKETS_PER_E = 100  # bucket edges grow by a factor e**(1/100), about 1 %


@dataclass
class LatencyHistogram:
    count: int = 0
    total_ms: float = 0.0
    total_sq_ms: float = 0.0
    max_ms: float = 0.0
    buckets: Counter[int] = field(default_factory=Counter)

    def add(self, latency_ms: float) -> None:
        self.count += 1
        self.total_ms += latency_ms
        self.total_sq_ms += latency_ms * latency_ms
        self.max_ms = max(self.max_ms, latency_ms)
        # Microseconds keep the logarithm positive for any latency a database can show.
        self.buckets[int(math.log(max(latency_ms * 1000.0, 1.0)) * BUCKETS_PER_E)] += 1

    def merge(self, other: LatencyHistogram) -> None:
        self.count += other.count
        self.total_ms += other.total_ms
        self.total_sq_ms += other.total_sq_ms
        self.max_ms = max(self.max_ms, other.max_ms)
        self.buckets.update(other.buckets)

    @property
    def mean_ms(self) -> float:
        return self.total_ms / self.count if self.count else 0.0

    @property
    def stddev_ms(self) -> float:
        if self.count < 2:
            return 0.0
        variance = (self.total_sq_ms - self.total_ms * self.total_ms / self.count) / (
            self.count - 1
        )
        return math.sqrt(max(variance, 0.0))

    def percentile_ms(self, fraction: float) -> float:
        if not self.count:
            return 0.0
        rank = math.ceil(fraction * self.count)
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen >= rank:
                # The bucket's geometric middle, never above the slowest one seen.
                return min(math.exp((bucket + 0.5) / BUCKETS_PER_E) / 1000.0, self.max_ms)
        return self.max_ms
