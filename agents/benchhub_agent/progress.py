"""Progress on stderr, so stdout stays clean for the results or the document.

On a terminal a bar redraws in place; elsewhere (a log, CI, a pipe) a line is
printed every few seconds (``$BENCHHUB_PROGRESS_INTERVAL``, default 5), so a
long run is never silent. A step without countable parts (building a table
with one INSERT … SELECT) shows its elapsed time the same way (:meth:`working`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

REDRAW_INTERVAL_S = 0.1
WIDTH = 30


def heartbeat_interval() -> float:
    try:
        return max(0.01, float(os.environ.get("BENCHHUB_PROGRESS_INTERVAL", "5")))
    except ValueError:
        return 5.0


class ProgressBar:
    """Redraws one line in place on a terminal; elsewhere prints one line per step."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty()
        self.total = 0
        self.done = 0
        self.label = ""
        self.started = 0.0
        self.drawn = 0.0
        self.interval = heartbeat_interval()

    def start(self, total: int, label: str) -> None:
        self.total, self.done, self.label = max(total, 1), 0, label
        self.started = self.drawn = time.monotonic()
        if self.interactive:
            self._draw()

    def advance(self, amount: int = 1) -> None:
        self.done = min(self.total, self.done + amount)
        now = time.monotonic()
        if self.interactive and now - self.drawn >= REDRAW_INTERVAL_S:
            self.drawn = now
            self._draw()
        elif not self.interactive and now - self.drawn >= self.interval:
            self.drawn = now
            percent = 100 * self.done // self.total
            self.stream.write(
                f"{self.label}: {percent}% ({self.done}/{self.total}) "
                f"after {now - self.started:.0f}s\n"
            )
            self.stream.flush()

    def finish(self) -> None:
        if not self.label:
            return
        elapsed = time.monotonic() - self.started
        if self.interactive:
            self.done = self.total
            self._draw()
            self.stream.write(f" {elapsed:.1f}s\n")
        else:
            self.stream.write(f"{self.label}: done in {elapsed:.1f}s\n")
        self.stream.flush()
        self.label = ""

    def _draw(self) -> None:
        filled = WIDTH * self.done // self.total
        bar = "#" * filled + "." * (WIDTH - filled)
        percent = 100 * self.done // self.total
        self.stream.write(f"\r{self.label:<24} [{bar}] {percent:3d}%")
        self.stream.flush()

    @contextlib.contextmanager
    def working(self, label: str) -> Iterator[None]:
        """A long step of one piece: its elapsed time, redrawn on a terminal, else a
        line every interval; then how long it took."""
        started = time.monotonic()
        stop = threading.Event()
        period = REDRAW_INTERVAL_S * 5 if self.interactive else self.interval

        def tick() -> None:
            while not stop.wait(period):
                elapsed = time.monotonic() - started
                if self.interactive:
                    self.stream.write(f"\r{label} … {elapsed:.0f}s")
                else:
                    self.stream.write(f"{label}: still working after {elapsed:.0f}s\n")
                self.stream.flush()

        thread = threading.Thread(target=tick, daemon=True)
        if self.interactive:
            self.stream.write(f"{label} …")
        thread.start()
        try:
            yield
        except BaseException:
            stop.set()
            thread.join()
            if self.interactive:  # the error's own line replaces the step's
                self.stream.write("\r\033[K")
                self.stream.flush()
            raise
        stop.set()
        thread.join()
        elapsed = time.monotonic() - started
        prefix = "\r" if self.interactive else ""
        self.stream.write(f"{prefix}{label}: done in {elapsed:.1f}s\n")
        self.stream.flush()


@contextlib.contextmanager
def working(progress: object, label: str) -> Iterator[None]:
    """``progress.working(label)`` when the progress can show a step, else nothing."""
    show = getattr(progress, "working", None)
    if show is None:
        yield
        return
    with show(label):
        yield
