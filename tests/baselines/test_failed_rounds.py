"""A round that fails inside its work, on PostgreSQL's own errors: it frees
its own claims, so that the next round takes the key at once (not after
CLAIM_EXPIRY), and never the claim of a round that took its key over.

The failures are real: the key's advisory lock (refresh._hold) held by a
connection of the test's, so that the round's wait for it runs out
(lock_timeout) or its backend is terminated while it waits."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator

import pytest
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from benchhub.baselines import refresh
from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.baselines.refresh import baselines_refresh
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import small_document


def publish(user) -> str:
    """An approved upload; its key, marked dirty."""
    submission_create(submitter=user, document=small_document(), status=Submission.Status.APPROVED)
    (key,) = DirtyKey.objects.values_list("fingerprint", flat=True)
    return key


@pytest.fixture
def other_round() -> Iterator[BaseDatabaseWrapper]:
    """A second connection, standing for another round at work on a key."""
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    yield other
    other.close()


def lock_key(other: BaseDatabaseWrapper, key: str, *, locked: bool = True) -> None:
    """Take (or give back) the key's advisory lock, as a round of it holds it."""
    function = "pg_advisory_lock" if locked else "pg_advisory_unlock"
    with other.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s, hashtext(%s))", [refresh._KEY_LOCKS, key])


def waits_for_locks_briefly() -> None:
    """This connection's lock waits end in an error after 50 ms (until the
    test's transaction ends)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout = '50ms'")


def test_a_round_failing_on_the_database_frees_its_claim_for_the_next_round(bob, other_round):
    key = publish(bob)
    lock_key(other_round, key)
    waits_for_locks_briefly()

    with pytest.raises(DatabaseError, match="lock timeout"):
        baselines_refresh()

    mark = DirtyKey.objects.get()
    assert (mark.claimed_at, mark.claim) == (None, None)  # free now, not in ten minutes
    assert not Baseline.objects.exists()  # its work rolled back
    lock_key(other_round, key, locked=False)
    assert baselines_refresh() == (1, 0)
    assert Baseline.objects.filter(fingerprint=key).count() == 2  # clients 1 and 20
    assert not DirtyKey.objects.exists()


def test_a_round_failing_on_the_database_leaves_the_claim_that_took_its_key_over(
    bob, other_round, monkeypatch
):
    key = publish(bob)
    lock_key(other_round, key)
    waits_for_locks_briefly()
    taken_over: list[DirtyKey] = []
    apply = refresh._apply

    def taken_over_first(fingerprint: str, runs: int) -> None:
        # The round is slow: its claim expires, and another round takes the key.
        with monkeypatch.context() as expired:
            expired.setattr(refresh, "CLAIM_EXPIRY", dt.timedelta(seconds=-1))
            taken_over.extend(refresh._claim(10))
        apply(fingerprint, runs)

    monkeypatch.setattr(refresh, "_apply", taken_over_first)
    with pytest.raises(DatabaseError, match="lock timeout"):
        baselines_refresh()
    monkeypatch.undo()

    assert [m.fingerprint for m in taken_over] == [key]
    assert DirtyKey.objects.get().claim == taken_over[0].claim  # still the other round's
    assert refresh._claim(10) == []  # so no third round takes the key meanwhile
    lock_key(other_round, key, locked=False)
    refresh._apply(key, refresh.RUNS_PER_ROUND)
    refresh._finish(taken_over)
    assert not DirtyKey.objects.exists()


def terminate_once_waiting(pid: int, done: threading.Event) -> threading.Thread:
    """Terminate backend ``pid`` once it waits for a lock (a database
    restarted, an administrator's pg_terminate_backend), from a connection
    of its own."""

    def terminate() -> None:
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_locks "
                        "WHERE pid = %s AND NOT granted",
                        [pid],
                    )
                    if cursor.fetchall():
                        done.set()
                        return
                time.sleep(0.05)
        finally:
            connections.close_all()

    thread = threading.Thread(target=terminate)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_a_round_whose_connection_is_lost_frees_its_claim_on_a_new_one(bob, other_round):
    """The failure took the round's connection with it: the release cannot
    run on that one."""
    key = publish(bob)
    lock_key(other_round, key)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    terminated = threading.Event()
    killer = terminate_once_waiting(pid, terminated)

    try:
        with pytest.raises(DatabaseError):
            baselines_refresh()
    finally:
        killer.join(30)
    assert terminated.is_set()

    connection.close()  # what a worker does after each task (and Django after each request)
    mark = DirtyKey.objects.get()
    assert (mark.claimed_at, mark.claim) == (None, None)
    lock_key(other_round, key, locked=False)
    assert baselines_refresh() == (1, 0)
    assert not DirtyKey.objects.exists()


def round_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    return pid


@pytest.mark.django_db(transaction=True)
def test_a_round_failing_as_it_ends_frees_its_claim(bob, monkeypatch):
    """The work done, the round's last transaction (_finish) fails: the
    key's mark is locked by another transaction, and the round's backend is
    terminated while it waits."""
    key = publish(bob)
    pid = round_pid()
    locked, terminated = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []

    def mark_locked() -> None:
        try:
            with transaction.atomic():
                list(DirtyKey.objects.select_for_update())
                locked.set()
                terminated.wait(20)  # then commits: the release can have the row
        finally:
            connections.close_all()

    finish = refresh._finish

    def finish_on_a_locked_mark(claimed: list[DirtyKey]) -> None:
        threads.append(threading.Thread(target=mark_locked))
        threads[-1].start()
        assert locked.wait(20)
        threads.append(terminate_once_waiting(pid, terminated))
        finish(claimed)

    monkeypatch.setattr(refresh, "_finish", finish_on_a_locked_mark)
    try:
        with pytest.raises(DatabaseError):
            baselines_refresh()
    finally:
        terminated.set()
        for thread in threads:
            thread.join(30)
    monkeypatch.undo()

    connection.close()
    mark = DirtyKey.objects.get()
    assert (mark.fingerprint, mark.claimed_at, mark.claim) == (key, None, None)
    assert baselines_refresh() == (1, 0)  # nothing left to apply: the mark goes
    assert not DirtyKey.objects.exists()
    assert Baseline.objects.filter(fingerprint=key).count() == 2
