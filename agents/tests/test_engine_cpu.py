"""The load engine's own CPU share (what the server's client-bound flag reads)."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from benchhub_agent.benchmarks import _engine_cpu

linux_only = pytest.mark.skipif(
    sys.platform != "linux", reason="the scheduler's per-thread statistics are Linux's"
)


def measured(work) -> tuple[float, float]:
    found: list[tuple[float, float]] = []

    def thread() -> None:
        meter = _engine_cpu.ThreadMeter()
        work()
        found.append(meter.stop())

    runner = threading.Thread(target=thread)
    runner.start()
    runner.join()
    return found[0]


def spin(seconds: float = 0.3) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


@linux_only
def test_a_thread_that_never_waits_is_saturated_however_busy_the_machine():
    # On a CPU or runnable and waiting for one: other work on the machine cannot hide
    # that this thread always had something to do.
    busy, wall = measured(spin)
    assert _engine_cpu.share(busy, wall) >= 95


def test_a_thread_waiting_on_something_else_is_not():
    busy, wall = measured(lambda: time.sleep(0.3))
    assert _engine_cpu.share(busy, wall) < 20


def test_a_process_share_adds_its_threads_and_is_capped_at_one_core():
    assert _engine_cpu.process_share([(0.3, 1.0), (0.4, 0.9)]) == 70.0
    assert _engine_cpu.process_share([(0.8, 1.0), (0.7, 1.0)]) == 100.0
    assert _engine_cpu.process_share([]) == 0.0
    assert _engine_cpu.share(1.0, 0.0) == 0.0


def test_the_note_names_every_point():
    note = _engine_cpu.point_note({1: 31.04, 8: 97.5})
    assert note.endswith("clients=1: 31 %, clients=8: 98 %")
