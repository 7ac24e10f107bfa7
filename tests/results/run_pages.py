"""Stored submissions and runs for the tests of the run page /runs/<id>/ and
the submission page /submissions/<uuid>/, and the queries a page costs."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create


def store(user, document, status=Submission.Status.APPROVED) -> Submission:
    return submission_create(submitter=user, document=document, status=status).submission


def run_of(submission: Submission) -> Run:
    return submission.runs.get()


def queries_of(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)
