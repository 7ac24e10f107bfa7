"""The refresh of changed answers (comparisons_refresh_task) and the
grace (BENCHHUB_COMPARISON_STALE_SECONDS) within which the answer from
before is served while the worker computes it again.

Transactional tests: nothing is kept inside a transaction, so the usual
test transaction would keep nothing. The fixtures are in conftest.py, the
helpers in kept_answers.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.cache import cache, caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.celery import app
from benchhub.comparisons import kept, services, tasks
from benchhub.comparisons.tasks import comparisons_refresh_task
from benchhub.moderation.services import alias_rule_add, alias_rules_apply, submission_moderate
from benchhub.results.models import Storage, Submission
from tests.comparisons.kept_answers import (
    _approve_pending,
    _hide_approved,
    _kept_keys,
    answer,
    cell,
    upload,
    zfs_cell,
)
from tests.workers import in_process_worker

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_nothing_kept_before", "_exact"),
]


def _served_at() -> list:
    return sorted((caches["kept"].get("served") or {}).values())


@contextmanager
def _later(monkeypatch, seconds: float) -> Iterator[None]:
    """kept.py's clock ``seconds`` ahead."""
    monkeypatch.setattr(kept, "_clock", lambda: time.time() + seconds)
    try:
        yield
    finally:
        monkeypatch.setattr(kept, "_clock", time.time)


def test_the_refresh_computes_again_what_changed_and_keeps_when_it_was_served(
    stored, bob, moderator, anonymous_api
):
    before, _ = answer(anonymous_api)
    (served,) = _served_at()
    assert comparisons_refresh_task() == 0  # nothing changed
    _approve_pending({"bob": bob, "moderator": moderator})
    assert comparisons_refresh_task() == 1
    assert _served_at() == [served]  # a refresh is not a visit
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(after, "btrfs", 1)["n"] == 1
    assert cell(before, "btrfs", 1) is None


def test_within_the_grace_a_changed_answer_is_served_until_the_refresh_replaces_it(
    stored, bob, moderator, anonymous_api, settings
):
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    before, _ = answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    assert answer(anonymous_api) == (before, False)  # served, the approval not in it yet
    assert comparisons_refresh_task() == 1  # the refresh is not served the stale answer
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(before, "btrfs", 1) is None
    assert cell(after, "btrfs", 1)["n"] == 1


def test_after_the_grace_a_changed_answer_is_computed_on_request(
    stored, bob, moderator, anonymous_api, settings, monkeypatch
):
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    with _later(monkeypatch, 25):
        assert answer(anonymous_api)[1] is False  # 25 s after: still within
    with _later(monkeypatch, 35):
        after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_the_grace_counts_from_the_oldest_change_the_answer_missed(
    stored, bob, moderator, anonymous_api, settings, monkeypatch
):
    """Changes every 20 s do not keep an answer served for ever: 35 s after
    the first it missed, it is computed, though the latest is 15 s old."""
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    before, _ = answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    with _later(monkeypatch, 20):
        during, computed = answer(anonymous_api)
        assert (during, computed) == (before, False)
        _hide_approved(
            {"moderator": moderator, "zfs": Submission.objects.get(runs__storage__filesystem="zfs")}
        )
    with _later(monkeypatch, 35):
        after, computed = answer(anonymous_api)
    assert computed
    assert zfs_cell(after) is None


def test_a_refresh_that_cannot_replace_a_changed_answer_deletes_it(
    stored, bob, moderator, anonymous_api, settings, monkeypatch
):
    """Its filters refused now, or its key changed with an alias rule: the
    stale answer is neither picked by every refresh nor served."""
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    monkeypatch.setattr(tasks, "comparison_answer_refresh", lambda request: False)
    assert comparisons_refresh_task() == 0
    assert _kept_keys() == []


def test_an_answer_nobody_asked_for_within_the_hour_is_not_refreshed(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    with _later(monkeypatch, 2 * 3600):
        assert comparisons_refresh_task() == 0
        assert answer(anonymous_api)[1]  # computed on request


def test_serving_an_answer_again_brings_its_last_serving_up_to_date(
    stored, anonymous_api, monkeypatch
):
    answer(anonymous_api)
    (old,) = _served_at()
    assert not answer(anonymous_api)[1]
    assert _served_at() == [old]  # not every time
    with _later(monkeypatch, 600):
        assert not answer(anonymous_api)[1]
    (new,) = _served_at()
    assert new > old + 500


def test_the_page_s_pooling_answer_is_refreshed_too(stored, bob, moderator, client):
    # Filesystem on x, nothing fixed: each cell pools the clients.
    query = {"benchmark": "select-update", "metric": "throughput", "x": "filesystem"}
    response = client.get("/compare/", query)
    assert response.status_code == 200
    assert b"clients" in response.content
    assert len(_kept_keys()) == 2  # the comparison and its pooling
    _approve_pending({"bob": bob, "moderator": moderator})
    assert comparisons_refresh_task() == 2
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/compare/", query)
    assert again.status_code == 200
    assert not any("percentile_cont" in q["sql"] for q in queries.captured_queries)
    assert b"btrfs" in again.content


def _wait_until_refreshed(failure: str) -> None:
    """Until no kept answer is stale and one is kept (the worker stored it
    again), at most a minute; else fail with ``failure``."""
    deadline = time.monotonic() + 60
    while kept.kept_answers_stale(served_within=3600, limit=1) or not _served_at():
        assert time.monotonic() < deadline, failure
        time.sleep(0.2)


def test_a_real_worker_refreshes_the_answer_after_an_approval(
    stored, bob, moderator, anonymous_api
):
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    app.control.purge()
    with in_process_worker():
        comparisons_refresh_task.delay()
        _wait_until_refreshed("the worker did not refresh the answer")
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_an_approval_has_the_worker_refresh_the_answers_without_beat(
    stored, bob, moderator, anonymous_api
):
    """No call of the task here and no beat: the approval queues it."""
    answer(anonymous_api)
    pending = upload(bob, "btrfs", 1.5, status=Submission.Status.PENDING)
    app.control.purge()
    with in_process_worker():
        submission_moderate(submission=pending, actor=moderator, action="approve")
        _wait_until_refreshed("the approval did not have the answer refreshed")
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_a_burst_of_moderation_queues_one_refresh_after_it(stored, bob, moderator, monkeypatch):
    queued = []
    monkeypatch.setattr(
        comparisons_refresh_task, "apply_async", lambda *a, **options: queued.append(options)
    )
    pending = [
        upload(bob, "btrfs", 1.0 + step / 10, status=Submission.Status.PENDING) for step in range(4)
    ]
    submission_moderate(submission=pending[0], actor=moderator, action="flag", reason="odd")
    assert queued == []  # flagged: still not public, no answer changed
    for submission in pending[1:]:
        submission_moderate(submission=submission, actor=moderator, action="approve")
    assert queued == [{"countdown": services.REFRESH_AFTER_SECONDS}]
    cache.delete(services._QUEUED)  # the burst's window is over
    submission_moderate(submission=pending[1], actor=moderator, action="hide", reason="dup")
    assert len(queued) == 2


def test_stored_values_renamed_by_an_alias_rule_queue_a_refresh(stored, moderator, monkeypatch):
    queued = []
    monkeypatch.setattr(
        comparisons_refresh_task, "apply_async", lambda *a, **options: queued.append(options)
    )
    alias_rule_add(
        actor=moderator, dimension="storage", field="filesystem", from_value="xfs", to_value="ext4"
    )
    assert queued == []  # the rule alone renames nothing stored yet
    while alias_rules_apply():
        pass
    assert Storage.objects.filter(filesystem="xfs").count() == 0
    assert queued == [{"countdown": services.REFRESH_AFTER_SECONDS}]
