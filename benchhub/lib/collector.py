"""Python's cyclic garbage collector: what a web process loads at start
set aside from its passes, and the passes paused around work that allocates
many short-lived, acyclic objects.

``freeze_what_startup_loaded()`` (benchhub/wsgi.py, so every gunicorn worker
and runserver) imports the URLconf, and with it every view, serializer and
form, then moves everything alive into the collector's permanent generation
(``gc.freeze``): a pass over the oldest generation walks only what was made
since. Those objects live as long as the process anyway. Measured with the
collector's own callbacks, CPU per request in one process (EPYC family 26,
1 M measurements, benchmarks/compare.py's data): the sql-bench comparison
page 26.8 ms of which 9.6 in the collector before, 19.3 and 0.9 after;
a measurement list of 100 rows 30.1 and 15.5 before, 19.8 and 2.5 after;
of 1,000 rows 213 and 109 before, 157 and 55 after.

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


def freeze_what_startup_loaded() -> None:
    """Import the URLconf (every URL module and what it imports), collect
    once, and freeze what is alive: call once Django is set up."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 -- the import is the point
    gc.collect()
    gc.freeze()


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
