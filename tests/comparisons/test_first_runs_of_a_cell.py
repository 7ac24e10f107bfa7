"""A cell's runs for its verdict, read by PostgreSQL from its first rows in
sample order when no run has two measurements among them: the same runs,
values and measurement ids as grouping every run (the Python path), also
when the last run a verdict reads is the one with two measurements there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from benchhub.comparisons import aggregation, selectors
from benchhub.comparisons.aggregation import cells_from_rows
from benchhub.comparisons.in_database import cells_in_postgresql
from benchhub.comparisons.query import comparison_query_parse
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document


def upload(user, values: dict, doubled: float | None = None) -> None:
    document = sweep_document(values)
    if doubled is not None:  # a second measurement at 1 client, in another mode
        first = document["runs"][0]["measurements"][0]
        document["runs"][0]["measurements"].append(
            {**first, "parameters": {"clients": 1, "mode": "prepared"}, "value": doubled}
        )
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


@pytest.mark.parametrize("doubled_at", [0, 2, 4])
def test_a_run_measured_twice_in_a_cell_is_its_median_there_wherever_it_ranks(
    bob, monkeypatch, doubled_at
):
    scales = (1.0, 1.7, 0.6, 2.9, 1.15)
    for index, scale in enumerate(scales):
        doubled = 333.0 * scale if index == doubled_at else None
        upload(bob, {1: 100.0 * scale, 8: 410.0 * scale + index, 32: 397.5 / scale}, doubled)
    runs = sorted(Run.objects.values_list("id", flat=True), key=aggregation.run_sample_key)
    twice = Run.objects.order_by("id")[doubled_at].pk
    # The run measured twice is the last one a verdict reads: the rows one
    # beyond it are its own second measurement.
    monkeypatch.setattr(aggregation, "VERDICT_RUNS", runs.index(twice) + 1)
    query = comparison_query_parse(
        {"benchmark": ["select-update"], "metric": ["throughput"], "x": ["param.clients"]}
    )
    user = AnonymousUser()

    in_sql = cells_in_postgresql(selectors._measurements(user, query), query)
    in_python = cells_from_rows(query, selectors._rows(user, query))

    assert in_sql.runs.keys() == in_python.runs.keys()
    for key, expected in in_python.runs.items():
        got = in_sql.runs[key]
        assert list(got) == list(expected), key
        assert got.measurement_ids == expected.measurement_ids, key
        # percentile_cont and statistics.median may round a mean of two apart
        assert got.run_values == pytest.approx(expected.run_values, rel=1e-12), key
    cell = in_sql.runs["throughput", 1]
    index = list(cell).index(twice)
    assert cell.run_values[index] == pytest.approx(
        (100.0 * scales[doubled_at] + 333.0 * scales[doubled_at]) / 2, rel=1e-12
    )
    assert cell.measurement_ids[index] is None
