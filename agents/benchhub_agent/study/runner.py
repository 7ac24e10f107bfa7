"""``benchhub-agent study``: one benchmark over the cells of a matrix, then one study.

Checked first, changed next (everything registered to be undone), then the
runs in interleaved order, each uploaded through the outbox as any run is;
then the study that links them, POSTed to /api/v1/studies/. Whatever happens
(a failure, Ctrl-C, SIGTERM), every change is undone before the agent exits.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import sys
from collections.abc import Sequence
from typing import Any

from benchhub_contract.schema import benchmark_catalog

from .. import db, transport
from ..benchmarks import Discovered, _connections
from ..commands import (
    EXIT_FAILED,
    EXIT_KEPT,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_USAGE,
    UsageError,
    check_server_option,
    push_outbox_first,
    upload_settings,
)
from ..interrupts import quiet_after_interrupt
from ..outbox import Outbox
from ..output import say
from ..target import Target
from . import config, leftovers, machine, placement
from . import plan as plan_module
from .cells import Outcome, recorded_argv, run_all
from .machine import Changes, StudyError
from .report import study_fields, study_request

EXIT_INTERRUPTED = 130


def cmd_study(args: argparse.Namespace, argv: Sequence[str], benchmarks: dict[str, Discovered]):
    if getattr(args, "undo_leftovers", False):
        if args.benchmark is not None:
            raise UsageError("study --undo-leftovers takes no benchmark: it undoes what is left")
        try:
            return leftovers.undo_leftovers()
        except leftovers.LeftoverError as exc:
            raise UsageError(str(exc)) from exc
    found = benchmarks.get(args.benchmark)
    if found is None or found.module is None:
        available = ", ".join(benchmarks) or "none"
        raise UsageError(f"study: name a benchmark ({available}) or give --like STUDY_URL")
    module = found.module
    if args.keep:
        raise UsageError("study: --keep does not apply: the study removes all it made")
    if args.restart_command and not any(f == "config" for f, *_ in args.vary or []):
        raise UsageError("--restart-command is for --vary config: nothing else restarts")
    restart: dict[str, set[str]] = {}
    try:
        plan = plan_module.build(args, module)
        placings = []
        for key, target in plan.servers.items():
            placings.append(_check_engine(module, target, bool(plan.directories)))
            if plan.profiles:
                restart[key] = config.check(target, plan.profiles, args.restart_command)
        fields = study_fields(args, plan, benchmark_catalog())
        placing = "; ".join(dict.fromkeys(p for p in placings if p))
    except (StudyError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    check_server_option(args)
    try:
        leftovers.refuse_if_left()
    except leftovers.LeftoverError as exc:
        raise UsageError(str(exc)) from exc
    if "dsn" not in plan.factors and plan.servers[""].engine != "firebird":
        # Connected once before anything is changed; a refusal explained as a run's is.
        db.describe(plan.servers[""])
    owners: dict[str, tuple[int, int]] = {}
    try:
        for key, target in plan.servers.items():
            if not plan.directories:
                continue  # the data stays where the server keeps it
            server = f"the {target.engine} server"
            owners[key] = owner = placement.owner_of(target)
            machine.check_server_may_write(owner[0], server)
            for directory in plan.directories:
                # --format-scratch's directories are made later: the folders above them now.
                reachable = directory
                while not os.path.isdir(reachable):
                    reachable = os.path.dirname(reachable)
                machine.check_server_can_reach(reachable, owner, server)
    except StudyError as exc:
        raise UsageError(str(exc)) from exc
    # With --dry-run, stdout is the documents' alone.
    print(
        plan_module.preflight_text(plan, args, placing), file=sys.stderr if args.dry_run else None
    )
    if not args.yes and not _confirmed():
        say("study: not confirmed, nothing changed (--yes runs without asking)")
        return EXIT_USAGE
    if args.upload:
        upload_settings(args)  # a missing token refused before the machine is changed
        push_outbox_first(args)
    changes = Changes(leftovers.Journal(" ".join(["benchhub-agent", *recorded_argv(argv)])))
    global _STUDY_PID
    _STUDY_PID = os.getpid()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    outcome = Outcome()
    try:
        run_all(plan, args, argv, benchmarks, owners, restart, changes, outcome)
    except KeyboardInterrupt:
        quiet_after_interrupt()
        outcome.interrupted = True
    except StudyError as exc:
        outcome.failure = str(exc)
    finally:
        failures = changes.undo_all()
        signal.signal(signal.SIGTERM, previous)
    return _finish(plan, args, fields, outcome, changes, failures)


_STUDY_PID = os.getpid()


def _interrupt(number: int, _frame: Any) -> None:
    """SIGTERM stops the study as Ctrl-C does; a benchmark's worker process (forked,
    and so with this handler) that is terminated just ends."""
    if os.getpid() != _STUDY_PID:
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        return
    raise KeyboardInterrupt


def _confirmed() -> bool:
    if not sys.stdin.isatty():
        say("study: no terminal to ask on")
        return False
    try:
        return input("go on? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _check_engine(module: Any, target: Target, places_data: bool) -> str:
    """What placing the data will do, or a refusal; nothing to place without directories."""
    if target.engine not in module.ENGINES:
        raise StudyError(
            f"{module.NAME} runs on {', '.join(sorted(module.ENGINES))}, not on {target.engine}"
        )
    if not places_data:
        return ""
    if target.engine == "postgresql":
        return (
            "create a tablespace and a database in <dir>/benchhub-study-<token> for each "
            "directory (the WAL stays in the server's data directory)"
        )
    if target.engine in _connections.MYSQL_FAMILY:
        if not getattr(module, "DATA_DIRECTORY", False):
            raise StudyError(
                f"{module.NAME} does not place its tables in a DATA DIRECTORY: on "
                "MySQL/MariaDB a study runs select-update"
            )
        return (
            "make the benchmark's InnoDB tables with DATA DIRECTORY in "
            "<dir>/benchhub-study-<token> (the redo log stays in the data directory)"
        )
    if target.engine == "firebird":
        return (
            "have the Firebird server make the benchmark's database file in "
            "<dir>/benchhub-study-<token> (its user's folder), dropped afterwards"
        )
    raise StudyError(f"study: {target.engine} is not supported (PostgreSQL, MariaDB, Firebird)")


def _finish(
    plan, args, fields: dict[str, Any], outcome: Outcome, changes: Changes, failures: list[str]
) -> int:
    undone = f"{changes.undone} change(s) undone"
    for failure in failures:
        say(f"study: NOT undone: {failure}")
    if failures:
        say(
            "study: what was not undone is kept in "
            f"{changes.journal.path if changes.journal else 'no journal'}; "
            "benchhub-agent study --undo-leftovers tries again"
        )
    if outcome.interrupted:
        kept = f"; {len(outcome.accepted)} run(s) uploaded stay" if outcome.accepted else ""
        say(
            f"study interrupted: {undone}{' except the above' if failures else ''}, "
            f"no study posted{kept}"
        )
        return EXIT_INTERRUPTED
    if outcome.failure is not None:
        say(f"benchhub-agent: {outcome.failure} ({undone})")
        return EXIT_FAILED
    say(f"study: all {len(outcome.documents)} runs done, {undone}")
    # Every run, also those still in the outbox: the study kept for later names them too.
    submissions = [d["uuid"] for d in outcome.documents]
    request = study_request(fields, args, plan, outcome.documents, submissions)
    if args.dry_run:
        print(json.dumps({"submissions": outcome.documents, "study": request}, indent=1))
        return EXIT_OK
    if not args.upload:
        say("not uploaded: add --upload to publish the runs and the study")
        return EXIT_OK
    return _post(request, args, outcome)


def _post(request: dict[str, Any], args: argparse.Namespace, outcome: Outcome) -> int:
    server, token = upload_settings(args)
    if outcome.kept:
        path = _keep(request)
        say(
            f"study: {outcome.kept} run(s) are still in the outbox, so the study is not "
            f"posted; it is kept in {path}: 'benchhub-agent push', then POST it to "
            f"{server}/api/v1/studies/"
        )
        return EXIT_KEPT
    try:
        status, answer = transport.request_json(
            "POST", f"{server.rstrip('/')}/api/v1/studies/", token=token, body=request
        )
    except Exception as exc:  # the runs are stored; only the study itself is missing
        status, answer = None, {"error": {"message": str(exc)}}
    if status == 201 and isinstance(answer, dict):
        print(f"study: {answer.get('url')}")
        return EXIT_OK
    path = _keep(request)
    message = answer.get("error", answer) if isinstance(answer, dict) else answer
    say(f"study: the server did not store the study ({status}: {message}); kept in {path}")
    return EXIT_REJECTED


def _keep(request: dict[str, Any]) -> str:
    folder = Outbox().path.parent / "studies"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{secrets.token_hex(4)}.json"
    path.write_text(json.dumps(request, indent=1))
    return os.fspath(path)
