"""Where and how long comparison answers are kept: the settings, a
transaction, an unreadable entry, Redis away, the database cache.

Transactional tests: nothing is kept inside a transaction, so the usual
test transaction would keep nothing. The fixtures are in conftest.py, the
helpers in kept_answers.py."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import caches
from django.db import transaction

from benchhub.comparisons import selectors
from benchhub.comparisons.query import comparison_query_parse
from tests.comparisons.kept_answers import QUERY, _approve_pending, _kept_keys, answer, cell

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_nothing_kept_before", "_exact"),
]


def test_nothing_is_kept_inside_a_transaction(stored):
    query = comparison_query_parse({key: [value] for key, value in QUERY.items()})
    with transaction.atomic():
        selectors.comparison_build(user=AnonymousUser(), query=query)
    assert _kept_keys() == []
    selectors.comparison_build(user=AnonymousUser(), query=query)
    assert len(_kept_keys()) == 1


def test_keeping_nothing_when_the_setting_is_zero(stored, anonymous_api, settings):
    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 0
    first, _ = answer(anonymous_api)
    assert answer(anonymous_api) == (first, True)


def test_an_answer_is_kept_for_the_keep_seconds_at_most(stored, anonymous_api, settings):
    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 600
    answer(anonymous_api)
    (key,) = _kept_keys()
    ttl = caches["kept"]._cache.get_client().ttl(key)
    assert 590 < ttl <= 600


def test_an_unreadable_kept_answer_is_computed_again(stored, anonymous_api):
    first, _ = answer(anonymous_api)
    kept_cache = caches["kept"]
    (key,) = _kept_keys()
    name = "answer:" + key.decode().split(":answer:")[1]
    entry = kept_cache.get(name)
    entry.answer = b"\x80\x04"
    kept_cache.set(name, entry)
    again, computed = answer(anonymous_api)
    assert (again, computed) == (first, True)
    assert answer(anonymous_api) == (first, False)  # and kept again


def test_without_the_cache_the_answer_is_computed(stored, anonymous_api, settings):
    first, _ = answer(anonymous_api)
    settings.CACHES = {
        **settings.CACHES,
        "kept": {**settings.CACHES["kept"], "LOCATION": "redis://127.0.0.1:9/0"},
    }
    assert answer(anonymous_api) == (first, True)
    assert answer(anonymous_api) == (first, True)


def test_the_database_cache_keeps_answers_as_redis_does(
    stored, bob, moderator, anonymous_api, settings
):
    """The embedded default's cache: the table migration 0007 made."""
    settings.CACHES = {
        **settings.CACHES,
        "kept": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "comparisons_kept_cache",
        },
    }
    caches["kept"].clear()  # the table is not flushed between tests
    try:
        first, computed = answer(anonymous_api)
        assert computed
        assert answer(anonymous_api) == (first, False)
        _approve_pending({"bob": bob, "moderator": moderator})
        after, computed = answer(anonymous_api)
        assert computed
        assert cell(after, "btrfs", 1)["n"] == 1
    finally:
        caches["kept"].clear()
