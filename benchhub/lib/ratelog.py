"""Warnings said once an interval, however often their cause repeats.

While Redis is away every request meets it (its cache reads, its task
queueing): a warning per request wrote thousands of lines in seconds and
buried everything else. The first occurrence of each kind is logged at once;
repeats within the interval are counted, and the next line after it says
how many there were."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

INTERVAL_SECONDS = 10.0


class RateLimitedLog:
    def __init__(
        self,
        logger: logging.Logger,
        interval: float = INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger, self.interval, self._clock = logger, interval, clock
        self._lock = threading.Lock()
        self._logged_at: dict[Hashable, float] = {}
        self._repeats: dict[Hashable, int] = {}

    def warning(self, kind: Hashable, message: str, *args: object) -> None:
        """Log ``message % args`` unless a warning of this ``kind`` was logged
        within the interval (then count it)."""
        now = self._clock()
        with self._lock:
            last = self._logged_at.get(kind)
            if last is not None and now - last < self.interval:
                self._repeats[kind] = self._repeats.get(kind, 0) + 1
                return
            self._logged_at[kind] = now
            repeats = self._repeats.pop(kind, 0)
        if repeats:
            message += "; %d more like it since the last such line"
            args = (*args, repeats)
        self.logger.warning(message, *args)
