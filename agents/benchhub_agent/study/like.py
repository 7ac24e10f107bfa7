"""``study --like STUDY_URL``: a published study repeated here, with its levels.

The study's factors and levels, benchmark, metric, point and reference come
from the site; its runs' parameters from one of its runs (as ``run --like``
takes them). The levels are the values its cells show (filesystems, schedulers,
protocols, CPU placements), or, where those are not what the agent was given
(a config profile's settings, the mount options asked for rather than all a
mount had), the ``--vary`` of the command its runs recorded. What the user gives
maps the levels to this machine: ``--on`` directories whose filesystems are the
study's (matched by type), or ``--format-scratch IMAGE_DIR`` to make them; the
directory to remount; ``--restart-command`` for a profile that needs one. The
result is a new study whose ``repeats`` is the original.
"""

from __future__ import annotations

import argparse
import re
import shlex
from typing import Any

from benchhub_contract.studies import REPEATABLE

from .. import upload
from ..benchmarks import Discovered
from ..commands import UsageError
from ..config import load_settings
from ..output import say
from ..replay import CannotReplay, replay
from ..target import Target
from .machine import StudyError, place_of
from .runner import cmd_study

_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_RUN = re.compile(r"/runs/(\d+)/?$")
# The site's axis names back to --vary's; only these can be repeated here.
FACTORS = REPEATABLE
# Read from the recorded command: the cells show a profile's name but not its settings,
# and a mount's every option rather than the ones the study set.
FROM_COMMAND = ("config_profile", "mount_options")


def _value(rest: list[str], option: str) -> str | None:
    for index, arg in enumerate(rest):
        if arg == option and index + 1 < len(rest):
            return rest[index + 1]
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
    return None


def study_like(
    url: str, rest: list[str], parser: argparse.ArgumentParser, benchmarks: dict[str, Discovered]
) -> int:
    match = _UUID.search(url)
    if match is None:
        raise UsageError(f"--like: {url} names no study (…/studies/<uuid>/)")
    server = upload.server_of(url)
    token = load_settings(_value(rest, "--server"), _value(rest, "--token")).token
    try:
        study = upload.get_json(f"{server}/api/v1/studies/{match.group(0)}/", token=token)
    except upload.HttpError as exc:
        raise UsageError(f"--like: {exc}") from exc
    dsn = _value(rest, "--dsn")
    if not dsn:
        raise UsageError("--like needs --dsn: the database to repeat the study on")
    try:
        engine = Target.parse(dsn).engine
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    varied = list(study.get("varied") or [])
    unknown = [name for name in varied if name not in FACTORS]
    if unknown:
        raise UsageError(
            f"--like: this agent cannot repeat a study that varies {unknown[0]} "
            f"(it repeats {', '.join(FACTORS)})"
        )
    published = _published_run(study, token)
    levels = _levels(study, varied, str(published.get("command") or ""))
    argv = ["study", str(study.get("benchmark"))]
    argv += _parameters(published, engine, rest, varied)
    for name in varied:
        argv += ["--vary", FACTORS[name]]
        if name != "filesystem":
            argv.append(";".join(levels[name]))
    if "filesystem" in varied:
        _check_directories(levels["filesystem"], rest)
        if _value(rest, "--format-scratch") and not _value(rest, "--fs"):
            argv += ["--fs", ",".join(levels["filesystem"])]
    given = {arg.split("=", 1)[0] for arg in rest if arg.startswith("--")}
    for option, key in (("--metric", "metric"), ("--reference", "reference")):
        if option not in given and study.get(key):
            argv += [option, str(study[key])]
    for name, value in (study.get("point") or {}).items():
        argv += ["--point", f"{name}={value}"]
    if "--title" not in given:
        argv += ["--title", f"{study.get('title')} (repeated)"[:200]]
    if "--question" not in given:
        argv += ["--question", str(study.get("question"))]
    argv += rest
    args = parser.parse_args(argv)
    args.repeats = study.get("uuid")
    if not args.server:
        args.server = server  # the original's site, where the two are shown side by side
    say(
        f"repeating {study.get('title')!r}: {', '.join(varied)} over "
        + "; ".join(", ".join(levels[name]) for name in varied)
    )
    return cmd_study(args, argv, benchmarks)


def _levels(study: dict[str, Any], varied: list[str], command: str) -> dict[str, list[str]]:
    cells = study.get("cells") or []
    found = {varied[0]: sorted({str(c["x"]) for c in cells if c.get("x") not in (None, "")})}
    if len(varied) > 1:
        found[varied[1]] = sorted({str(c["series"]) for c in cells if c.get("series")})
    for name, values in found.items():
        if len(values) < 2:
            raise UsageError(f"--like: the study has fewer than two values of {name}")
    for name in varied:
        if name in FROM_COMMAND:
            found[name] = _levels_in_command(command, FACTORS[name], found[name])
    return found


def _levels_in_command(command: str, factor: str, shown: list[str]) -> list[str]:
    """The levels of ``--vary factor`` in the command the study's runs recorded."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    given = next(
        (words[i + 2] for i in range(len(words) - 2) if words[i : i + 2] == ["--vary", factor]),
        None,
    )
    if given is None:
        raise UsageError(
            f"--like: the study's runs do not record the --vary {factor} they were made "
            "with, so its levels cannot be repeated"
        )
    levels = [level.strip() for level in given.split(";") if level.strip()]
    if factor == "config" and sorted(lvl.split(":", 1)[0].strip() for lvl in levels) != shown:
        raise UsageError(
            f"--like: the study's profiles are {', '.join(shown)}, but its runs' command "
            f"names {given!r}"
        )
    return levels


def _published_run(study: dict[str, Any], token: str | None) -> dict[str, Any]:
    """One of the study's runs, as the site serves it."""
    runs = study.get("runs") or []
    pk = next((m.group(1) for r in runs if (m := _RUN.search(str(r).split("?")[0]))), None)
    if pk is None:
        raise UsageError("--like: the study lists no run to take the parameters from")
    try:
        return upload.get_json(f"{upload.server_of(runs[0])}/api/v1/runs/{pk}/", token=token)
    except upload.HttpError as exc:
        raise UsageError(f"--like: {exc}") from exc


def _parameters(published: dict[str, Any], engine: str, rest: list[str], varied: list[str]):
    """The options of one of the study's runs, as ``run --like`` would give them."""
    given = {arg.split("=", 1)[0] for arg in rest if arg.startswith("--")}
    given.add("--repeat")  # a run's repetitions are the study's visits here
    if "cpu_placement" in varied:
        given.add("--pin")  # the placement is what varies
    try:
        plan = replay(published, engine, given)
    except CannotReplay as exc:
        raise UsageError(f"--like: cannot reproduce the study's runs: {exc}") from exc
    for note in plan.notes:
        say(f"note: {note}")
    return plan.options


def _check_directories(filesystems: list[str], rest: list[str]) -> None:
    """--on must hold one directory of each of the study's filesystems, and no other."""
    on = _value(rest, "--on")
    if not on:
        return  # --format-scratch, or the study's own refusal
    try:
        kinds = {place_of(d).fstype: d for d in on.split(",") if d}
    except StudyError as exc:
        raise UsageError(str(exc)) from exc
    missing = [fs for fs in filesystems if fs not in kinds]
    extra = [d for fs, d in kinds.items() if fs not in filesystems]
    if missing or extra:
        raise UsageError(
            f"--like: the study compared {', '.join(filesystems)}; --on "
            + (f"has no {', '.join(missing)} directory" if missing else "")
            + ("; " if missing and extra else "")
            + (f"{', '.join(extra)} is none of them" if extra else "")
        )
