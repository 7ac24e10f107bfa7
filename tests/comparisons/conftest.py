"""Fixtures of the tests of kept comparison answers (test_kept_answers_*.py).

None is autouse, so the other tests here are as they were: those files ask
for ``_nothing_kept_before`` and ``_exact`` in their ``pytestmark``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches

from benchhub.comparisons import kept
from tests.comparisons.kept_answers import _kept_keys, _refresh_window_over, upload


@pytest.fixture
def _nothing_kept_before() -> Iterator[None]:
    """No answers, versions or served index of earlier tests, and no bump
    left to retry."""
    client = caches["kept"]._cache.get_client(write=True)
    for key in _kept_keys("*"):
        client.delete(key)
    kept._unbumped.clear()
    yield
    kept._unbumped.clear()


@pytest.fixture
def _exact(settings) -> None:
    """No grace: these tests check what makes an answer stale, seen by the
    very next request. The grace within which a stale answer is still
    served while the worker computes it again is tested on its own."""
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 0


@pytest.fixture
def moderator(db) -> User:
    return User.objects.create_superuser(username="mod", password="x" * 16)


@pytest.fixture
def stored(bob):
    for scale in (1.0, 1.37, 0.61, 2.2):
        upload(bob, "ext4", scale)
        upload(bob, "xfs", scale * 1.13)
    upload(bob, "zfs", 0.9)
    _refresh_window_over()
