"""CPU placement of the load generator relative to the database server (seed 001).

Seed 001 found a backup three times slower with client and server on the same
core than on different cores. ``--pin same_core|other_core`` reproduces that:
the server side is pinned to one core (PostgreSQL: each connection's backend
process; MySQL/MariaDB: every thread of the server process, restored after
the run) and the agent's worker processes to that core or to all the others.
Linux only: os.sched_setaffinity.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

PLACEMENTS = ("same_core", "other_core")


class PinningError(RuntimeError):
    pass


@dataclass(frozen=True)
class Placement:
    mode: str  # same_core | other_core | unpinned
    server_cpus: frozenset[int]
    client_cpus: frozenset[int]


UNPINNED = Placement("unpinned", frozenset(), frozenset())


def plan(mode: str | None, server_pid: int | None) -> Placement:
    """Choose the server's core and the client's cores.

    The server's core is the first one it is already allowed on (so a server
    an administrator pinned stays where it is); without that, CPU 0 of ours.
    """
    if not mode:
        return UNPINNED
    if not hasattr(os, "sched_setaffinity"):
        raise PinningError("--pin needs Linux (os.sched_setaffinity)")
    ours = os.sched_getaffinity(0)
    server_allowed = ours
    if server_pid:
        # Another pid namespace or no permission: fall back to our own CPUs.
        with contextlib.suppress(OSError):
            server_allowed = os.sched_getaffinity(server_pid)
    server_core = min(server_allowed & ours or ours)
    if mode == "same_core":
        client = frozenset({server_core})
    elif mode == "other_core":
        client = frozenset(ours - {server_core})
        if not client:
            raise PinningError("--pin other_core needs at least two CPUs")
    else:
        raise PinningError(f"--pin: expected one of {', '.join(PLACEMENTS)}, got {mode!r}")
    return Placement(mode, frozenset({server_core}), client)


def pin_process(pid: int, cpus: frozenset[int]) -> None:
    try:
        os.sched_setaffinity(pid, cpus)
    except OSError as exc:
        raise PinningError(
            f"cannot pin process {pid} to CPU {sorted(cpus)}: {exc.strerror}; "
            "run the agent as the database's OS user or root, or drop --pin"
        ) from exc


def thread_ids(pid: int) -> list[int]:
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return [pid]


class PinnedServer:
    """Pins every thread of a server process for the duration of a ``with`` block."""

    def __init__(self, pid: int | None, placement: Placement) -> None:
        self.pid = pid
        self.placement = placement
        self.saved: dict[int, set[int]] = {}

    def __enter__(self) -> PinnedServer:
        if self.placement.mode == "unpinned":
            return self
        if not self.pid:
            raise PinningError("--pin: the server's process id is not readable (remote server?)")
        for tid in thread_ids(self.pid):
            try:
                self.saved[tid] = os.sched_getaffinity(tid)
            except OSError:
                continue  # the thread ended meanwhile
            pin_process(tid, self.placement.server_cpus)
        return self

    def __exit__(self, *exc: object) -> None:
        for tid, cpus in self.saved.items():
            with contextlib.suppress(OSError):  # a thread that ended needs no restoring
                os.sched_setaffinity(tid, cpus)
