"""A study's matrix: the factors varied, their levels, the cells and the order they run in.

Everything here is read and checked before the machine is changed, so that a
refusal leaves it as it was; :func:`preflight_text` says what will be done.
"""

from __future__ import annotations

import argparse
import itertools
import os
from dataclasses import dataclass, field
from typing import Any

from ..target import Target
from . import config, servers
from .machine import Place, StudyError, check_remountable, is_root, place_of, schedulers

# --vary's names, and the comparison axis each becomes on the site (dsn: engine or
# version, whichever differs between its servers).
AXES = {
    "filesystem": "filesystem",
    "mount-options": "mount_options",
    "io-scheduler": "io_scheduler",
    "config": "config_profile",
    "dsn": "engine",
    "protocol": "protocol",
    "pin": "cpu_placement",
}
# Factors whose levels are the server or the connection, not where the data lies.
CONNECTION_FACTORS = ("dsn", "protocol", "pin")
# A run's transactions are guessed at this rate when the study is estimated beforehand.
GUESSED_RATE = 2000.0
RUN_OVERHEAD_S = 3.0


@dataclass(frozen=True)
class Level:
    factor: str  # a key of AXES
    value: str  # ext4 (what the directory is), noatime, mq-deadline

    def __str__(self) -> str:
        return f"{self.factor}={self.value}"


@dataclass(frozen=True)
class Cell:
    levels: tuple[Level, ...]
    directory: int  # index into Plan.directories: where this cell's data lives

    @property
    def label(self) -> str:
        return ", ".join(str(level) for level in self.levels)

    def level(self, factor: str) -> str | None:
        return next((lvl.value for lvl in self.levels if lvl.factor == factor), None)


@dataclass
class Plan:
    factors: list[str]
    directories: list[str]  # made by --format-scratch, or given with --on
    places: list[Place | None]  # None: to be made by --format-scratch
    cells: list[Cell]
    repeat: int
    scratch: list[str] = field(default_factory=list)  # filesystems --format-scratch makes
    profiles: dict[str, dict[str, str]] = field(default_factory=dict)  # --vary config's
    # {dsn level, or "" for --dsn: the server}; {(that key, protocol): how to reach it}
    servers: dict[str, Target] = field(default_factory=dict)
    via: dict[tuple[str, str], Target] = field(default_factory=dict)
    axes: list[str] = field(default_factory=list)  # the site's name of each factor

    def server(self, cell: Cell) -> str:
        return cell.level("dsn") or ""

    @property
    def order(self) -> list[tuple[int, Cell]]:
        """Interleaved (ABCABC…): a drift of the machine spreads over every cell alike."""
        return [(visit, cell) for visit in range(self.repeat) for cell in self.cells]

    def letter(self, cell: Cell) -> str:
        return chr(ord("A") + self.cells.index(cell)) if len(self.cells) <= 26 else "?"


def parse_vary(raw: list[list[str]] | None) -> list[tuple[str, list[str]]]:
    """``--vary NAME [LEVEL;LEVEL…]`` given once or twice."""
    if not raw:
        raise StudyError(f"study: say what varies: --vary {' | '.join(AXES)}")
    found: list[tuple[str, list[str]]] = []
    for given in raw:
        name, levels = given[0], given[1:]
        if len(levels) > 1:
            raise StudyError(f"--vary {name}: give its levels as one argument: 'a;b;c'")
        if name not in AXES:
            raise StudyError(f"--vary {name!r}: unknown factor; one of {', '.join(AXES)}")
        if name in (f for f, _ in found):
            raise StudyError(f"--vary {name} given twice")
        split = [part.strip() for part in (levels[0].split(";") if levels else []) if part.strip()]
        if len(split) != len(set(split)):
            raise StudyError(f"--vary {name}: a level named twice in {levels[0]!r}")
        found.append((name, split))
    if len(found) > 2:
        raise StudyError("study: one or two factors vary, not more")
    return found


def build(args: argparse.Namespace, module: Any = None) -> Plan:
    varied = parse_vary(args.vary)
    factors = [name for name, _ in varied]
    if "filesystem" in factors and dict(varied)["filesystem"]:
        raise StudyError(
            "--vary filesystem takes no levels: they are the --on directories "
            "(or --fs with --format-scratch)"
        )
    servers_, axes = _servers(args, factors, dict(varied))
    if set(factors) <= {"config", *CONNECTION_FACTORS} and not args.on and not args.format_scratch:
        directories, places, scratch = [], [], []  # the data where the server keeps it
    else:
        directories, places, scratch = _directories(args, "filesystem" in factors)
    levels: list[list[Level]] = []
    profiles: dict[str, dict[str, str]] = {}
    via: dict[tuple[str, str], Target] = {}
    for name, given in varied:
        if name == "config":
            profiles = config.parse(given)
            levels.append([Level(name, profile) for profile in profiles])
        elif name == "filesystem":
            levels.append([Level(name, _fstype(places, scratch, i)) for i in range(len(places))])
        elif name == "mount-options":
            levels.append([Level(name, value) for value in _mount_levels(given, directories)])
        elif name == "io-scheduler":
            levels.append([Level(name, v) for v in _scheduler_levels(given, places, scratch)])
        elif name == "dsn":
            levels.append([Level(name, label) for label in servers_])
        elif name == "protocol":
            protocols = servers.protocol_levels(given)
            for key, target in servers_.items():
                for protocol, found in servers.connections(target, protocols).items():
                    via[(key, protocol)] = found
            levels.append([Level(name, protocol) for protocol in protocols])
        else:
            levels.append([Level(name, pin) for pin in servers.pin_levels(given, module, args)])
    cells = []
    for combination in itertools.product(*levels):
        index = 0
        if "filesystem" in factors:
            fstype = next(lvl.value for lvl in combination if lvl.factor == "filesystem")
            index = [_fstype(places, scratch, i) for i in range(len(places))].index(fstype)
        cells.append(Cell(tuple(combination), index))
    return Plan(
        factors, directories, places, cells, args.repeat, scratch, profiles, servers_, via, axes
    )


def _servers(args: argparse.Namespace, factors: list[str], varied: dict[str, list[str]]):
    """{key: target}: the --vary dsn servers, or --dsn's alone (key ""); the site's axes."""
    axes = [AXES[f] for f in factors]
    if "dsn" not in factors:
        if not args.dsn:
            raise StudyError("study: --dsn URL, the database the study runs on (or --vary dsn)")
        try:
            return {"": Target.parse(args.dsn)}, axes
        except ValueError as exc:
            raise StudyError(str(exc)) from exc
    if args.dsn:
        raise StudyError("--dsn and --vary dsn: the servers are --vary dsn's; drop --dsn")
    axis, found = servers.dsn_servers(varied["dsn"])
    axes[factors.index("dsn")] = axis
    return found, axes


def _fstype(places: list[Place | None], scratch: list[str], index: int) -> str:
    place = places[index]
    return place.fstype if place is not None else scratch[index]


def _directories(args: argparse.Namespace, fs_varies: bool):
    if args.format_scratch:
        if args.on:
            raise StudyError(
                "--on and --format-scratch exclude each other: the study runs on "
                "directories you mounted, or on filesystems it makes"
            )
        if not args.fs:
            raise StudyError("--format-scratch needs --fs: the filesystems to make, ext4,xfs,…")
        scratch = [name.strip() for name in args.fs.split(",") if name.strip()]
        if len(scratch) != len(set(scratch)):
            raise StudyError(f"--fs: a filesystem named twice in {args.fs!r}")
        if not fs_varies and len(scratch) != 1:
            raise StudyError("--fs names several filesystems but --vary filesystem is not given")
        from . import scratch as scratch_module

        scratch_module.check(args.format_scratch, scratch, args.scratch_size)
        root = os.path.abspath(args.format_scratch)
        return [os.path.join(root, name) for name in scratch], [None] * len(scratch), scratch
    if args.fs:
        raise StudyError(
            "--fs is for --format-scratch; with --on the directories' own filesystems are studied"
        )
    if not args.on:
        raise StudyError(
            "study: --on DIR[,DIR…] (mount points for the data) or "
            "--format-scratch IMAGE_DIR --fs ext4,xfs,…"
        )
    directories = [d for d in args.on.split(",") if d]
    places: list[Place | None] = [place_of(d) for d in directories]
    if len({p.directory for p in places if p}) != len(places):
        raise StudyError(f"--on: a directory named twice in {args.on!r}")
    if fs_varies:
        kinds = [p.fstype for p in places if p]
        if len(directories) < 2:
            raise StudyError("--vary filesystem needs two or more --on directories")
        if len(set(kinds)) != len(kinds):
            same = next(k for k in kinds if kinds.count(k) > 1)
            names = [p.directory for p in places if p and p.fstype == same]
            raise StudyError(
                f"--on: {' and '.join(names)} are both {same}: the filesystem "
                "would not vary between them"
            )
    elif len(directories) != 1:
        raise StudyError(
            "--on names several directories, but the filesystem does not vary: "
            "name one, or add --vary filesystem"
        )
    return [p.directory for p in places if p], places, []


def _mount_levels(given: list[str], directories: list[str]) -> list[str]:
    if len(given) < 2:
        raise StudyError("--vary mount-options: two or more levels, e.g. 'defaults;noatime'")
    check_remountable([level for level in given])
    if not is_root():
        raise StudyError(f"--vary mount-options remounts {', '.join(directories)}: it needs root")
    return given


def _scheduler_levels(given: list[str], places: list[Place | None], scratch: list[str]):
    if not is_root():
        raise StudyError("--vary io-scheduler writes /sys/block/*/queue/scheduler: it needs root")
    offered: set[str] | None = None
    for place in places:
        if place is None:  # a loop device made later offers what every loop device does
            continue
        if not place.disks:
            raise StudyError(
                f"--vary io-scheduler: no block device found under "
                f"{place.directory} ({place.source})"
            )
        for disk in place.disks:
            names = set(schedulers(disk)[0])
            offered = names if offered is None else offered & names
    levels = given or sorted(offered or [])
    if offered is not None:
        missing = [level for level in levels if level not in offered]
        if missing:
            raise StudyError(
                f"--vary io-scheduler: {missing[0]} is not offered here; the "
                f"devices offer {', '.join(sorted(offered))}"
            )
    if len(levels) < 2:
        raise StudyError("--vary io-scheduler: the device offers one scheduler only")
    return levels


def estimate_seconds(plan: Plan, args: argparse.Namespace) -> float:
    points = len(getattr(args, "clients", None) or [1, 2, 4, 8, 16, 20, 40, 80, 100])
    duration = getattr(args, "duration", None)
    if duration:
        per_point = duration + (getattr(args, "warmup", None) or 5.0)
    else:
        per_point = (getattr(args, "transactions", None) or 10_000) / GUESSED_RATE
    return len(plan.order) * (points * per_point + RUN_OVERHEAD_S)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def preflight_text(plan: Plan, args: argparse.Namespace, placing: str) -> str:
    lines = [
        f"study of {args.benchmark}: {len(plan.cells)} cells x {plan.repeat} = "
        f"{len(plan.order)} runs, interleaved"
    ]
    for cell in plan.cells:
        where = plan.directories[cell.directory] if plan.directories else "the data directory"
        lines.append(f"  {plan.letter(cell)}  {cell.label:<40} data in {where}")
    for key, target in plan.servers.items():
        if key:
            lines.append(f"  server {key}: {target.redacted()}")
    for (key, protocol), target in plan.via.items():
        shown = target.socket if protocol == "unix_socket" else f"{target.host}:{target.port}"
        lines.append(f"  {key + ' ' if key else ''}over {protocol}: {shown}")
    order = "".join(plan.letter(cell) for _, cell in plan.order)
    lines.append(f"order: {order}")
    lines.append(
        f"estimated time: about {_duration(estimate_seconds(plan, args))} "
        f"(transactions guessed at {GUESSED_RATE:.0f}/s)"
    )
    lines.append("it will change on this machine, and undo afterwards (also on Ctrl-C):")
    if plan.scratch:
        root = os.path.dirname(plan.directories[0])
        lines.append(
            f"  - make {len(plan.scratch)} image files of {args.scratch_size} MiB in "
            f"{root}, attach them to loop devices, format them as "
            f"{', '.join(plan.scratch)}, mount them on {root}/<filesystem>"
        )
    if plan.directories:
        lines.append(f"  - {placing}")
    for factor in plan.factors:
        levels = sorted({cell.level(factor) or "" for cell in plan.cells})
        if factor == "mount-options":
            lines.append(
                f"  - remount {', '.join(plan.directories)} with each of "
                f"{'; '.join(levels)} before its cells"
            )
        if factor == "config":
            for name, settings in plan.profiles.items():
                shown = ", ".join(f"{k}={v}" for k, v in settings.items()) or "as it is"
                lines.append(f"  - profile {name}: the server's settings {shown}")
        if factor == "io-scheduler":
            lines.append(
                f"  - write {', '.join(levels)} to the scheduler of the device under "
                f"{', '.join(plan.directories)} before its cells"
            )
        if factor == "pin":
            lines.append(
                "  - pin the load's processes (and for same_core/other_core the server's "
                "threads or backends) to CPUs, as --pin does, during each pinned run"
            )
    if "config" in plan.factors and getattr(args, "restart_command", None):
        lines.append(
            f"  - restart the server with {args.restart_command!r} whenever a profile "
            "changes a setting that needs it, and after restoring it"
        )
    return "\n".join(lines)
