"""The upload's raw statements are prepared on PostgreSQL once they repeat
(benchhub/lib/prepared.py), and nothing changes where they may not be."""

from __future__ import annotations

import json

from django.db import connection

from benchhub.lib.prepared import prepared_cursor
from tests.factories import small_document

URL = "/api/v1/submissions/"


def prepared_statements() -> list[tuple[str, int, int]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return cursor.fetchall()


def test_the_uploads_statements_are_prepared_and_planned_once(alice_api):
    # psycopg prepares a statement at its 6th run, PostgreSQL plans it for
    # good after 5 runs prepared
    for _ in range(12):
        response = alice_api.post(
            URL, data=json.dumps(small_document()), content_type="application/json"
        )
        assert response.status_code == 201

    prepared = prepared_statements()
    wanted = {
        "the token": 'FROM "accounts_apitoken"',
        "the metrics and dimensions": 'LEFT JOIN "results_metric"',
        "the document": 'INSERT INTO "results_submission"',
    }
    for what, text in wanted.items():
        (plans,) = [(generic, custom) for s, generic, custom in prepared if text in s] or [None]
        assert plans is not None, f"{what}: not prepared"
        assert plans[0] >= 1, f"{what}: planned again on every upload {plans}"


def test_without_a_prepare_threshold_the_usual_cursor_binds_on_the_client(db, monkeypatch):
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "prepare_threshold", None)
    with prepared_cursor() as cursor:
        cursor.execute("SELECT %s", ["x"])
        assert cursor.fetchone() == ("x",)
        assert type(cursor.cursor).__name__ == "Cursor"  # Django's client-binding cursor


def test_a_prepared_cursor_leaves_the_connection_binding_on_the_client(db):
    with prepared_cursor() as cursor:
        assert type(cursor.cursor).__name__ == "ServerBindingCursor"
    with connection.cursor() as cursor:
        assert type(cursor.cursor).__name__ == "Cursor"
