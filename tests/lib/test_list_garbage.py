"""A list page is freed by reference counting once sent, through the WSGI application
gunicorn runs (benchhub.lib.pagination.PageBuiltWithCollectorPaused): DRF's view,
request and response reference each other, and the rows hung on those cycles until the
cyclic collector found them, 34,000 objects for 1,000 measurements, whose passes made a
page's time swing from one request to the next. What is left for the collector does not
grow with the page."""

from __future__ import annotations

import gc

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document
from tests.lib.wsgi_calls import call


def get(path: str, query: str) -> bytes:
    status, _, body = call("GET", path, query=query)
    assert status == "200 OK", body[:500]
    return body


def cyclic_garbage_of(path: str, query: str) -> int:
    """How many objects one request leaves that only the cyclic collector frees."""
    get(path, query)  # warm: caches filled once per process are not the request's
    gc.collect()
    gc.disable()
    try:
        get(path, query)
        return gc.collect()
    finally:
        gc.enable()


@pytest.mark.parametrize("path", ["/api/v1/measurements/", "/api/v1/runs/"])
def test_a_larger_page_leaves_no_more_for_the_cyclic_collector(
    db, wsgi_in_the_test_transaction, bob, path
):
    for run in range(60):
        values = {clients: 100.0 + run + clients for clients in (1, 2, 4, 8, 16)}
        document = sweep_document(values)
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    small = cyclic_garbage_of(path, "page_size=5")
    large = cyclic_garbage_of(path, "page_size=300")

    # 300 measurements (or 60 runs) are thousands of objects: none of them is left
    assert large - small < 100, (small, large)
