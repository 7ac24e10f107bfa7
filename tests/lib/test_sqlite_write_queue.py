"""The write queue of the embedded default's SQLite backend (lib/sqlite):
first come, first served, and a waiter whose time runs out leaves it.
With SQLite itself: tests/baselines/test_embedded_write_lock.py."""

from __future__ import annotations

import threading
import time

from benchhub.lib.sqlite.base import WriteQueue


def wait_until(condition) -> None:
    for _ in range(1000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("the threads never got there")


def test_the_turn_goes_to_the_waiters_in_the_order_they_came():
    queue = WriteQueue()
    assert queue.acquire(timeout=1)
    order = []

    def writer(name: str) -> None:
        assert queue.acquire(timeout=60)
        order.append(name)
        queue.release()

    threads = []
    for count, name in enumerate(["first", "second", "third"], start=1):
        threads.append(threading.Thread(target=writer, args=(name,)))
        threads[-1].start()
        wait_until(lambda count=count: queue.waiting == count)
    queue.release()
    for thread in threads:
        thread.join(timeout=60)

    assert order == ["first", "second", "third"]
    assert queue.acquire(timeout=1)  # the last one passed it back


def test_a_waiter_whose_time_runs_out_leaves_the_queue_without_the_turn():
    queue = WriteQueue()
    assert queue.acquire(timeout=1)

    assert not queue.acquire(timeout=0.01)
    assert queue.waiting == 0
    queue.release()
    assert queue.acquire(timeout=1)  # not handed to the waiter that left
