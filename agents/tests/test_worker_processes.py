"""How a load's parent ends its worker processes (benchmarks/_worker_processes.py)."""

from __future__ import annotations

import multiprocessing
import signal
import time

from benchhub_agent.benchmarks import _worker_processes


def _deaf_to_sigterm(ready) -> None:
    # As a C library's handler that returns (libfbclient's, inherited by a fork) leaves it.
    signal.signal(signal.SIGTERM, lambda _number, _frame: None)
    ready.set()
    time.sleep(120)


def test_a_worker_that_outlives_sigterm_is_killed():
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    worker = ctx.Process(target=_deaf_to_sigterm, args=(ready,), daemon=True)
    worker.start()
    assert ready.wait(timeout=30)

    _worker_processes.stop([worker])

    assert not worker.is_alive()
    assert worker.exitcode == -signal.SIGKILL
