"""The stored document is compressed with lz4 where PostgreSQL has it
(migration 0009): pglz took 0.2 ms more of the backend's CPU per upload."""

from __future__ import annotations

import pytest
from django.db import connection

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="TOAST compression is PostgreSQL's"
)


def _server_has_lz4() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        return cursor.fetchone()[0]


def test_an_uploaded_document_is_stored_with_lz4_and_reads_back_the_same(db, bob):
    if not _server_has_lz4():
        pytest.skip("this PostgreSQL is built without lz4")
    document = example_document()

    stored = submission_create(submitter=bob, document=document).submission

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(document) FROM results_submission WHERE id = %s",
            [stored.pk],
        )
        assert cursor.fetchone()[0] == "lz4"
    assert Submission.objects.get(pk=stored.pk).document == document
