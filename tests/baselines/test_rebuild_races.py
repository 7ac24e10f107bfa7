"""A rebuild racing the changes it must not lose: an upload (or an
approval) that took its mark's time before the rebuild started but
committed after the rebuild read the key's data. Two real connections;
the upload's transaction is held open by its thread and committed at a
chosen moment of the rebuild."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from benchhub.baselines import marking, refresh
from benchhub.baselines.marking import mark_keys
from benchhub.baselines.models import Baseline, CountedRun, DirtyKey, DirtyRun
from benchhub.baselines.refresh import baselines_refresh
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


class Alongside:
    """``work`` in a thread with a connection of its own, started now; the
    caller goes on once it has finished or waits for a lock (which the
    caller's transaction may hold)."""

    def __init__(self, work: Callable[[], object]) -> None:
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(work,))
        self._thread.start()
        for _ in range(2000):  # a bound, not a timing: each turn asks PostgreSQL
            self._thread.join(0.01)
            if not self._thread.is_alive() or self._waiting_for_a_lock():
                return
        raise AssertionError("the work neither finished nor waited for a lock")

    def _run(self, work: Callable[[], object]) -> None:
        try:
            work()
        except BaseException as error:  # reported by the test's thread
            self.error = error
        finally:
            connections.close_all()

    @staticmethod
    def _waiting_for_a_lock() -> bool:
        with connection.cursor() as cursor:  # pg_locks is read live, not per transaction
            cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted)")
            return cursor.fetchone()[0]

    def join(self) -> None:
        self._thread.join(20)
        assert not self._thread.is_alive(), "the work never finished"
        assert self.error is None, self.error


def after_the_data_read(monkeypatch, work: Callable[[], object], started: list) -> None:
    """Start ``work`` alongside once the rebuild has read the key's data,
    before it writes anything."""
    read = refresh.baseline_measurements

    class Read(list):
        def iterator(self, chunk_size: int):
            return iter(self)

    def reading_first(*, fingerprints):
        rows = Read(read(fingerprints=fingerprints))
        started.append(Alongside(work))
        return rows

    monkeypatch.setattr(refresh, "baseline_measurements", reading_first)


@pytest.mark.django_db(transaction=True)
def test_a_slow_rebuild_whose_claim_was_taken_over_does_not_undo_a_later_round(
    bob, alice, monkeypatch
):
    """A claim older than CLAIM_EXPIRY is taken as abandoned, but its round
    may only be slow (the nightly batch of 100 keys, one worker): another
    refresh claims the key, rebuilds it and releases it; an approval marks
    it again and a third refresh counts the run. The slow round then
    rebuilds from data it read before that approval: it must not replace
    the counted runs and baselines the third one wrote."""
    publish(bob, 1000.0)
    pending = publish(alice, 3000.0, status=Status.PENDING)
    (key,) = set(Run.objects.values_list("fingerprint", flat=True))
    baselines_refresh()
    mark_keys([key], timezone.now(), rebuild=True)  # the nightly recompute
    slow = refresh._claim(10)
    DirtyKey.objects.update(claimed_at=timezone.now() - marking.CLAIM_EXPIRY * 2)
    assert baselines_refresh() == (1, 0)  # took the key over, rebuilt it, released it

    def approved_and_counted() -> None:
        submission_moderate(submission=pending, actor=None, action="approve")
        baselines_refresh()

    alongside: list[Alongside] = []
    after_the_data_read(monkeypatch, approved_and_counted, alongside)
    refresh._rebuild(key)  # the slow round gets to the key at last
    refresh._finish(slow)
    monkeypatch.undo()
    alongside.pop().join()
    baselines_refresh()

    assert (clients_20(key).n, clients_20(key).maximum) == (2, 3000.0)
    assert not DirtyRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_run_deleted_while_a_round_counts_it_leaves_the_baselines(bob, alice, monkeypatch):
    """An administrator deletes a run outright (the admin's run page) after
    the round that adds it has read it, before that round commits: the
    deletion found it not counted yet, the round counted it. Its values
    must leave the baselines all the same."""
    publish(bob, 1000.0)
    baselines_refresh()
    doomed = publish(alice, 3000.0)  # approved, marked, not counted yet
    (key,) = set(Run.objects.values_list("fingerprint", flat=True))
    merge = refresh._merge

    def deleted_first(*args, **kwargs):
        HeldOpen(lambda: Run.objects.filter(submission=doomed).delete()).commit()
        return merge(*args, **kwargs)

    monkeypatch.setattr(refresh, "_merge", deleted_first)
    baselines_refresh()
    monkeypatch.undo()
    baselines_refresh()
    baselines_refresh()

    assert (clients_20(key).n, clients_20(key).maximum) == (1, 1000.0)
    assert set(CountedRun.objects.values_list("run_id", flat=True)) == set(
        Run.objects.values_list("pk", flat=True)
    )
    assert not DirtyRun.objects.exists()


def _waiting_on_a_lock(thread: threading.Thread) -> bool:
    """True once another backend waits on a lock (the finishing round), False if the
    thread ended first; polled, no sleep the test's outcome depends on."""
    with connections["default"].cursor() as cursor:
        while thread.is_alive():
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database() AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return True
            thread.join(0.01)
    return False


@pytest.mark.django_db(transaction=True)
def test_an_upload_that_finds_its_key_marked_keeps_it_marked_past_a_round_finishing(bob, alice):
    """An upload of a key already marked leaves the mark as it is (uploads of one key
    do not take turns on its row). A round that finishes the key meanwhile, having
    counted bob's run, must still see the upload's run mark before it removes the key's
    mark: else the run would be marked with no key mark to bring a round to it."""
    (key,) = {run.fingerprint for run in Run.objects.filter(submission=publish(bob, 1000.0))}
    claimed = refresh._claim(10)
    refresh._apply(key, refresh.RUNS_PER_ROUND)  # bob's run counted, its mark gone
    upload = HeldOpen(lambda: publish(alice, 3000.0))  # found the key marked; not committed
    finishing = threading.Thread(target=lambda: (refresh._finish(claimed), connection.close()))
    finishing.start()
    waited = _waiting_on_a_lock(finishing)
    upload.commit()
    finishing.join(20)

    assert waited  # the round waited for the upload
    alices = Run.objects.filter(submission__submitter=alice).values_list("pk", flat=True)
    assert DirtyRun.objects.filter(run_id__in=list(alices)).exists()
    assert DirtyKey.objects.filter(fingerprint=key).exists()  # so a round will come
    baselines_refresh()
    assert (clients_20(key).n, clients_20(key).maximum) == (2, 3000.0)
