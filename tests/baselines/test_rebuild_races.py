"""A rebuild racing the changes it must not lose: an upload (or an
approval) that took its mark's time before the rebuild started but
committed after the rebuild read the key's data. Two real connections;
the upload's transaction is held open by its thread and committed at a
chosen moment of the rebuild."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connections, transaction
from django.utils import timezone

from benchhub.baselines import refresh
from benchhub.baselines.models import Baseline, DirtyRun
from benchhub.baselines.refresh import baselines_refresh, mark_keys
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import small_document

Status = Submission.Status


def publish(user, value: float, status=Status.APPROVED) -> Submission:
    document = small_document()
    document["runs"][0]["measurements"][1]["value"] = value
    return submission_create(submitter=user, document=document, status=status).submission


def clients_20(fingerprint: str) -> Baseline:
    return Baseline.objects.get(fingerprint=fingerprint, parameters={"clients": 20})


class HeldOpen:
    """``change`` run on a connection of its own, in a transaction that
    commits only when ``commit`` is called."""

    def __init__(self, change: Callable[[], object]) -> None:
        self.done = threading.Event()
        self._commit = threading.Event()
        self._committed = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(change,))
        self._thread.start()
        assert self.done.wait(20), "the change did not get to its commit"
        assert self.error is None, self.error

    def _run(self, change: Callable[[], object]) -> None:
        try:
            with transaction.atomic():
                change()
                self.done.set()
                assert self._commit.wait(20), "never told to commit"
        except BaseException as error:  # reported by the test's thread
            self.error = error
            self.done.set()
        finally:
            self._committed.set()
            connections.close_all()

    def commit(self) -> None:
        self._commit.set()
        assert self._committed.wait(20)
        self._thread.join(20)
        assert self.error is None, self.error


def commit_after_the_read(monkeypatch, held: list[HeldOpen]) -> None:
    """Commit the held transaction once the refresh has read the key's data
    and is writing its results (its scores), before it clears the marks."""
    write_scores = refresh._write_scores

    def committing_first(changed):
        while held:
            held.pop().commit()
        return write_scores(changed)

    monkeypatch.setattr(refresh, "_write_scores", committing_first)


@pytest.mark.django_db(transaction=True)
def test_an_upload_committed_during_a_rebuild_is_counted_by_the_next_round(bob, alice, monkeypatch):
    (key,) = {run.fingerprint for run in Run.objects.filter(submission=publish(bob, 1000.0))}
    baselines_refresh()
    mark_keys([key], timezone.now(), rebuild=True)  # the nightly recompute, say
    claimed = refresh._claim(10)
    # The upload stored its rows and their mark (its time taken now, before
    # the rebuild starts) and has not committed yet.
    upload = HeldOpen(lambda: publish(alice, 3000.0))
    commit_after_the_read(monkeypatch, [upload])

    refresh._rebuild(key)
    refresh._finish(claimed)
    assert clients_20(key).n == 1  # the rebuild did not see the upload
    assert DirtyRun.objects.exists()  # but left its mark for the next round
    baselines_refresh()

    assert (clients_20(key).n, clients_20(key).maximum) == (2, 3000.0)
    assert not DirtyRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_approval_committed_during_a_rebuild_is_counted_by_the_next_round(
    bob, alice, monkeypatch
):
    """The pending run's mark is there when the rebuild reads the marks;
    the approval marks it again, committing after the read: the rebuild
    clears the mark it read, not the approval's."""
    publish(bob, 1000.0)
    pending = publish(alice, 3000.0, status=Status.PENDING)
    (key,) = set(Run.objects.values_list("fingerprint", flat=True))
    mark_keys([key], timezone.now(), rebuild=True)
    claimed = refresh._claim(10)
    approval = HeldOpen(
        lambda: submission_moderate(submission=pending, actor=None, action="approve")
    )
    commit_after_the_read(monkeypatch, [approval])

    refresh._rebuild(key)
    refresh._finish(claimed)
    baselines_refresh()

    assert (clients_20(key).n, clients_20(key).maximum) == (2, 3000.0)
    assert not DirtyRun.objects.exists()
