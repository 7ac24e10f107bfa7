"""Django's SQLite backend, with the writers of one process queued in order.

SQLite has one write lock per database file. A writer that finds it taken
waits in SQLite's busy handler, which sleeps and retries with a growing
backoff (up to 100 ms a sleep) rather than queueing: under eight uploaders
in one runserver process, a writer that had waited a while polled rarely
and lost to newer ones, and requests whose write held the lock for 15 ms
waited over a second for their turn (docs/performance.md, "Embedded
default, afternoon").

So within a process, a writer first takes its turn in a first-come,
first-served queue (WriteQueue), then the write lock: a transaction that
takes the write lock when it begins (BEGIN IMMEDIATE, settings.py), and a
write statement outside a transaction. Whoever ends a write hands the turn
to the next waiter at once. The queue only orders the writers; SQLite's
lock still guards the data: a writer that waits longer than the busy
timeout for its turn goes on to SQLite's busy handler as before (and says
so in the log), so a turn never lost can hang a request, and writers of
other processes (a manage.py command beside runserver) still meet only
the busy handler.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable
from typing import Any

from django.db.backends.sqlite3 import base

logger = logging.getLogger(__name__)

# Statements that take the write lock on their own, outside a transaction
# (the first word; WITH … INSERT is rare enough to be left to the busy
# handler).
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class WriteQueue:
    """A lock handed to its waiters in the order they came (threading.Lock
    wakes an arbitrary one, and a newcomer may take it first)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self, timeout: float) -> bool:
        """Wait for this thread's turn, up to ``timeout`` seconds. False
        when the time ran out: the caller goes on without its turn."""
        with self._mutex:
            if not self._held:
                self._held = True
                return True
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        try:
            if turn.acquire(timeout=timeout):
                return True
        except BaseException:
            if not self._leave(turn):
                self.release()  # handed over meanwhile: pass it on
            raise
        return not self._leave(turn)  # or handed over since the timeout

    def _leave(self, turn: threading.Lock) -> bool:
        """Take a waiter out of the queue; False when it was handed the
        turn already."""
        with self._mutex:
            if turn not in self._waiters:
                return False
            self._waiters.remove(turn)
            return True

    def release(self) -> None:
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()  # the turn passes on, still held
            else:
                self._held = False

    @property
    def waiting(self) -> int:
        return len(self._waiters)


_queues: dict[str, WriteQueue] = {}
_queues_mutex = threading.Lock()


def write_queue(name: str) -> WriteQueue:
    """The queue of the writers of this process to one database file."""
    with _queues_mutex:
        return _queues.setdefault(name, WriteQueue())


class DatabaseWrapper(base.DatabaseWrapper):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._has_turn = False

    def create_cursor(self, name: str | None = None) -> SQLiteCursorWrapper:
        return self.connection.cursor(factory=lambda conn: SQLiteCursorWrapper(conn, self))

    def _start_transaction_under_autocommit(self) -> None:
        if self.transaction_mode not in ("IMMEDIATE", "EXCLUSIVE"):
            super()._start_transaction_under_autocommit()  # may read only: not queued
            return
        self._take_turn()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._pass_turn()
            raise

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._pass_turn()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._pass_turn()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._pass_turn()

    def _take_turn(self) -> None:
        if self._has_turn or self.is_in_memory_db():
            return
        timeout = float(self.settings_dict["OPTIONS"].get("timeout", 5))
        self._has_turn = write_queue(self.settings_dict["NAME"]).acquire(timeout)
        if not self._has_turn:
            logger.warning(
                "sqlite: no turn in the write queue after %.0f s; waiting on SQLite's lock",
                timeout,
            )

    def _pass_turn(self) -> None:
        if self._has_turn:
            self._has_turn = False
            write_queue(self.settings_dict["NAME"]).release()


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    """A write statement outside a transaction takes its turn too: left to
    the busy handler, it would rarely find the lock free between two
    queued writers."""

    def __init__(self, connection: Any, wrapper: DatabaseWrapper) -> None:
        super().__init__(connection)
        self._wrapper = wrapper

    def execute(self, query: str, params: Any = None) -> Any:
        if not self._autocommit_write(query):
            return super().execute(query, params)
        self._wrapper._take_turn()
        try:
            return super().execute(query, params)
        finally:
            self._wrapper._pass_turn()

    def executemany(self, query: str, param_list: Iterable[Any]) -> Any:
        if not self._autocommit_write(query):
            return super().executemany(query, param_list)
        self._wrapper._take_turn()
        try:
            return super().executemany(query, param_list)
        finally:
            self._wrapper._pass_turn()

    def _autocommit_write(self, query: str) -> bool:
        return (
            self._wrapper.autocommit
            and not self._wrapper._has_turn
            and query.lstrip()[:7].upper().startswith(_WRITES)
        )
