"""Uploads at the same moment, each by its own client and thread: one uuid is
stored once, and the same new machines in other orders do not deadlock."""

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from benchhub.results.models import Measurement, Run, Submission
from tests.factories import example_document
from tests.results.uploads import post


def post_at_once(secret: str, documents: list[dict]) -> list[int]:
    """Each document posted by its own client and thread, all released at
    the same moment by a barrier: the statuses, in the order they came."""
    barrier = threading.Barrier(len(documents))
    statuses: list[int] = []

    def upload(document: dict) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
        barrier.wait()
        try:
            statuses.append(post(client, document).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(document,)) for document in documents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_uploads_store_one_submission(alice):
    """Two clients post the same uuid at the same moment: PostgreSQL's unique
    index makes the second insert wait for the first, which then wins."""
    from benchhub.accounts.services import api_token_create

    _, secret = api_token_create(user=alice, name="race")
    document = example_document()

    statuses = post_at_once(secret, [document] * 4)

    assert sorted(statuses) == [200, 200, 200, 201]
    assert Submission.objects.count() == 1
    assert Measurement.objects.count() == 54


@pytest.mark.django_db(transaction=True)
def test_concurrent_uploads_bringing_the_same_new_machines_in_other_orders_are_both_stored(alice):
    """Two documents whose runs describe the same new machines, in opposite
    orders, uploaded at the same moment: each upload used to create the
    rows run by run, each held a row the other waited for, and PostgreSQL
    broke the deadlock by failing one (a 503). Rows are created in one
    order now."""
    from benchhub.accounts.services import api_token_create

    _, secret = api_token_create(user=alice, name="race")
    machines = [{"cpu": f"new machine {n}", "cores": n} for n in (1, 2, 3)]
    documents = []
    for order in (machines, machines[::-1]):
        document = example_document()
        run = document["runs"][0]
        document["runs"] = [{**run, "environment": {"hardware": machine}} for machine in order]
        documents.append(document)

    statuses = post_at_once(secret, documents)

    assert statuses == [201, 201]
    assert Run.objects.count() == 6
    assert Run.objects.values("hardware").distinct().count() == 3
