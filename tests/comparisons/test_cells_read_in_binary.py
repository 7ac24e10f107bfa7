"""The cells statement's rows come back in PostgreSQL's binary format (its
arrays of run ids, values and ids parse several times faster than as text),
with the statement's parameters written in as Django writes them, the
query counted like any other, and never prepared (as Django's client-side
cursor never prepares: each comparison's text is its own)."""

from __future__ import annotations

import psycopg
import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.comparisons import selectors
from benchhub.comparisons.aggregation import cells_from_rows
from benchhub.comparisons.in_database import cells_in_postgresql
from benchhub.comparisons.query import comparison_query_parse
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the cells statement is PostgreSQL's"
)


def test_the_cells_come_back_in_binary_counted_and_as_the_python_path_has_them(bob, monkeypatch):
    for scale in (1.0, 1.3, 0.7, 2.1, 1.05):
        document = sweep_document({1: 100.0 * scale, 8: 410.5 * scale, 32: 397.25 / scale})
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    query = comparison_query_parse(
        {"benchmark": ["select-update"], "metric": ["throughput"], "x": ["param.clients"]}
    )
    formats = []
    fetchall = psycopg.Cursor.fetchall

    def recording(cursor):
        formats.append(cursor.pgresult.fformat(0))
        return fetchall(cursor)

    monkeypatch.setattr(psycopg.Cursor, "fetchall", recording)
    measurements = selectors._measurements(AnonymousUser(), query)

    with CaptureQueriesContext(connection) as queries:
        in_sql = cells_in_postgresql(measurements, query)

    assert formats == [psycopg.pq.Format.BINARY]
    assert len(queries) == 2  # the settings, the cells
    assert "'approved'" in queries[1]["sql"]  # written in, as Django writes it
    in_python = cells_from_rows(query, selectors._rows(AnonymousUser(), query))
    assert in_sql.stats == in_python.stats
    for key, expected in in_python.runs.items():
        assert list(in_sql.runs[key]) == list(expected)
        assert in_sql.runs[key].run_values == expected.run_values
        assert in_sql.runs[key].measurement_ids == expected.measurement_ids


def test_the_cells_statement_is_never_prepared_however_often_it_runs(bob, settings):
    document = sweep_document({1: 100.0, 8: 410.5, 32: 397.25})
    submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    query = comparison_query_parse(
        {"benchmark": ["select-update"], "metric": ["throughput"], "x": ["param.clients"]}
    )
    measurements = selectors._measurements(AnonymousUser(), query)
    threshold = connection.settings_dict["OPTIONS"].get("prepare_threshold")
    assert threshold  # what the statement would be prepared after

    for _ in range(threshold + 2):
        cells_in_postgresql(measurements, query)

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%percentile_cont%"],
        )
        assert cursor.fetchone()[0] == 0
