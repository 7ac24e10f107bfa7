"""Progress on stderr, so stdout stays clean for the results or the document.

On a terminal a bar redraws in place, with the time spent; elsewhere (a log,
CI, a pipe) a line is printed every few seconds (``$BENCHHUB_PROGRESS_INTERVAL``,
default 5), so a long run is never silent: a heartbeat thread prints (or
redraws) when no step ended within the interval, as during one 60-second
tpcb point, a long dump or sort. A step without countable parts (building a
table with one INSERT … SELECT) shows its elapsed time the same way
(:meth:`working`).
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
        self._lock = threading.Lock()  # the heartbeat thread and the caller both write
        self._beating = threading.Event()
        self._heart: threading.Thread | None = None

    def start(self, total: int, label: str) -> None:
        self._stop_heartbeat()
        self.total, self.done, self.label = max(total, 1), 0, label
        self.started = self.drawn = time.monotonic()
        if self.interactive:
            self._draw()
        self._beating = threading.Event()
        self._heart = threading.Thread(target=self._beat, args=(self._beating,), daemon=True)
        self._heart.start()

    def advance(self, amount: int = 1) -> None:
        with self._lock:
            self.done = min(self.total, self.done + amount)
            self._show(time.monotonic())

    def _show(self, now: float) -> None:
        """Redraw or print a line if the last one is older than the pace (lock held)."""
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

    def _beat(self, stopped: threading.Event) -> None:
        """Between steps: a line every interval (a redraw every second on a terminal)."""
        period = 1.0 if self.interactive else self.interval
        while not stopped.wait(period):
            with self._lock:
                if not stopped.is_set():
                    self._show(time.monotonic())

    def close(self) -> None:
        """Stop the heartbeat without a last line: the run failed, its error follows."""
        self._stop_heartbeat()
        if self.interactive and self.label:
            self.stream.write("\r\033[K")
            self.stream.flush()
        self.label = ""

    def _stop_heartbeat(self) -> None:
        if self._heart is not None:
            self._beating.set()
            self._heart.join()
            self._heart = None

    def finish(self) -> None:
        self._stop_heartbeat()
        if not self.label:
            return
        elapsed = time.monotonic() - self.started
        if self.interactive:
            bar = "#" * WIDTH
            self.stream.write(f"\r{self.label:<24} [{bar}] 100% {elapsed:.1f}s\n")
        else:
            self.stream.write(f"{self.label}: done in {elapsed:.1f}s\n")
        self.stream.flush()
        self.label = ""

    def _draw(self) -> None:
        filled = WIDTH * self.done // self.total
        bar = "#" * filled + "." * (WIDTH - filled)
        percent = 100 * self.done // self.total
        elapsed = time.monotonic() - self.started
        self.stream.write(f"\r{self.label:<24} [{bar}] {percent:3d}% {elapsed:4.0f}s")
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
