import pytest

from benchhub.baselines.statistics import outlier_score, percentile_rank, summarize


def test_summary_of_known_values():
    summary = summarize([5.0, 1.0, 3.0, 2.0, 4.0])

    assert (summary.n, summary.median, summary.minimum, summary.maximum) == (5, 3.0, 1.0, 5.0)
    assert (summary.q1, summary.q3) == (2.0, 4.0)
    assert summary.mad == 1.0  # |x - 3| = 2,2,0,1,1 → median 1


def test_single_value_is_its_own_baseline():
    summary = summarize([7.5])

    assert (summary.median, summary.q1, summary.q3, summary.mad) == (7.5, 7.5, 7.5, 0.0)


def test_outlier_score_is_the_modified_z_score():
    summary = summarize([10.0, 11.0, 12.0, 13.0, 14.0])  # median 12, MAD 1

    assert outlier_score(12.0, summary) == 0.0
    assert outlier_score(22.0, summary) == pytest.approx(6.745)
    assert outlier_score(2.0, summary) == pytest.approx(-6.745)


def test_too_few_results_are_not_scored():
    assert outlier_score(100.0, summarize([1.0, 2.0, 3.0])) is None


@pytest.mark.parametrize(
    ("value", "direction", "expected"),
    [
        (35.0, "higher", 50.0),  # beats 10,20 of 10,20,40,50
        (35.0, "lower", 50.0),  # beats 40,50
        (60.0, "higher", 100.0),
        (60.0, "lower", 0.0),
        (20.0, "higher", 37.5),  # beats 10, ties 20 (half)
        (20.0, "none", 37.5),
    ],
)
def test_percentile_follows_the_metric_direction(value, direction, expected):
    assert percentile_rank(value, [10.0, 20.0, 40.0, 50.0], direction) == expected


def test_two_values_have_their_interpolated_quartiles_not_the_median():
    # statistics.quantiles(inclusive) of 10, 30: a quarter and three quarters of the way.
    summary = summarize([30.0, 10.0])

    assert (summary.median, summary.q1, summary.q3) == (20.0, 15.0, 25.0)
    assert (summary.minimum, summary.maximum, summary.mad) == (10.0, 30.0, 10.0)


def test_scoring_starts_at_exactly_five_results():
    four, five = [10.0, 11.0, 13.0, 14.0], [10.0, 11.0, 12.0, 13.0, 14.0]

    assert outlier_score(22.0, summarize(four)) is None
    assert outlier_score(22.0, summarize(five)) == pytest.approx(6.745)


def test_no_spread_is_not_scored_however_many_results():
    assert outlier_score(5.0, summarize([4.0] * 9 + [6.0])) is None  # MAD 0


def test_the_score_is_in_units_of_the_median_absolute_deviation():
    summary = summarize([18.0, 10.0, 14.0, 16.0, 12.0])  # median 14, MAD 2

    assert outlier_score(24.0, summary) == pytest.approx(0.6745 * 10 / 2)
