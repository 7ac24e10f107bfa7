"""What every load process the benchmarks start does first, and how its parent ends it.

Ctrl-C reaches the whole process group: a worker that took it as its own would print a
KeyboardInterrupt traceback per process, so workers leave it to their parent, which stops
them (:func:`stop`), removes the benchmark's objects and says one line. A parent killed
outright (kill -9) cannot stop them: each follows its parent instead, and ends the moment
it is gone rather than loading the server, holding the benchmark's tables and the
terminal's pipes for the rest of its duration.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Iterable
from typing import Any


def start_as_worker() -> None:
    """Called first in a worker process: no Ctrl-C of its own, and no life after its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent.sentinel,), daemon=True).start()


def _end_with(sentinel: Any) -> None:
    multiprocessing.connection.wait([sentinel])  # ready once the parent has ended
    os._exit(1)


def stop(workers: Iterable[Any]) -> None:
    """The parent's end of a load, however it ended: no worker goes on after it. A worker
    that outlives SIGTERM is killed: forked from a process that had loaded libfbclient,
    it inherits the library's SIGTERM handler, which does not end it (a worker left
    waiting for the start held a test run's pipes open until CI's timeout)."""
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
        worker.join(timeout=5)
        if worker.is_alive():
            worker.kill()
            worker.join(timeout=5)
