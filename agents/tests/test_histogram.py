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


# --- exact figures (each of these failed against a one-line change that the tests
# above let through; docs/testing.md, mutation testing) ---------------------------


def histogram_of(*values: int) -> Histogram:
    histogram = Histogram()
    for value in values:
        histogram.record(value)
    return histogram


@pytest.mark.parametrize(
    ("percent", "expected_ms"),
    [(0, 0.003), (10, 0.003), (50, 0.011), (70, 0.012), (95, 0.090), (100, 0.090)],
)
def test_percentiles_of_exact_buckets_are_the_nth_value(percent, expected_ms):
    # below 128 µs every value has its own bucket: the percentile is the value
    # of rank ceil(n·p/100), at least the first; skewed, repeated, unordered
    histogram = histogram_of(90, 3, 12, 11, 11, 7, 40, 3, 11, 12)
    assert histogram.percentile_ms(percent) == pytest.approx(expected_ms, abs=1e-12)


def test_a_percentile_in_a_wide_bucket_is_clamped_to_the_exact_minimum_and_maximum():
    # 1007 µs lies in the bucket [1000, 1008) whose middle, 1003.5, is below it
    assert bucket_bounds(bucket_of(1007)) == (1000, 1008)
    histogram = histogram_of(1007, 1007)
    assert [histogram.percentile_ms(p) for p in (1, 50, 100)] == [1.007, 1.007, 1.007]
    # and 1001 µs: the middle is above it, clamped down to the maximum
    assert histogram_of(1001).percentile_ms(50) == 1.001


def test_an_empty_histogram_reads_zero_everywhere():
    empty = Histogram()
    assert (empty.mean_ms(), empty.stddev_ms(), empty.percentile_ms(99), empty.max_ms()) == (
        0.0,
        0.0,
        0.0,
        0.0,
    )


def test_standard_deviation_of_two_values_and_of_equal_values():
    # sample standard deviation of 1000 and 3000 µs: √((1000² + 1000²) / 1) = 1414.2 µs
    assert histogram_of(1000, 3000).stddev_ms() == pytest.approx(2**0.5, rel=1e-12)
    assert histogram_of(1000).stddev_ms() == 0.0
    assert histogram_of(500, 500, 500).stddev_ms() == 0.0


def test_min_and_max_are_exact_after_recording_and_merging():
    first, second = histogram_of(5000, 700, 900), histogram_of(40, 10_000)
    assert (first.min_micros, first.max_micros) == (700, 5000)

    first.merge(second)

    assert (first.min_micros, first.max_micros, first.count) == (40, 10_000, 5)
    assert first.mean_ms() == pytest.approx((5000 + 700 + 900 + 40 + 10_000) / 5 / 1000)
    first.merge(Histogram())  # an empty one changes nothing
    assert (first.min_micros, first.max_micros, first.count) == (40, 10_000, 5)


def test_merging_adds_the_counts_of_buckets_both_sides_have():
    first, second = histogram_of(11, 11, 2000), histogram_of(11, 2000, 2001)

    first.merge(second)

    assert first.counts == {11: 3, bucket_of(2000): 3}  # 2000 and 2001 share a bucket
    assert first.percentile_ms(50) == 0.011


def test_the_zeroth_percentile_is_the_first_value():
    assert histogram_of(9, 5).percentile_ms(0) == 0.005


def test_counted_exact_values_make_the_histogram_recording_each_would():
    # What the engines' loops keep: microseconds → occurrences, folded in at the end,
    # onto a histogram that already holds values (a warm-up's, another client's).
    exact = {4: 3, 127: 1, 128: 2, 9_999: 5, 250_003: 1, 61: 7}
    recorded, folded = Histogram(), Histogram()
    for histogram in (recorded, folded):
        histogram.record(700)
        histogram.record(33)
    for micros, n in exact.items():
        for _ in range(n):
            recorded.record(micros)
    folded.record_counts(exact)
    assert folded == recorded
    assert (folded.count, folded.min_micros, folded.max_micros) == (21, 4, 250_003)
