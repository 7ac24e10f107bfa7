"""How busy the load engine itself was: what the server's ``client-bound`` flag reads.

Each thread that drives clients measures itself from the start of the load to its end:
on Linux, the time it was on a CPU *or runnable and waiting for one*
(``/proc/thread-self/schedstat``), so that an engine starved of CPU by other work on the
machine counts as busy too — it could not keep up, whoever took the CPU; elsewhere its CPU
time (``time.thread_time``). A worker process's share is the sum over its threads over the
wall-clock time of the load, capped at 100 %: one event loop, or threads under one GIL, use
one core at most, so a worker near 100 % set the pace of its clients, not the database.
The compiled PostgreSQL loop's threads hold no GIL, a core each: there the busiest
thread's share is the process's (``_pg_compiled.run_threads``).

A point reports its busiest worker; the run reports its busiest point as
``load_engine_cpu`` (95 % or more flags the run ``client-bound`` on the server).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

SCHEDSTAT = "/proc/thread-self/schedstat"


def _schedstat_s() -> float | None:
    try:
        with open(SCHEDSTAT) as stat:
            on_cpu_ns, waiting_ns, _ = stat.read().split()
    except (OSError, ValueError):
        return None
    return (int(on_cpu_ns) + int(waiting_ns)) / 1e9


class ThreadMeter:
    """This thread's busy time (on a CPU or waiting for one) since it was made."""

    def __init__(self) -> None:
        self.scheduler = _schedstat_s() is not None
        self.busy0 = self._busy()
        self.wall0 = time.perf_counter()

    def _busy(self) -> float:
        if self.scheduler:
            found = _schedstat_s()
            if found is not None:
                return found
        return time.thread_time()

    def stop(self) -> tuple[float, float]:
        """(busy seconds, wall seconds) since the meter was made."""
        return self._busy() - self.busy0, time.perf_counter() - self.wall0


def share(busy_s: float, wall_s: float) -> float:
    """Busy time as a percentage of the wall-clock time, 0 to 100, one decimal."""
    if wall_s <= 0:
        return 0.0
    return round(max(0.0, min(100.0, 100.0 * busy_s / wall_s)), 1)


def process_share(readings: Iterable[tuple[float, float]]) -> float:
    """A worker process's share from its threads' (busy, wall) readings."""
    readings = list(readings)
    if not readings:
        return 0.0
    return share(sum(busy for busy, _ in readings), max(wall for _, wall in readings))


def children_cpu_s() -> float | None:
    """CPU seconds of this process's waited-for children (a tool such as pgbench run as a
    subprocess), or None where the platform does not count them."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def point_note(by_point: dict[int, float]) -> str:
    """The per-point figures, for the run's note."""
    # "clients=1: 31 %", as the agent names a point elsewhere (no "1 clients")
    shown = ", ".join(f"clients={clients}: {cpu:.0f} %" for clients, cpu in by_point.items())
    return f"load engine CPU (busiest worker process, on a CPU or waiting for one): {shown}"
