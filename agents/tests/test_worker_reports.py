"""A benchmark's client processes report through a queue, then exit. The
parent waits for a report, and when none came, looks whether the workers
are still alive; a report that arrives between the two (the workers'
last ones, on a busy machine) was taken for a crash: select-update said
"worker processes died" after a run that had finished (seen in the suite
with two other test runs on the same two cores). The interleaving is
replayed here: the wait finds nothing, then every worker has exited,
and the reports are in the queue."""

from __future__ import annotations

import queue
from types import SimpleNamespace

import pytest
from benchhub_agent.benchmarks import _tpcb_processes, select_update
from benchhub_agent.benchmarks.base import SilentProgress


class LateQueue:
    """Empty at the first wait; then the reports the workers left."""

    def __init__(self, reports: list[object]) -> None:
        self.reports = list(reports)
        self.waits = 0

    def get(self, timeout: float | None = None) -> object:
        self.waits += 1
        if self.waits == 1 or not self.reports:
            raise queue.Empty
        return self.reports.pop(0)


def exited(code: int = 0) -> SimpleNamespace:
    return SimpleNamespace(is_alive=lambda: False, exitcode=code)


def collect(results: LateQueue, workers: list[SimpleNamespace]) -> list[dict]:
    return select_update._collect(
        results, workers, [0], SilentProgress(), SimpleNamespace(value=0.0), True
    )


def test_select_update_reads_the_reports_of_workers_that_exited_meanwhile():
    tallies = [{"committed": 5}, {"committed": 7}]
    results = LateQueue([("done", [tallies[0]]), ("done", [tallies[1]])])

    assert collect(results, [exited(), exited()]) == tallies


def test_select_update_workers_that_exited_without_reporting_are_named_with_their_codes():
    with pytest.raises(RuntimeError) as raised:
        collect(LateQueue([]), [exited(0), exited(-9)])
    assert str(raised.value) == (
        "select-update: worker processes exited without reporting (exit codes 0, -9)"
    )


def test_tpcb_reads_the_report_of_workers_that_exited_meanwhile():
    report = ("done", {"transactions": 3})
    results = LateQueue([report])

    assert _tpcb_processes._next_result(results, [exited(), exited()], deadline=1e18) == report


def test_tpcb_workers_that_crashed_without_reporting_are_named():
    crashed = r"tpcb: client processes exited without reporting \[1\]"
    with pytest.raises(RuntimeError, match=crashed):
        _tpcb_processes._next_result(LateQueue([]), [exited(0), exited(1)], deadline=1e18)
