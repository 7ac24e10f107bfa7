"""Kept comparison answers and when a change commits: during the
computation, still open when the answer is served, or its bump refused by
the cache.

Transactional tests: nothing is kept inside a transaction, so the usual
test transaction would keep nothing. The fixtures are in conftest.py, the
helpers in kept_answers.py."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.core.cache import caches
from django.db import connections, transaction

from benchhub.comparisons import selectors
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Submission
from tests.comparisons.kept_answers import _approve_pending, answer, cell, upload

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_nothing_kept_before", "_exact"),
]


def _in_another_connection(work: Callable[[], None]) -> None:
    def run():
        try:
            work()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def test_a_change_committed_while_an_answer_is_computed_is_not_missed_after(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    """The answer computed reads the cells before the change commits, and
    the versions before that: the commit replaces them, so the answer is
    never served as current, and the next request computes again."""
    pending = upload(bob, "btrfs", 1.5, status=Submission.Status.PENDING)
    original = selectors.combined_scores
    calls = []

    def change_then_score(comparison):
        if not calls:
            _in_another_connection(
                lambda: submission_moderate(submission=pending, actor=moderator, action="approve")
            )
        calls.append(1)
        return original(comparison)

    monkeypatch.setattr(selectors, "combined_scores", change_then_score)
    during, computed = answer(anonymous_api)
    assert computed
    assert cell(during, "btrfs", 1) is None  # read before the approval committed
    after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


@contextmanager
def _change_held_open(bob, moderator) -> Iterator[Callable[[], None]]:
    """A pending btrfs result approved in a transaction of another
    connection, committed by the function yielded, or on leaving."""
    pending = upload(bob, "btrfs", 1.5, status=Submission.Status.PENDING)
    changed, release = threading.Event(), threading.Event()

    def run():
        try:
            with transaction.atomic():
                submission_moderate(submission=pending, actor=moderator, action="approve")
                changed.set()
                release.wait(30)
        finally:
            connections.close_all()

    def commit():
        release.set()
        thread.join()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert changed.wait(30)
        yield commit
    finally:
        commit()


def test_a_change_not_yet_committed_is_served_the_kept_answer_until_it_commits(
    stored, bob, moderator, anonymous_api
):
    before, _ = answer(anonymous_api)
    with _change_held_open(bob, moderator):
        assert answer(anonymous_api) == (before, False)
    after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_a_change_running_when_an_answer_began_and_committed_after_is_not_missed(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    """The change is in progress when the answer reads its versions and
    cells; it commits before the answer is stored."""
    original = selectors.combined_scores
    with _change_held_open(bob, moderator) as commit:

        def commit_then_score(comparison):
            commit()
            return original(comparison)

        monkeypatch.setattr(selectors, "combined_scores", commit_then_score)
        during, computed = answer(anonymous_api)
    assert computed
    assert cell(during, "btrfs", 1) is None  # read before the change committed
    monkeypatch.undo()
    after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_a_bump_the_cache_refused_is_retried_and_nothing_is_served_until_it_is(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    """Redis read-only or away when a change commits: the version is not
    replaced, so the process that made the change remembers it; its next
    answer retries the bump first, and computes while the cache still
    refuses."""
    before, _ = answer(anonymous_api)
    kept_cache = caches["kept"]
    original = kept_cache.set_many
    refused = []

    def refuse(*args, **kwargs):
        refused.append(1)
        raise ConnectionError("the cache refused")

    monkeypatch.setattr(kept_cache, "set_many", refuse)
    _approve_pending({"bob": bob, "moderator": moderator})
    assert refused
    during, computed = answer(anonymous_api)
    assert computed
    assert cell(during, "btrfs", 1)["n"] == 1
    monkeypatch.setattr(kept_cache, "set_many", original)
    after, computed = answer(anonymous_api)  # the retried bump replaced the version
    assert computed
    assert answer(anonymous_api) == (after, False)
    assert cell(before, "btrfs", 1) is None
