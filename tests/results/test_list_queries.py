"""Lists never load documents.

A submission's stored document may be 2 MB; one approved upload used to
slow every measurement list and CSV export down to timeouts, because each
row dragged its submission's document along. These tests pin, for every
list, the number of queries and that the document column is never read.
"""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.results import exports
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document

DOCUMENT_COLUMN = '"results_submission"."document"'
LONG_NOTE = "a note that makes the stored document large " * 80  # 3.6 kB, 4000 max


def store(user, runs: int = 1, status=Submission.Status.APPROVED) -> Submission:
    document = example_document()
    run = document["runs"][0]
    run["note"] = LONG_NOTE
    document["runs"] = [
        {**run, "parameters": {**run["parameters"], "rows": 100 + i}} for i in range(runs)
    ]
    return submission_create(submitter=user, document=document, status=status).submission


@pytest.fixture
def published(bob) -> list[Submission]:
    return [store(bob, runs=r) for r in (1, 3, 2)]


def selected_columns(sql: str, table: str) -> set[str]:
    """The columns of ``table`` a SELECT reads."""
    select = sql.split(" FROM ", 1)[0]
    return set(re.findall(rf'"{table}"\."(\w+)"', select))


@pytest.mark.parametrize(
    ("url", "queries"),
    [
        ("/api/v1/measurements/", 1),
        ("/api/v1/measurements/?page_size=1000", 1),
        ("/api/v1/measurements/?benchmark=select-update&param.clients=20", 1),
        ("/api/v1/runs/", 1),
        ("/api/v1/submissions/", 1),
    ],
)
def test_a_list_reads_one_query_without_any_document(
    anonymous_api, published, django_assert_max_num_queries, url, queries
):
    with django_assert_max_num_queries(queries) as captured:
        response = anonymous_api.get(url)

    assert response.status_code == 200
    assert response.json()["results"]
    for query in captured.captured_queries:
        assert DOCUMENT_COLUMN not in query["sql"]


def test_a_measurement_row_reads_only_the_submission_columns_it_prints(anonymous_api, published):
    with CaptureQueriesContext(connection) as captured:
        anonymous_api.get("/api/v1/measurements/")

    (query,) = captured.captured_queries
    assert selected_columns(query["sql"], "results_submission") == {
        "id",
        "uuid",
        "status",
        "source",
        "submitter_id",
    }


def test_the_csv_export_reads_no_document_from_a_server_side_cursor(anonymous_api, published):
    with CaptureQueriesContext(connection) as captured:
        response = anonymous_api.get("/api/v1/measurements/export.csv")
        body = b"".join(response.streaming_content).decode()

    rows = list(csv.reader(io.StringIO(body)))
    assert len(rows) == 1 + 6 * len(example_document()["runs"][0]["measurements"])
    assert not any(row[0].startswith(exports.ERROR_MARKER) for row in rows)
    sql = " ".join(query["sql"] for query in captured.captured_queries)
    assert DOCUMENT_COLUMN not in sql
    # Tuples of the printed columns only: of the submission, its three.
    assert selected_columns(sql, "results_submission") == {"uuid", "status", "source"}


@pytest.mark.django_db(transaction=True)
def test_the_csv_export_fetches_in_chunks_inside_a_transaction(anonymous_api, published):
    """Not WITH HOLD (which PostgreSQL computes whole before the first row):
    a plain server-side cursor, inside the export's own transaction. (In
    autocommit, as a server runs, not in a test's transaction.)"""
    response = anonymous_api.get("/api/v1/measurements/export.csv")
    stream = iter(response.streaming_content)
    next(stream)  # the header, sent once the query has its first row
    with CaptureQueriesContext(connection):
        next(stream)
        with connection.cursor() as cursor:
            cursor.execute("SELECT name, is_holdable FROM pg_cursors")
            cursors = cursor.fetchall()
    assert cursors and all(not holdable for _, holdable in cursors)
    list(stream)


def test_a_failure_part_way_through_the_csv_is_visible(
    anonymous_api, published, monkeypatch, caplog
):
    """The 200 is sent before the rows: a failure must end the file with an
    error line and abort the response, never look like a complete file."""
    original, calls = exports.csv_cell, []

    def failing_cell(value):
        calls.append(value)
        if len(calls) > 5 * len(exports.COLUMNS):
            raise ConnectionError("the database went away")
        return original(value)

    monkeypatch.setattr(exports, "csv_cell", failing_cell)
    response = anonymous_api.get("/api/v1/measurements/export.csv")
    received = []
    with pytest.raises(ConnectionError):
        for part in response.streaming_content:
            received.append(part.decode())

    last = list(csv.reader(io.StringIO("".join(received))))[-1]
    assert last[0] == exports.ERROR_MARKER
    assert "failed after 5 rows" in last[1] and "incomplete" in last[1]
    error_id = last[1].rsplit(" ", 1)[-1]
    assert any(error_id in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("runs", [1, 5])
def test_a_submission_reads_in_two_queries_however_many_runs(
    anonymous_api, bob, django_assert_max_num_queries, runs
):
    submission = store(bob, runs=runs)

    with django_assert_max_num_queries(2):
        response = anonymous_api.get(f"/api/v1/submissions/{submission.uuid}/")

    assert response.status_code == 200
    body = response.json()
    assert len(body["runs"]) == runs
    assert [run["id"] for run in body["runs"]] == sorted(run["id"] for run in body["runs"])
    assert body["document"]["runs"][0]["note"] == LONG_NOTE
