"""What a study killed by SIGKILL (or a power cut) left changed, and undoing it later.

A study holds Ctrl-C and SIGTERM until everything it changed is undone, but
nothing survives SIGKILL. So every change is also written, as it is made, to a
journal of the study's own: ``<agent data folder>/study-changes/<pid>.json``,
one step per change (its kind and the arguments to undo it), readable only by
its user because it holds the DSNs the undoing connects with. A study that
ends normally leaves no journal; one whose undo failed leaves the steps that
failed. Before changing anything, a study refuses to start while a journal of
a study no longer running exists, and ``benchhub-agent study --undo-leftovers``
undoes its steps, last made first, keeping those that fail.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..outbox import Outbox
from ..output import say
from ..target import Target


@dataclass
class Step:
    """One change made: what it was, in words, and how it is undone (``STEPS[kind]``)."""

    what: str
    kind: str
    args: dict[str, Any]
    run: Callable[[], None] | None = None  # the live study's own undo, where it keeps state

    def undo(self) -> None:
        if self.run is not None:
            self.run()
        else:
            STEPS[self.kind](**self.args)

    def as_record(self) -> dict[str, Any]:
        return {"what": self.what, "kind": self.kind, "args": self.args}


def folder() -> Path:
    return Outbox().path.parent / "study-changes"


def _process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/pid/stat), to tell a live
    study from a new process that reuses its pid; None where there is no /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()[19]


class Journal:
    """The journal of the running study: rewritten whole (atomically) at every change."""

    def __init__(self, command: str, where: Path | None = None) -> None:
        self.path = (where or folder()) / f"{os.getpid()}.json"
        self.head = {
            "pid": os.getpid(),
            "process_start": _process_start(os.getpid()),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": command,
        }

    @classmethod
    def resumed(cls, path: Path, head: dict[str, Any]) -> Journal:
        """The journal at ``path`` as its study wrote it: rewritten by whoever undoes it."""
        journal = cls(head.get("command", ""), path.parent)
        journal.path, journal.head = path, head
        return journal

    def write(self, steps: list[Step]) -> None:
        if not steps:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = json.dumps({**self.head, "changes": [s.as_record() for s in steps]}, indent=1)
        fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=".journal-")
        with os.fdopen(fd, "w") as file:  # mkstemp's file is its user's alone (0600)
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(name, self.path)


@dataclass
class Leftover:
    path: Path
    head: dict[str, Any]
    steps: list[Step]

    def describe(self) -> str:
        whats = "; ".join(s.what for s in reversed(self.steps))
        return (
            f"a study started {self.head.get('started', '?')} (pid {self.head.get('pid', '?')}, "
            f"no longer running) left {len(self.steps)} change(s) not undone: {whats}"
        )


def leftovers(where: Path | None = None) -> list[Leftover]:
    """The journals of studies that no longer run."""
    found = []
    for path in sorted((where or folder()).glob("*.json")):
        try:
            record = json.loads(path.read_text("utf-8"))
            pid = int(record["pid"])
            steps = [Step(c["what"], c["kind"], dict(c["args"])) for c in record["changes"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LeftoverError(f"{path} is not a study's journal ({exc}): remove it") from exc
        if _alive(pid, record.get("process_start")):
            continue
        found.append(Leftover(path, record, steps))
    return found


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    return started is None or _process_start(pid) in (None, started)


class LeftoverError(Exception):
    """A journal that cannot be read, or leftovers that block a new study."""


def refuse_if_left(where: Path | None = None) -> None:
    found = leftovers(where)
    if found:
        raise LeftoverError(
            f"{found[0].describe()}. Undo them first: benchhub-agent study --undo-leftovers "
            f"(or, once you have undone them yourself, remove {found[0].path})"
        )


def undo_leftovers(where: Path | None = None) -> int:
    """``study --undo-leftovers``: 0 when all are undone, 1 when some remain."""
    found = leftovers(where)
    if not found:
        say("study: no study left changes behind")
        return 0
    remaining = 0
    for leftover in found:
        say(f"study: {leftover.describe()}")
        failed = undo_steps(leftover.steps, Journal.resumed(leftover.path, leftover.head))
        for failure in failed:
            say(f"study: NOT undone: {failure}")
        remaining += len(failed)
    if remaining:
        say(f"study: {remaining} change(s) still not undone; they stay in the journal")
        return 1
    say("study: every change left behind is undone")
    return 0


def undo_steps(steps: list[Step], journal: Journal | None) -> list[str]:
    """Undo ``steps`` (in the order made) last first, the interrupts held back; the
    journal rewritten after each, so that a kill in between repeats no step. What could
    not be undone, one line each; those steps stay in ``steps`` and the journal."""
    failures, failed = [], []
    previous = {n: signal.signal(n, signal.SIG_IGN) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        while steps:
            step = steps.pop()
            try:
                step.undo()
            except Exception as exc:  # the others are undone all the same
                failures.append(f"{step.what}: {' '.join(str(exc).split())}")
                failed.insert(0, step)
            if journal is not None:
                journal.write(steps + failed)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    steps.extend(failed)
    return failures


# --- how each kind of change is undone -------------------------------------------------


def _remove_tree(path: str) -> None:
    from .machine import remove_tree

    remove_tree(path)


def _rmdir(path: str) -> None:
    if os.path.isdir(path):
        os.rmdir(path)


def _unlink(path: str) -> None:
    Path(path).unlink(missing_ok=True)


def _detach(device: str) -> None:
    from .machine import command

    command("losetup", "-d", device)


def _unmount(point: str) -> None:
    from .machine import command

    command("umount", point)


def _restore_mount(place: dict[str, Any]) -> None:
    from .machine import Place, restore_mount

    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in place.items()}
    restore_mount(Place(**fields))


def _restore_scheduler(disk: str, name: str) -> None:
    from .machine import set_scheduler

    set_scheduler(disk, name)


def _drop_postgresql(dsn: str, kind: str, name: str) -> None:
    from .placement import drop_postgresql

    drop_postgresql(Target.parse(dsn), kind, name)


def _drop_mysql(dsn: str, name: str) -> None:
    from .placement import drop_mysql

    drop_mysql(Target.parse(dsn), name)


def _remove_firebird_folder(dsn: str, directory: str) -> None:
    from .placement import remove_firebird_folder

    remove_firebird_folder(Target.parse(dsn), directory)


def _restore_settings(
    dsn: str, original: dict[str, Any], restart: list[str], restart_command: str | None
) -> None:
    from .config import Settings

    Settings.restorer(Target.parse(dsn), original, set(restart), restart_command).restore()


STEPS: dict[str, Callable[..., None]] = {
    "remove-tree": _remove_tree,
    "rmdir": _rmdir,
    "unlink": _unlink,
    "detach": _detach,
    "unmount": _unmount,
    "restore-mount": _restore_mount,
    "restore-scheduler": _restore_scheduler,
    "drop-postgresql": _drop_postgresql,
    "drop-mysql": _drop_mysql,
    "remove-firebird-folder": _remove_firebird_folder,
    "restore-settings": _restore_settings,
}
