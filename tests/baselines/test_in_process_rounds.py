"""The embedded default's in-process baseline rounds, one at a time: a request
that finds one running, or one just ended, leaves the next to a waiter
thread, which takes the marks of every request that returned to it."""

from __future__ import annotations

import threading
import time

import pytest

from benchhub.baselines import tasks
from benchhub.results.services import submission_create
from tests.factories import small_document


def join_waiters() -> None:
    for thread in threading.enumerate():
        if thread.name == tasks.WAITER_THREAD:
            thread.join(timeout=60)


def test_a_request_that_finds_a_round_running_has_a_waiter_run_the_next_unless_one_already_waits(
    monkeypatch,
):
    # In-process (eager) rounds, one at a time: the first request to find
    # one running starts a waiter, which runs the next one after it; that
    # round starts after the commits of those that came meanwhile and so
    # takes their marks; they return at once. Before, all of them returned,
    # and the marks of a burst's last uploads stayed for a change that
    # might not come.
    rounds = []
    first_started, first_may_end = threading.Event(), threading.Event()

    def round_(**kwargs) -> tuple[int, int]:
        rounds.append(threading.current_thread().name)
        if len(rounds) == 1:
            first_started.set()
            first_may_end.wait(timeout=60)
        return 1, 0  # one key done, none left

    monkeypatch.setattr(tasks, "baselines_refresh", round_)
    monkeypatch.setattr(tasks, "_claimable_marks", lambda: 0)  # no database in this test
    first = threading.Thread(target=tasks.baselines_refresh_task.apply, name="first")
    first.start()
    assert first_started.wait(timeout=60)
    second = threading.Thread(target=tasks.baselines_refresh_task.apply, name="second")
    second.start()
    second.join(timeout=60)  # returned: its waiter waits
    assert tasks._next_in_process_round.locked()
    tasks.baselines_refresh_task.apply()  # a third finds the waiter there
    third_returned_with = list(rounds)
    first_may_end.set()
    first.join(timeout=60)
    join_waiters()

    assert third_returned_with == ["first"]
    assert rounds == ["first", tasks.WAITER_THREAD]


def test_a_change_soon_after_a_round_leaves_the_next_to_a_waiter_after_the_interval(
    monkeypatch,
):
    # A round's fixed cost is shared: within IN_PROCESS_ROUND_INTERVAL of
    # the last round no request runs one; the first starts a waiter, which
    # runs one round for all of them once the interval is over, and none of
    # them waits for it.
    rounds = []

    def round_(**kwargs) -> tuple[int, int]:
        rounds.append((threading.current_thread().name, time.monotonic()))
        return 1, 0

    monkeypatch.setattr(tasks, "baselines_refresh", round_)
    last_round_end = time.monotonic()
    monkeypatch.setattr(tasks, "_last_in_process_round_end", last_round_end)
    returned_after = []
    for _ in range(3):
        started = time.monotonic()
        tasks.baselines_refresh_task.apply()
        returned_after.append(time.monotonic() - started)
    rounds_by_then = list(rounds)
    join_waiters()

    assert rounds_by_then == []
    assert max(returned_after) < tasks.IN_PROCESS_ROUND_INTERVAL / 2
    assert [name for name, _ in rounds] == [tasks.WAITER_THREAD]
    assert rounds[0][1] - last_round_end >= tasks.IN_PROCESS_ROUND_INTERVAL
    assert not tasks._in_process_round.locked()
    assert not tasks._next_in_process_round.locked()


def test_on_a_quiet_site_a_change_runs_its_round_at_once_and_the_next_one_soon_after_waits(
    monkeypatch,
):
    rounds = []
    monkeypatch.setattr(tasks, "_claimable_marks", lambda: 0)  # no rebuild mark left either
    monkeypatch.setattr(
        tasks,
        "baselines_refresh",
        lambda **kwargs: rounds.append(threading.current_thread().name) or (1, 0),
    )
    monkeypatch.setattr(
        tasks, "_last_in_process_round_end", time.monotonic() - tasks.IN_PROCESS_ROUND_INTERVAL
    )

    tasks.baselines_refresh_task.apply()
    at_once = list(rounds)
    tasks.baselines_refresh_task.apply()  # within the interval of that round
    rounds_by_then = list(rounds)
    join_waiters()

    assert at_once == [threading.current_thread().name]
    assert rounds_by_then == at_once
    assert rounds == [*at_once, tasks.WAITER_THREAD]


@pytest.mark.django_db(transaction=True)
def test_the_waiters_rounds_take_the_marks_of_every_request_that_returned_to_it(alice, monkeypatch):
    # Found in review: a request that returns to the waiter may have marked
    # another key than the one the waiter's first round takes (the oldest),
    # and nothing would take it after them. The waiter goes on while marks
    # are left (a bounded number of rounds).
    from django.db import connection

    from benchhub.baselines import services as baseline_services
    from benchhub.baselines.models import DirtyKey

    monkeypatch.setattr(baseline_services, "_queue_refresh", lambda: None)  # no round yet
    for rows in (1000, 2000):  # two comparability keys
        document = small_document()
        document["runs"][0]["parameters"]["rows"] = rows
        submission_create(submitter=alice, document=document, status="approved")
    assert DirtyKey.objects.count() == 2

    assert tasks._in_process_round.acquire(blocking=False)  # a round is running
    released = False
    try:

        def waiter() -> None:
            try:
                tasks.baselines_refresh_task.apply()
            finally:
                connection.close()

        second = threading.Thread(target=waiter)
        second.start()
        for _ in range(1000):
            if tasks._next_in_process_round.locked():
                break
            time.sleep(0.01)
        assert tasks._next_in_process_round.locked()
        tasks.baselines_refresh_task.apply()  # a third returns to the waiter
        tasks._in_process_round.release()  # the running round ends
        released = True
        second.join(timeout=60)
        join_waiters()
    finally:
        if not released:
            tasks._in_process_round.release()

    assert not tasks._in_process_round.locked()
    assert list(DirtyKey.objects.values_list("fingerprint", flat=True)) == []
