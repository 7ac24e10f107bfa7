"""The agent's commands once their arguments are parsed: sysinfo, run, push, import.

Exit codes: 0 done; 1 the benchmark or the document failed; 2 bad usage;
3 not sent but kept in the outbox (server down, token refused); 4 refused by
the server (kept in the outbox, marked rejected).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import db, document, privacy, sysinfo, upload
from .benchmarks import Discovered, base
from .config import ConfigError, check_server_address, load_settings
from .outbox import Outbox
from .output import results_table, say
from .placement import PinningError
from .progress import ProgressBar

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_KEPT, EXIT_REJECTED = 0, 1, 2, 3, 4


class UsageError(Exception):
    pass


def cmd_sysinfo(args: argparse.Namespace) -> int:
    """What this machine reports, as a document would carry it (redacted)."""
    if not os.path.exists(args.path):
        # else the storage described would be that of the nearest parent that exists
        raise UsageError(
            f"sysinfo: no such path {args.path!r}: --path names a directory whose storage "
            "is described (the database's data directory, say)"
        )
    found, findings = privacy.redact({"environment": sysinfo.environment(args.path)})
    sections = found["environment"]
    if args.json:
        print(json.dumps(sections, indent=2))
    else:
        print(sysinfo.format_table(sections))
    if args.show_redacted:
        show_redactions(findings, privacy.Identity.of_this_machine())
    return EXIT_OK


def show_redactions(findings: list[privacy.Finding], identity: privacy.Identity | None) -> None:
    """On stderr, for this user's eyes only: what was removed, and what is looked for."""
    for finding in findings:
        removed = f"{finding.original!r} → {finding.replacement}"
        say(f"redacted {finding.kind} at {finding.path}: {removed}")
    if identity is not None:
        looked_for = [*identity.host_names, *identity.user_names]
        say(
            f"{len(findings)} redaction(s); always removed: home paths, IP addresses, "
            f"Firebird file paths, and {', '.join(map(repr, looked_for)) or 'no name'} "
            "(this machine's host and user names)"
        )


def check_server_option(args: argparse.Namespace) -> None:
    """A --server that is no address, refused before anything runs, with or without --upload."""
    if getattr(args, "server", None):
        try:
            check_server_address(args.server, "--server")
        except ConfigError as exc:
            raise UsageError(str(exc)) from exc


def upload_settings(args: argparse.Namespace) -> tuple[str, str]:
    try:
        return load_settings(args.server, args.token).require()
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc


def deliver(document_: dict[str, Any], args: argparse.Namespace, table_shown: bool) -> int:
    """Print or send a validated document according to --dry-run / --upload."""
    if args.dry_run:
        print(json.dumps(document_, indent=1, ensure_ascii=False))
        return EXIT_OK
    if not args.upload:
        if table_shown:
            say("not uploaded: add --upload to publish this run, --dry-run to see the document")
        return EXIT_OK
    server, token = upload_settings(args)
    outbox = Outbox()
    answer = upload.send_and_keep(server, token, document_, outbox)
    same_output = "another submitter" not in answer.message
    if (
        answer.outcome == upload.REJECTED  # BenchHub's own 409, not a proxy's
        and answer.status == 409
        and document_["source"]["kind"] == "import"
        and same_output
    ):
        # The uuid comes from the tool's output alone: that output is stored already.
        outbox.remove(document_["uuid"])
        say(
            "already imported: the server holds this output from an earlier import (with "
            "other environment details, e.g. without --dsn); it is not stored twice"
        )
        return EXIT_OK
    return report_answer(document_["uuid"], answer, outbox)


def report_answer(document_uuid: str, answer: upload.Answer, outbox: Outbox) -> int:
    if answer.accepted:
        say(answer.describe())
        return EXIT_OK
    say(answer.describe())
    kept = outbox.document_path(document_uuid)
    if answer.outcome == upload.REJECTED:
        say(f"kept in the outbox, marked rejected: {kept}")
        return EXIT_REJECTED
    say(f"kept in the outbox: {kept} — 'benchhub-agent push' sends it later")
    return EXIT_KEPT


def push_outbox_first(args: argparse.Namespace) -> None:
    """Before a new upload, send what earlier runs could not, waiting
    BEFORE_RUN_WAIT_S in all at most: the run is what was asked for."""
    server, token = upload_settings(args)
    outbox = Outbox()
    if not outbox.uuids():
        return
    patience = upload.Patience(upload.BEFORE_RUN_WAIT_S, when="before a run")
    for document_uuid, answer in upload.push(server, token, outbox, patience=patience):
        say(f"outbox {document_uuid}: {answer.describe()}")
    left = outbox.uuids()
    if left:
        say(
            f"{len(left)} document(s) left in the outbox ({outbox.path}) for "
            "'benchhub-agent push' or the next run --upload; this run goes on"
        )


def cmd_push(args: argparse.Namespace) -> int:
    server, token = upload_settings(args)
    outbox = Outbox()
    results = upload.push(server, token, outbox, include_rejected=args.include_rejected)
    if not results:
        waiting = len(outbox.uuids(include_rejected=True))
        say(f"nothing to send ({waiting} rejected kept in {outbox.path})" if waiting else "empty")
        return EXIT_OK
    worst = EXIT_OK
    for document_uuid, answer in results:
        print(f"{document_uuid}: {answer.describe()}")
        if not answer.accepted:
            code = EXIT_REJECTED if answer.outcome == upload.REJECTED else EXIT_KEPT
            worst = max(worst, code)
    left = outbox.uuids(include_rejected=True)
    if left:
        say(f"{len(left)} document(s) still in {outbox.path}")
    return worst


def cmd_run(
    args: argparse.Namespace,
    argv: Sequence[str],
    benchmarks: dict[str, Discovered],
    *,
    target: base.Target | None = None,
    storage_path: str | None = None,
):
    """Run and describe; a study gives the ``target`` of its cell (its tablespace's
    database, its DATA DIRECTORY) and the ``storage_path`` of the directory its data is
    on, whose filesystem the run then records instead of the data directory's."""
    found = benchmarks.get(args.benchmark)
    if found is None:
        available = ", ".join(benchmarks) or "none"
        raise UsageError(f"run: name a benchmark ({available}) or give --like RUN_URL")
    if found.module is None:
        raise UsageError(f"benchmark {args.benchmark} cannot be loaded: {found.error}")
    module = found.module
    try:
        target = target or base.Target.parse(args.dsn)
        base.check_engine(module, target)  # before anything is sent or started
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    check_server_option(args)
    if args.upload:
        push_outbox_first(args)  # also checks server and token before a long run
    document_uuid = document.new_uuid()  # when the run starts: its identity from now on
    progress = ProgressBar()
    try:
        result = base.run(module, target, args, progress)
    except (db.DriverMissing, PinningError, ValueError) as exc:
        # Benchmarks raise ValueError for what the user asked that cannot be done.
        raise UsageError(str(exc)) from exc
    finally:
        progress.close()  # a run that failed mid-phase: no heartbeat over its error
    table = results_table(result.measurements)
    print(table, file=sys.stderr if args.dry_run else sys.stdout)
    for note in result.notes:
        say(f"note: {note}")
    machine = sysinfo.environment(storage_path or result.storage_path)
    doc = document.agent_document(
        document_uuid=document_uuid,
        result=result,
        command=document.reproducing_command(argv),
        machine=machine,
    )
    return doc, result


def finish_document(doc: dict[str, Any], args: argparse.Namespace) -> int:
    doc, findings = privacy.redact(doc)
    show_redactions(findings, None)
    try:
        document.validate(doc)
    except document.InvalidDocument as exc:
        kept = Outbox().save(doc)
        say(f"{exc}\nthe run is kept in {kept} (not sent); please report this as a bug")
        return EXIT_FAILED
    return deliver(doc, args, table_shown=True)


def cmd_import(args: argparse.Namespace, argv: Sequence[str]) -> int:
    try:
        from benchhub_contract.importers import ImportFormatError, parse_tool_output
    except ImportError as exc:
        raise UsageError(f"import is not available in this version: {exc}") from exc
    check_server_option(args)
    text = sys.stdin.read() if args.file == "-" else _read_file(args.file)
    try:
        imported = parse_tool_output(args.tool, text, parameters=dict(args.param or []))
    except ImportFormatError as exc:
        hint = ""
        if args.tool == "sysbench" and "which test ran" in str(exc):
            hint = " — here: --param test=oltp_read_write (or the test that ran)"
        say(f"{args.file}: {exc}{hint}")
        return EXIT_FAILED
    stated = imported.facts.get("database", {}).get("version_string")
    environment = import_environment(args, stated)
    try:
        doc = imported.document(
            uuid=document.import_uuid(args.tool, text),
            environment=environment,
        )
    except ImportFormatError as exc:  # the output and --dsn/--database-version disagree
        say(f"{args.file}: {exc}")
        return EXIT_FAILED
    say(f"{len(imported.runs)} run(s) read from {args.file}")
    for note in imported.notes:
        say(f"note: {note}")
    return finish_document(doc, args)


def _read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from exc


def import_environment(args: argparse.Namespace, stated_version: str | None) -> dict[str, Any]:
    """This machine, plus the database from --dsn, --database-version or the output itself."""
    if args.dsn:
        try:
            info = db.describe(base.Target.parse(args.dsn))
        except (ValueError, db.DriverMissing) as exc:
            raise UsageError(str(exc)) from exc
        environment = sysinfo.environment(info.data_directory if info.is_local else None)
        environment["database"] = info.database_section()
        # The tool had its own connection: our protocol and driver say nothing about it.
        environment["client"] = {"load_engine": args.tool}
        return environment
    version = args.database_version or stated_version
    if not version:
        raise UsageError(
            "import: the output does not name the server's version; "
            "give --dsn URL (to ask the database) or --database-version TEXT"
        )
    environment = sysinfo.environment()
    environment["database"] = {"version_string": version}
    environment["client"] = {"load_engine": args.tool}
    return environment
