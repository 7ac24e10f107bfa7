"""A study's runs: the machine and the servers set up for each cell, the cell's run, its
document checked against the cell and sent through the outbox.

Everything changed is registered with :class:`~.machine.Changes` as it is made
(directories, tablespaces, databases, mounts, schedulers, settings), so that
the caller undoes it whatever happens.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import secrets
from collections.abc import Sequence
from typing import Any

from .. import document, privacy, upload
from ..benchmarks import Discovered
from ..commands import cmd_run, upload_settings
from ..outbox import Outbox
from ..output import say
from ..target import Target
from . import config, machine, placement, scratch, servers
from .machine import Changes, Place, StudyError
from .plan import Cell, Plan


class Outcome:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []
        self.accepted: list[str] = []  # uuids the server holds
        self.kept = 0  # left in the outbox
        self.interrupted = False
        self.failure: str | None = None


def recorded_argv(argv: Sequence[str]) -> list[str]:
    """The study's command line as each run records it: --vary dsn's servers redacted
    as --dsn is (no user, password, host or socket), and without --restart-command,
    which is this machine's (and may hold what no reader should see)."""
    shown: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--restart-command":
            next(words, None)
            continue
        if word.startswith("--restart-command="):
            continue
        shown.append(word)
        if shown[-2:] == ["--vary", "dsn"]:
            dsns = next(words, "").split(";")
            shown.append(";".join(document.dsn_shape(d.strip()) for d in dsns))
    return shown


def run_all(
    plan: Plan,
    args: argparse.Namespace,
    argv: Sequence[str],
    benchmarks: dict[str, Discovered],
    owners: dict[str, tuple[int, int]],
    restart: dict[str, set[str]],
    changes: Changes,
    outcome: Outcome,
) -> None:
    token = secrets.token_hex(3)
    if plan.scratch:
        scratch.make(args.format_scratch, plan.scratch, args.scratch_size, changes)
    places = [machine.place_of(d) for d in plan.directories]
    settings = {
        key: config.Settings(
            target, plan.profiles, changes, restart.get(key), getattr(args, "restart_command", None)
        )
        for key, target in plan.servers.items()
    }
    # The data of each server on each directory; none: where the server keeps it.
    targets: dict[tuple[str, int], Target] = {}
    for number, (key, target) in enumerate(plan.servers.items()):
        own = token if len(plan.servers) == 1 else f"{token}{number}"
        if not places:
            targets[(key, 0)] = target
        for index, place in enumerate(places):
            targets[(key, index)] = _place(target, place, own, index, owners[key], changes)
    remounted: set[str] = set()
    scheduled: set[str] = set()
    run_args = copy.copy(args)
    run_args.repeat, run_args.upload = 1, False  # uploaded here, one run at a time
    outbox = Outbox()
    server, api_token = upload_settings(args) if args.upload else ("", "")
    shown = recorded_argv(argv)
    for number, (visit, cell) in enumerate(plan.order, start=1):
        place = places[cell.directory] if places else None
        if place is not None:
            _apply(cell, place, changes, remounted, scheduled)
        key = plan.server(cell)
        profile = cell.level("config")
        if profile is not None:
            settings[key].apply(profile)
        target = targets[(key, cell.directory)]
        protocol = cell.level("protocol")
        if protocol is not None:
            target = servers.reconnect(target, plan.via[(key, protocol)])
        pin = cell.level("pin")
        if pin is not None:
            run_args.pin = servers.pin_option(pin)
        say(
            f"study run {number}/{len(plan.order)}: {plan.letter(cell)} ({cell.label}), "
            f"visit {visit + 1}/{plan.repeat}"
        )
        doc, _ = cmd_run(
            run_args,
            shown,
            benchmarks,
            target=target,
            storage_path=place.directory if place else None,
        )
        check_recorded(cell, doc)
        if profile is not None:
            database = doc["environment"].setdefault("database", {})
            config.recorded(profile, plan.profiles[profile], database)
        now = machine.place_of(place.directory) if place else None
        doc["runs"][0]["note"] = "\n".join(
            filter(None, [doc["runs"][0].get("note"), _cell_note(plan, cell, now, number)])
        )
        doc, _findings = privacy.redact(doc)
        document.validate(doc)
        outcome.documents.append(doc)
        if args.upload:
            answer = upload.send_and_keep(server, api_token, doc, outbox)
            say(f"study run {number}: {answer.describe()}")
            if answer.accepted:
                outcome.accepted.append(doc["uuid"])
            else:
                outcome.kept += 1


def _place(
    target: Target, place: Place, token: str, index: int, owner: tuple[int, int], changes: Changes
) -> Target:
    if target.engine == "postgresql":
        return placement.place_postgresql(target, place, token, index, owner, changes)
    if target.engine == "firebird":
        return placement.place_firebird(target, place, token, owner, changes)
    return placement.place_mysql(target, place, token, owner, changes)


def check_recorded(cell: Cell, doc: dict[str, Any]) -> None:
    """What the run recorded must be the cell's protocol and placement: a run that went
    another way would be filed under the wrong level."""
    client = doc.get("environment", {}).get("client") or {}
    for factor, field in (("protocol", "protocol"), ("pin", "cpu_placement")):
        wanted = cell.level(factor)
        if wanted is not None and client.get(field) != wanted:
            raise StudyError(
                f"study cell {cell.label}: the run recorded {field} {client.get(field)!r}, "
                f"not {wanted!r}"
            )


def _apply(cell: Cell, place: Place, changes: Changes, remounted: set, scheduled: set) -> None:
    """Set the cell's mount options and scheduler (each restored once, at the end)."""
    options = cell.level("mount-options")
    if options is not None:
        with changes.made() as register:
            if place.directory not in remounted:
                remounted.add(place.directory)
                register(
                    f"restore the mount options of {place.directory}",
                    "restore-mount",
                    place=dataclasses.asdict(place),
                )
            machine.remount(place, options)  # from the options it had before the study
    wanted = cell.level("io-scheduler")
    if wanted is not None:
        for disk in place.disks:
            with changes.made() as register:
                if disk not in scheduled:
                    scheduled.add(disk)
                    active = machine.schedulers(disk)[1] or "none"
                    register(
                        f"restore the scheduler of {disk} to {active}",
                        "restore-scheduler",
                        disk=disk,
                        name=active,
                    )
                machine.set_scheduler(disk, wanted)


def _cell_note(plan: Plan, cell: Cell, place: Place | None, number: int) -> str:
    order = "".join(plan.letter(c) for _, c in plan.order)
    note = (
        f"study cell {plan.letter(cell)} ({cell.label}), run {number} of {len(plan.order)} "
        f"in the order {order}"
    )
    if place is None:
        return note
    return (
        f"{note}; data on the {place.fstype} filesystem of device "
        f"{place.device or 'unknown'}, mounted {place.options_text}"
    )
