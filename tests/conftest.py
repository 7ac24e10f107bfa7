"""Personas and clients shared by the server tests.

- ``alice`` uploads results (she has an API token);
- ``bob`` is another submitter, who must not see alice's pending uploads;
- anonymous visitors see approved results only.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import uuid
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache, caches
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection, connections
from rest_framework.test import APIClient

from benchhub.accounts.services import api_token_create


@pytest.fixture(autouse=True, scope="session")
def _runs_on_postgresql(request) -> None:
    # The suite exists to prove behaviour on the production database
    # (row locks, unique-violation waits, JSON lookups); SQLite would pass
    # things PostgreSQL does not. (A mutant's run was checked by mutmut's
    # set-up runs: there, a test without the database does not wait for one.)
    if _mutant_child():
        return
    request.getfixturevalue("django_db_setup")
    with request.getfixturevalue("django_db_blocker").unblock():
        assert connection.vendor == "postgresql", (
            f"tests must run on PostgreSQL, DATABASE_URL points to {connection.vendor}"
        )


def pytest_configure(config) -> None:
    """Each pytest-xdist worker keeps its cache keys (rate counters, alias
    rules) under a prefix of its own on the shared Redis database, so that
    ``_fresh_cache`` of one worker does not wipe another's counters mid-test,
    nor do two workers count the same user id (each has its own test
    database, numbered from 1) against one rate. Servers the tests start in
    subprocesses inherit the prefix through the environment.

    The Celery tasks of the run's uploads go to a default queue of its own,
    in every run, parallel or not: any other worker on the Redis database
    (a developer's, another run's, another xdist worker's) listens on
    Celery's default queue or its own, and would take the tests' tasks and
    run them against its database, while the tests' in-process worker waited
    for them in vain; nor does the tests' purge drop anyone else's.

    Passwords are hashed at one iteration (tests/passwords.py)."""
    from benchhub.celery import app

    settings.PASSWORD_HASHERS = ["tests.passwords.OneIterationPBKDF2PasswordHasher"]

    # Two mutants of `make mutation` run at once too: the same holds for them.
    worker = os.environ.get("PYTEST_XDIST_WORKER") or (
        f"mutant{os.getpid()}" if _mutant_child() else None
    )
    app.conf.task_default_queue = "_".join(
        filter(None, (app.conf.task_default_queue, "tests", uuid.uuid4().hex[:12], worker))
    )
    if not worker:
        return
    prefix = f"{settings.CACHE_KEY_PREFIX}_{worker}"
    os.environ["BENCHHUB_CACHE_KEY_PREFIX"] = prefix
    settings.CACHE_KEY_PREFIX = prefix
    for alias in settings.CACHES:
        # The kept comparison answers' prefix extends the default's, as in settings.
        settings.CACHES[alias]["KEY_PREFIX"] = prefix if alias == "default" else f"{prefix}:{alias}"
        # a cache object made before this point still has the old prefix
        with contextlib.suppress(AttributeError):
            del caches[alias]


def _mutant_child() -> bool:
    """A run of ``make mutation`` testing one mutant (mutmut sets the
    variable to the mutant's name; "stats" and "fail" are its set-up runs)."""
    return os.environ.get("MUTANT_UNDER_TEST", "") not in ("", "stats", "fail")


# mutmut's set-up runs (stats, clean, fail) share the process that then forks
# one child per mutant, and a run that ends mid-set-up (the "fail" run fails on
# purpose while migrating) leaves NAME at the test database's: the name this
# module saw first, before any of them, names the one database they all keep.
_MUTMUT_TEST_DATABASE = f"test_{settings.DATABASES['default']['NAME']}"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix) -> None:
    """mutmut tests two mutants at once (--max-children 2): each gets a
    database of its own, copied from the one its set-up runs migrated
    (kept by --reuse-db), instead of both recreating the same test
    database under each other."""
    if "MUTANT_UNDER_TEST" not in os.environ:
        return
    test = settings.DATABASES["default"].setdefault("TEST", {})
    if _mutant_child():
        test["TEMPLATE"] = _MUTMUT_TEST_DATABASE
        test["NAME"] = f"{_MUTMUT_TEST_DATABASE}_mutant{os.getpid()}"
    else:
        test.pop("TEMPLATE", None)
        test["NAME"] = _MUTMUT_TEST_DATABASE


def pytest_sessionfinish(session) -> None:
    """mutmut's set-up runs happen in the process that then forks one child
    per mutant: a connection they leave open to the test database would
    stop every child from copying it ("being accessed by other users")."""
    if os.environ.get("MUTANT_UNDER_TEST") is not None:
        connections.close_all()
    _drop_the_runs_queue()


def _drop_the_runs_queue() -> None:
    """The tasks queued by tests without a worker stay in the run's queue,
    which nobody will consume again: its Redis keys go with the run, as the
    purge at the next worker's start dropped them when all runs shared one."""
    if not settings.REDIS_URL:
        return
    import redis

    from benchhub.celery import app

    queue = app.conf.task_default_queue
    with contextlib.suppress(redis.RedisError), redis.Redis.from_url(settings.REDIS_URL) as client:
        # the queue's list, its priority lists (queue + separator + digit),
        # and kombu's sets of its bindings (_kombu.binding.…, _kombu.binding_permanent.…)
        for pattern in (f"{queue}*", f"_kombu.binding*.{queue}"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            if keys:
                client.delete(*keys)


@pytest.fixture(scope="session")
def django_db_keepdb(request) -> bool:
    # A mutant's copy goes when its run ends; the template stays for the next.
    if _mutant_child():
        return False
    return bool(request.config.getvalue("reuse_db"))


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


@pytest.fixture(autouse=True)
def _no_in_process_round_just_ended(django_db_blocker) -> Iterator[None]:
    """An in-process round of one test must not make the next test's first
    one wait for a waiter (IN_PROCESS_ROUND_INTERVAL): each test starts on
    a quiet site. And a waiter one test started ends with it: left running,
    its rounds reached the database during a later test's setup, where
    access is refused, and that test failed for it (seen in CI)."""
    from benchhub.baselines import tasks

    tasks._last_in_process_round_end = -math.inf
    yield
    # Torn down after the test's database fixture: its rounds may read the
    # database while they end, as they could during the test.
    with django_db_blocker.unblock():
        for thread in threading.enumerate():
            if thread.name == tasks.WAITER_THREAD:
                thread.join(timeout=60)


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
