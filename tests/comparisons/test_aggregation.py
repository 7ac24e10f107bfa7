"""A comparison's cell is the median of skewed data, not its mean."""

from __future__ import annotations

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

URL = "/api/v1/comparisons/"
THROUGHPUT = {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}


def test_a_cell_is_the_median_of_skewed_measurements(anonymous_api, bob):
    # One run far off the others (a cold cache, a noisy neighbour): the
    # median stays with the bulk, the mean would move to 2,776.
    for value in (100.0, 104.0, 101.0, 10_000.0, 102.0):
        submission_create(
            submitter=bob,
            document=sweep_document({8: value, "16": value * 2}),
            status=Submission.Status.APPROVED,
        )

    body = anonymous_api.get(URL, THROUGHPUT).json()

    cells = {point["x"]: point for point in body["series"][0]["points"]}
    assert (cells[8]["value"], cells[8]["n"], cells[8]["max"]) == (102.0, 5, 10_000.0)
    assert cells[16]["value"] == 204.0


def test_an_even_count_takes_the_mean_of_the_two_middle_values(anonymous_api, bob):
    for value in (1.0, 2.0, 4.0, 1000.0):
        submission_create(
            submitter=bob, document=sweep_document({1: value}), status=Submission.Status.APPROVED
        )

    body = anonymous_api.get(URL, THROUGHPUT).json()

    assert body["series"][0]["points"][0]["value"] == 3.0
