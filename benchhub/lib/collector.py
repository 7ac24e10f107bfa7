"""Pausing Python's cyclic garbage collector around work that allocates
many short-lived, acyclic objects.

A comparison builds a tuple per run per cell (tens of thousands at a
million measurements) and lists of each cell's values. None of them forms
a cycle: reference counting frees them all when the request is done. But
every 700 allocations the collector starts a pass, and the passes over
the older generations walk the whole heap (Django's modules, models and
URL patterns included): measured on the sql-bench comparison of
benchmarks/compare.py, building the cells took 216 ms with the collector
and 139 ms without it.

``cyclic_gc_paused()`` turns the collector off for the block and back on
when the last overlapping block in the process ends (threads share one
collector); a collection the block deferred runs at the next allocation
past the threshold after that.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_paused = 0  # blocks inside cyclic_gc_paused(), over all threads
_was_enabled = False


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
