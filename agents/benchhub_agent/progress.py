"""A progress bar on stderr, so stdout stays clean for the results or the document."""

from __future__ import annotations

import sys
import time
from typing import TextIO

REDRAW_INTERVAL_S = 0.1
WIDTH = 30


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
