"""The "same uuid, other submitter" rule lives in the upload service: every
way in (the API, a tool import, a retry racing the first upload) meets it."""

from __future__ import annotations

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import SubmissionConflict, submission_create
from tests.factories import small_document


def test_another_submitter_replaying_a_document_is_a_conflict_not_a_retry(alice, bob):
    document = small_document()
    first = submission_create(submitter=alice, document=document)

    with pytest.raises(SubmissionConflict) as raised:
        submission_create(submitter=bob, document=document)

    assert raised.value.other_submitter is True
    assert raised.value.existing == first.submission
    assert Submission.objects.count() == 1


def test_the_same_submitter_retrying_gets_the_stored_submission(alice):
    document = small_document()
    first = submission_create(submitter=alice, document=document)

    again = submission_create(submitter=alice, document=document)

    assert (again.submission, again.created) == (first.submission, False)


def test_other_content_under_a_taken_uuid_is_a_conflict_of_content(alice):
    document = small_document()
    submission_create(submitter=alice, document=document)
    document["runs"][0]["measurements"][0]["value"] = 1.0

    with pytest.raises(SubmissionConflict) as raised:
        submission_create(submitter=alice, document=document)

    assert raised.value.other_submitter is False


def test_a_tool_import_under_anothers_uuid_is_refused_by_the_same_rule(alice, bob):
    from benchhub.imports.services import tool_output_import

    document = small_document()
    taken = submission_create(submitter=alice, document=document).submission

    with pytest.raises(SubmissionConflict) as raised:
        tool_output_import(
            submitter=bob,
            tool="pgbench",
            text=PGBENCH,
            environment={"database": {"version_string": "PostgreSQL 16.4"}},
            submission_uuid=taken.uuid,
        )

    assert raised.value.other_submitter is True


PGBENCH = """\
pgbench (16.4)
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 1
query mode: simple
number of clients: 4
number of threads: 1
duration: 10 s
number of transactions actually processed: 5000
latency average = 8.000 ms
tps = 500.000000 (without initial connection time)
"""
