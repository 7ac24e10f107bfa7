"""The one statement that stores a document on PostgreSQL (results/storage.py) writes the
rows the ORM path writes, column for column, but for what differs by design."""

from __future__ import annotations

import copy
import uuid

from django.db import connection

from benchhub.results import storage
from benchhub.results.models import MetricParameter
from benchhub.results.services import submission_create
from tests.factories import example_document

# Columns that differ between two stores of one document by design.
UNIQUE = {"id", "uuid", "content_digest", "document", "created_at", "submission_id", "run_id"}


def rows(table: str, submission_id: int) -> list[dict]:
    owner = {
        "results_submission": "id = %s",
        "results_run": "submission_id = %s",
        "results_measurement": "run_id IN (SELECT id FROM results_run WHERE submission_id = %s)",
    }[table]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} WHERE {owner} ORDER BY id", [submission_id])  # noqa: S608
        names = [column[0] for column in cursor.description]
        return [
            {n: v for n, v in zip(names, row, strict=True) if n not in UNIQUE}
            for row in cursor.fetchall()
        ]


def a_document_with_edges() -> dict:
    """Not canonical: values that each path could store differently."""
    document = example_document()
    run = document["runs"][0]
    run["note"] = "ünïcode, 'quoted'"
    run["load_engine_cpu"] = -0.0
    run["repetitions"] = 3.0
    run["measurements"][0]["value"] = -0.0
    run["measurements"][1]["approximate"] = True
    run["measurements"][1]["note"] = "estimated"
    run["measurements"][2]["samples"] = [0.1, 1e-300, 12345678.9]
    second = copy.deepcopy(run)
    second["parameters"] = {**second["parameters"], "rows": 12}
    second["measurements"] = second["measurements"][::-1][:5]
    document["runs"].append(second)
    return document


def test_the_postgresql_statement_stores_the_rows_of_the_orm_path(alice, monkeypatch):
    document = a_document_with_edges()
    raw = submission_create(submitter=alice, document=document).submission
    names = set(MetricParameter.objects.values_list("metric_id", "scope", "name"))
    MetricParameter.objects.all().delete()

    monkeypatch.setattr(storage, "_insert_postgresql", storage._insert_orm)
    orm = submission_create(
        submitter=alice, document={**document, "uuid": str(uuid.uuid4())}
    ).submission

    assert raw.pk != orm.pk
    for table in ("results_submission", "results_run", "results_measurement"):
        stored, expected = rows(table, raw.pk), rows(table, orm.pk)
        assert stored and stored == expected, table
    assert names and names == set(MetricParameter.objects.values_list("metric_id", "scope", "name"))
