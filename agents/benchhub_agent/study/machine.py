"""What a study changes on the machine, and how each change is undone.

Every change is registered with :class:`Changes` as it is made, together with
the step that undoes it; ``undo_all`` undoes them in reverse order, also after
Ctrl-C or SIGTERM. A change and its registration happen with the interrupt
held back (:meth:`Changes.made`), so that no change is made without its undo
being known. The commands that change the machine (mount, losetup, mkfs) run
in a session of their own: a Ctrl-C in the terminal reaches the agent, which
stops between two changes, and never kills a mount half way.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import sysinfo
from .leftovers import Journal, Step, undo_steps


class StudyError(Exception):
    """What a study cannot do, in one line naming the problem."""


# Set to 1, the agent acts as a user without root whatever its real user: to see what a
# study would refuse there (and how the refusals are tested on a machine run as root).
AS_NON_ROOT = "BENCHHUB_AS_NON_ROOT"


def is_root() -> bool:
    return os.geteuid() == 0 and os.environ.get(AS_NON_ROOT) != "1"


# Mount options a remount sets and a later remount takes back: the VFS's own. A
# filesystem's own options (ext4 commit=, data=) may stay as set or be refused on remount.
REMOUNTABLE = frozenset(
    {
        "defaults",
        "noatime",
        "relatime",
        "strictatime",
        "nodiratime",
        "diratime",
        "lazytime",
        "nolazytime",
        "sync",
        "async",
        "dirsync",
    }
)
# The superblock's flags that are generic (the rest of its options are the filesystem's).
GENERIC_SUPER_OPTIONS = frozenset({"sync", "dirsync", "lazytime"})


@dataclass(frozen=True)
class Place:
    """A directory that is a mount point, as /proc/self/mountinfo shows it now."""

    directory: str
    fstype: str
    mount_options: tuple[str, ...]  # the mount's own (rw, relatime, nosuid …)
    super_options: tuple[str, ...]  # the filesystem's (inode64, space_cache=v2, sync …)
    source: str
    device: str | None  # the disk's kernel name: sda, nvme0n1, loop3
    disks: tuple[str, ...]  # the disks whose scheduler serves it

    @property
    def options_text(self) -> str:
        return ",".join(self.mount_options + self.super_options)


def _mountinfo_lines() -> list[str]:
    return (sysinfo.read_text("/proc/self/mountinfo") or "").splitlines()


def place_of(directory: str) -> Place:
    """The mount at ``directory``; a directory that is not a mount point is refused."""
    path = os.path.realpath(directory)
    if not os.path.isdir(path):
        raise StudyError(f"--on: {directory} is not a directory")
    found = None
    for line in _mountinfo_lines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        # A later mount on the same point hides an earlier one: the last one found wins.
        if sep and len(fields) >= 6 and len(tail) >= 3 and sysinfo._unescape(fields[4]) == path:
            found = (fields, tail)
    if found is None:
        raise StudyError(
            f"--on: {directory} is not a mount point: name the directory a filesystem is "
            "mounted on, so that the data lands on that filesystem alone"
        )
    fields, tail = found
    mount = sysinfo.Mount(path, fields[2], tail[0], fields[5].split(","), tail[1])
    disk = sysinfo.block_device(mount)
    return Place(
        directory=path,
        fstype=tail[0],
        mount_options=tuple(fields[5].split(",")),
        super_options=tuple(o for o in tail[2].split(",") if o and o not in ("rw", "ro")),
        source=tail[1],
        device=disk,
        disks=tuple(sysinfo.physical_disks(disk)) if disk else (),
    )


# --- the changes, and their undoing ------------------------------------------------


class Changes:
    """The changes a study made, each with its undo, undone last first; each also
    written to the study's journal as it is made (:mod:`.leftovers`), so that what a
    SIGKILL leaves can be undone later."""

    def __init__(self, journal: Journal | None = None) -> None:
        self._steps: list[Step] = []
        self.undone = 0
        self.journal = journal

    @contextlib.contextmanager
    def made(self) -> Iterator[Callable[..., None]]:
        """``with changes.made() as register: change(); register(what, kind, **args)`` —
        the interrupt waits until both are done. ``kind`` names the undo in
        ``leftovers.STEPS``; ``run=`` gives the live study's own where it keeps state."""
        held: list[int] = []
        previous = {
            number: signal.signal(number, lambda n, _f: held.append(n))
            for number in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield self._register
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            if held:
                raise KeyboardInterrupt

    def _register(
        self, what: str, kind: str, /, run: Callable[[], None] | None = None, **args: Any
    ) -> None:
        self._steps.append(Step(what, kind, args, run))
        if self.journal is not None:
            self.journal.write(self._steps)

    def undo_all(self) -> list[str]:
        """Undo everything, interrupts held back; what could not be undone, one line each
        (kept in the journal for ``study --undo-leftovers``)."""
        before = len(self._steps)
        failures = undo_steps(self._steps, self.journal)
        self.undone += before - len(self._steps)
        return failures


def command(*argv: str) -> str:
    """Run a system command in its own session; its error output in the StudyError."""
    try:
        done = subprocess.run(  # noqa: S603 — fixed programs, arguments from the study
            argv, capture_output=True, text=True, check=False, start_new_session=True, timeout=300
        )
    except FileNotFoundError:
        raise StudyError(f"{argv[0]} not found: it is part of util-linux") from None
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout).split()) or f"exit {done.returncode}"
        raise StudyError(f"{' '.join(argv)}: {said}")
    return done.stdout.strip()


# --- mount options -------------------------------------------------------------------


def check_remountable(levels: list[str]) -> None:
    for level in levels:
        for option in level.split(","):
            if option not in REMOUNTABLE:
                raise StudyError(
                    f"--vary mount-options: {option!r} is not one the agent can set and take "
                    "back by a remount; it varies only: " + ", ".join(sorted(REMOUNTABLE))
                )


def _base_options(original: Place) -> list[str]:
    generic = [o for o in original.super_options if o in GENERIC_SUPER_OPTIONS]
    return [*original.mount_options, *generic]


def remount(original: Place, level: str) -> None:
    """Remount as it was, then with ``level`` (``defaults``: as it was). The options of
    the mount table are not merged in (libmount would keep noatime through "relatime")."""
    extra = [o for o in level.split(",") if o and o != "defaults"]
    options = ",".join(["remount", *_base_options(original), *extra])
    command("mount", "--options-source=disable", "-o", options, original.directory)


def restore_mount(original: Place) -> None:
    remount(original, "defaults")
    now = place_of(original.directory)
    if sorted(now.mount_options + now.super_options) != sorted(
        original.mount_options + original.super_options
    ):
        raise StudyError(
            f"{original.directory} is mounted with {now.options_text}, was "
            f"{original.options_text}: mount -o remount,{original.options_text} "
            f"{original.directory}"
        )


# --- I/O schedulers --------------------------------------------------------------------


def scheduler_file(disk: str) -> Path:
    return sysinfo.SYS_BLOCK / disk / "queue" / "scheduler"


def schedulers(disk: str) -> tuple[list[str], str | None]:
    """The schedulers ``disk`` offers, and the active one."""
    text = sysinfo.read_text(scheduler_file(disk)) or ""
    active = re.search(r"\[([^\]]+)\]", text)
    return text.replace("[", "").replace("]", "").split(), active.group(1) if active else None


def set_scheduler(disk: str, name: str) -> None:
    try:
        scheduler_file(disk).write_text(name)
    except OSError as exc:
        raise StudyError(f"cannot set {scheduler_file(disk)} to {name}: {exc.strerror}") from exc


# --- directories the servers write in ---------------------------------------------------


def check_server_may_write(owner_uid: int, server: str) -> None:
    """Before anything is made: the server's OS user must be able to write in the
    directories the study makes for it, which only root can hand over."""
    if not is_root() and os.geteuid() != owner_uid:
        raise StudyError(
            f"{server} runs as uid {owner_uid}, and a directory made by this user (uid "
            f"{os.geteuid()}) is not its to write in: run the study as root (it hands the "
            "directory to the server's user) or as that user"
        )


def check_server_can_reach(directory: str, owner: tuple[int, int], server: str) -> None:
    """Every folder above ``directory`` must let the server's user through (x), or the
    server cannot open what the study makes there for it."""
    uid, gid = owner
    path = Path(os.path.realpath(directory))
    for folder in [path, *path.parents]:
        found = folder.stat()
        if found.st_uid == uid:
            allowed = found.st_mode & 0o100
        elif found.st_gid == gid:
            allowed = found.st_mode & 0o010
        else:
            allowed = found.st_mode & 0o001
        if not allowed and uid != 0:
            raise StudyError(
                f"{server} (uid {uid}) cannot reach {directory}: {folder} does not let it "
                f"through (mode {found.st_mode & 0o777:o}); choose a directory it can reach"
            )


def own_directory(place: Place, token: str, owner: tuple[int, int]) -> str:
    """``<mount point>/benchhub-study-<token>``, the server's OS user's."""
    path = os.path.join(place.directory, f"benchhub-study-{token}")
    os.mkdir(path, 0o700)
    if is_root():
        try:
            os.chown(path, *owner)
        except BaseException:
            os.rmdir(path)
            raise
    return path


def remove_tree(path: str) -> None:
    if os.path.lexists(path):
        shutil.rmtree(path)
