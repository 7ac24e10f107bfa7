"""The OpenAPI document asked for by several clients at once: gunicorn's
gthread workers answer them on threads of one process."""

from __future__ import annotations

import threading

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_openapi_document_asked_by_many_at_once_is_served_to_each():
    """drf-spectacular's schema objects are shared by every request (one per
    view class) and each generation points them at the view it describes:
    two at once pointed them away mid-use, a 500 ("Schema generation
    REQUIRES a view instance") for some of the askers."""
    statuses: list[int] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        for _ in range(3):
            statuses.append(Client().get("/api/schema/?format=json").status_code)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert statuses == [200] * 24
