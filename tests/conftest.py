"""Personas and clients shared by the server tests.

- ``alice`` uploads results (she has an API token);
- ``bob`` is another submitter, who must not see alice's pending uploads;
- anonymous visitors see approved results only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection
from rest_framework.test import APIClient

from benchhub.accounts.services import api_token_create


@pytest.fixture(autouse=True, scope="session")
def _runs_on_postgresql(django_db_setup, django_db_blocker) -> None:
    # The suite exists to prove behaviour on the production database
    # (row locks, unique-violation waits, JSON lookups); SQLite would pass
    # things PostgreSQL does not.
    with django_db_blocker.unblock():
        assert connection.vendor == "postgresql", (
            f"tests must run on PostgreSQL, DATABASE_URL points to {connection.vendor}"
        )


# Far above what any test sends: the rate tests set their own.
_TEST_RATES = {"token": "100000/minute", "user": "100000/minute", "anon": "100000/minute"}


@pytest.fixture(autouse=True)
def _generous_rates(settings) -> None:
    settings.BENCHHUB_THROTTLE_RATES = _TEST_RATES


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    """Rate counters and the alias rules live in the shared cache (Redis):
    one test's requests must not count against the next one. Only
    BenchHub's keys go; Celery's queue in the same Redis database stays."""
    redis = getattr(cache, "_cache", None)
    if redis is not None and hasattr(redis, "get_client"):
        client = redis.get_client(write=True)
        keys = list(client.scan_iter(match=f"{cache.key_prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    else:
        cache.clear()


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user(username="alice")


@pytest.fixture
def bob(db) -> User:
    return User.objects.create_user(username="bob")


def _client_for(user: User) -> APIClient:
    _, secret = api_token_create(user=user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


@pytest.fixture
def alice_api(alice) -> APIClient:
    return _client_for(alice)


@pytest.fixture
def bob_api(bob) -> APIClient:
    return _client_for(bob)


@pytest.fixture
def anonymous_api() -> APIClient:
    return APIClient()


@pytest.fixture
def wsgi_in_the_test_transaction() -> Iterator[None]:
    """For tests that call the WSGI application itself (not Django's test
    client): Django closes the connection when each request starts and ends,
    which would end the test's transaction too."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)
