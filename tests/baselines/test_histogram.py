"""The histogram's numbers: the exact statistics of the rounded values, and
within the stated bounds (baselines/histogram.py) of the unrounded ones."""

from __future__ import annotations

import math
import statistics
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchhub.baselines.histogram import (
    RELATIVE_ERROR,
    bucket_of,
    percentile_from_counts,
    summarize_buckets,
)
from benchhub.baselines.statistics import percentile_rank, summarize


def histogram(values):
    return Counter(bucket_of(v) for v in values).items()


# Skewed: mostly a cluster, some repeats, a few far away, both signs and zero.
cluster = st.floats(min_value=990, max_value=1010, allow_nan=False)
anywhere = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
skewed = st.lists(
    st.one_of(cluster, cluster, cluster, st.sampled_from([1000.0, 0.0, 1e-3]), anywhere),
    min_size=1,
    max_size=300,
)


def test_buckets_are_four_significant_digits():
    assert [bucket_of(v) for v in (1234.567, 0.012344, 1000.0, -2.5e-7, -0.0)] == [
        1235.0,
        0.01234,
        1000.0,
        -2.5e-7,
        0.0,
    ]
    assert bucket_of(math.inf) is None and bucket_of(math.nan) is None


def test_a_summary_of_buckets_is_the_summary_of_its_values_repeated():
    summary = summarize_buckets([(3.0, 2), (1.0, 1), (10.0, 1), (2.0, 0)])
    assert summary == summarize([1.0, 3.0, 3.0, 10.0])
    assert (summary.n, summary.median, summary.mad) == (4, 3.0, 1.0)
    assert summarize_buckets([]) is None


@settings(max_examples=300, deadline=None)
@given(skewed)
def test_the_histogram_gives_the_exact_statistics_of_the_rounded_values(values):
    assert summarize_buckets(histogram(values)) == summarize([bucket_of(v) for v in values])


@settings(max_examples=300, deadline=None)
@given(skewed)
def test_the_histogram_stays_within_its_stated_error_of_the_exact_statistics(values):
    exact = summarize(values)
    approx = summarize_buckets(histogram(values))
    ordered = sorted(values)
    eps = RELATIVE_ERROR * (1 + 1e-12)
    assert approx.n == exact.n
    for name in ("minimum", "maximum"):
        assert abs(getattr(approx, name) - getattr(exact, name)) <= eps * abs(getattr(exact, name))
    # Each order statistic moves by at most ε of its magnitude; an interpolated
    # one by ε of the larger magnitude it interpolates between.
    largest = max(abs(ordered[0]), abs(ordered[-1]))
    middle = max(abs(ordered[(len(ordered) - 1) // 2]), abs(ordered[len(ordered) // 2]))
    assert abs(approx.median - exact.median) <= eps * middle + 1e-9 * largest
    for name in ("q1", "q3"):
        assert abs(getattr(approx, name) - getattr(exact, name)) <= eps * largest + 1e-9
    assert abs(approx.mad - exact.mad) <= eps * exact.mad + 2 * eps * middle + 1e-9 * largest


@settings(max_examples=300, deadline=None)
@given(skewed, anywhere, st.sampled_from(["higher", "lower", "none"]))
def test_the_rank_is_exact_but_for_the_values_in_its_bucket(values, value, direction):
    bucket = bucket_of(value)
    below = sum(1 for v in values if bucket_of(v) < bucket)
    same = sum(1 for v in values if bucket_of(v) == bucket)
    exact = percentile_rank(value, sorted(values), direction)
    approx = percentile_from_counts(below, same, len(values) - below - same, direction)
    assert abs(approx - exact) <= 50 * same / len(values) + 1e-9
    if same == 0:
        assert approx == pytest.approx(exact)


def test_repeated_values_of_four_digits_are_exact():
    values = [1000.0] * 7 + [1200.0, 1500.0, 2500.0]
    assert summarize_buckets(histogram(values)) == summarize(values)
    assert statistics.median(values) == summarize_buckets(histogram(values)).median


# --- found by mutation testing (docs/testing.md) ----------------------------------------


def test_minus_zero_counts_in_the_one_bucket_of_zero_not_a_negative_one():
    assert math.copysign(1.0, bucket_of(-0.0)) == 1.0
    assert str(bucket_of(-0.0)) == "0.0"


def test_emptied_buckets_at_either_end_are_not_the_minimum_or_maximum():
    # a subtraction can leave a bucket at 0 before it is deleted
    summary = summarize_buckets([(0.5, 0), (3.0, 2), (1.0, 1), (10.0, 1), (99.0, 0)])
    assert summary == summarize([1.0, 3.0, 3.0, 10.0])
    assert (summary.minimum, summary.maximum) == (1.0, 10.0)


@pytest.mark.parametrize(
    ("direction", "expected"), [("higher", 30.0), ("lower", 70.0), ("none", 30.0)]
)
def test_the_rank_counts_the_values_in_its_own_bucket_half(direction, expected):
    # 2 below, 2 in the bucket, 6 above: (2 + 1) / 10, or (6 + 1) / 10 when lower is better
    assert percentile_from_counts(2, 2, 6, direction) == expected
