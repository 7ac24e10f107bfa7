"""One computation of an answer at a time: a second request for it waits
for the first (at most a limit), or computes itself if the first fails.

Transactional tests: nothing is kept inside a transaction, so the usual
test transaction would keep nothing. The fixtures are in conftest.py, the
helpers in kept_answers.py."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from benchhub.comparisons import kept
from tests.comparisons.kept_answers import QUERY, URL

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_nothing_kept_before", "_exact"),
]


class _SlowComputation:
    """A computation in another thread that holds until released: what a
    second request for the same answer meets while the first computes."""

    PARTS = ("asked twice at once", 1)

    def __init__(self, *, fails: bool = False) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.fails = fails
        self.thread = threading.Thread(target=self._ask)

    def _compute(self) -> str:
        self.started.set()
        assert self.release.wait(30)
        if self.fails:
            raise RuntimeError("the first computation failed")
        return "the first one's answer"

    def _ask(self) -> None:
        try:
            with pytest.raises(RuntimeError) if self.fails else contextlib.nullcontext():
                kept.kept_answer(self.PARTS, self._compute, metric=1)
        finally:
            connections.close_all()

    def __enter__(self) -> _SlowComputation:
        self.thread.start()
        assert self.started.wait(30)
        return self

    def __exit__(self, *exc_info) -> None:
        self.release.set()
        self.thread.join(30)


def _ask_in_another_thread() -> tuple[threading.Thread, list]:
    """The second request: (its thread, [its answer, computed by itself?])."""
    outcome: list = []

    def compute() -> str:
        outcome.append("computed")
        return "the second one's answer"

    def ask() -> None:
        try:
            outcome.insert(0, kept.kept_answer(_SlowComputation.PARTS, compute, metric=1))
        finally:
            connections.close_all()

    thread = threading.Thread(target=ask)
    thread.start()
    return thread, outcome


def _waiting_for_another() -> bool:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if kept.waiting:
            return True
        time.sleep(0.02)
    return False


def test_an_answer_asked_for_while_another_process_computes_it_is_computed_once():
    with _SlowComputation():
        second, outcome = _ask_in_another_thread()
        assert _waiting_for_another()
    second.join(30)
    assert outcome == ["the first one's answer"]


def test_a_second_request_computes_itself_if_the_first_fails():
    with _SlowComputation(fails=True):
        second, outcome = _ask_in_another_thread()
        assert _waiting_for_another()
    second.join(30)
    assert outcome == ["the second one's answer", "computed"]


def test_a_second_request_waits_for_the_first_at_most_the_limit(monkeypatch):
    monkeypatch.setattr(kept, "WAIT_SECONDS", 0.2)
    with _SlowComputation():
        second, outcome = _ask_in_another_thread()
        second.join(30)
        assert outcome == ["the second one's answer", "computed"]


def test_the_real_api_computes_a_comparison_asked_twice_at_once_once(
    stored, anonymous_api, monkeypatch
):
    """Two requests of the API at the same time: the cells statement runs once."""
    statements: list[str] = []
    original = kept._versions_and_entry

    def versions_slowly(metric: int, digest: str | None) -> tuple:
        read = original(metric, digest)
        time.sleep(0.3)  # both requests are in before either has computed
        return read

    barrier = threading.Barrier(2)

    def ask() -> None:
        try:
            barrier.wait(10)
            with CaptureQueriesContext(connection) as queries:
                response = anonymous_api.get(URL, QUERY)
            assert response.status_code == 200
            statements.extend(q["sql"] for q in queries.captured_queries)
        finally:
            connections.close_all()

    monkeypatch.setattr(kept, "_versions_and_entry", versions_slowly)
    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sum("percentile_cont" in sql for sql in statements) == 1
