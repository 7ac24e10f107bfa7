"""Percentiles from merged histograms, never from averaged percentiles."""

from __future__ import annotations

import random
import statistics

import pytest
from benchhub_agent.histogram import Histogram, bucket_bounds, bucket_of


def exact_percentile(values: list[int], percent: float) -> float:
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * percent // 100))
    return ordered[int(rank) - 1] / 1000


def test_every_value_falls_in_its_bucket_within_one_sixty_fourth():
    for micros in [*range(0, 300), 1023, 1024, 65_535, 1_000_000, 123_456_789]:
        low, high = bucket_bounds(bucket_of(micros))
        assert low <= micros < high
        assert high - low <= max(1, low / 64)


def test_merged_percentiles_match_the_whole_population():
    rng = random.Random(4)
    fast = [rng.randint(200, 400) for _ in range(9000)]  # one client, quick
    slow = [rng.randint(20_000, 40_000) for _ in range(1000)]  # another, stuck on locks
    parts = []
    for values in (fast, slow):
        histogram = Histogram()
        for v in values:
            histogram.record(v)
        parts.append(histogram)
    merged = Histogram.merged(parts)
    everything = fast + slow
    for percent in (50, 95, 99):
        exact = exact_percentile(everything, percent)
        assert abs(merged.percentile_ms(percent) - exact) <= exact / 64 + 0.001
    averaged_p99 = (parts[0].percentile_ms(99) + parts[1].percentile_ms(99)) / 2
    assert abs(averaged_p99 - exact_percentile(everything, 99)) > 1  # why we merge
    assert merged.count == 10_000
    assert merged.max_ms() == max(everything) / 1000
    assert abs(merged.mean_ms() - sum(everything) / len(everything) / 1000) < 1e-9


def test_histograms_survive_the_trip_between_processes():
    histogram = Histogram()
    for v in (5, 500, 50_000):
        histogram.record(v)
    copy = Histogram.from_dict(histogram.to_dict())
    assert copy == histogram


def test_standard_deviation_is_exact_and_survives_merging():
    values = [1200, 1500, 900, 30_000, 2_100, 1_800]
    left, right = Histogram(), Histogram()
    for v in values[:3]:
        left.record(v)
    for v in values[3:]:
        right.record(v)

    merged = Histogram.merged([left, right])

    assert merged.stddev_ms() == pytest.approx(statistics.stdev(values) / 1000)
    assert Histogram.from_dict(merged.to_dict()).stddev_ms() == merged.stddev_ms()
