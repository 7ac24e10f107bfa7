"""``run --like RUN_URL``: the published run's parameters become this machine's command."""

from __future__ import annotations

import argparse
import sys

from . import document, upload
from .benchmarks import Discovered
from .commands import UsageError, cmd_run, finish_document
from .compare import COMPARISON_HEADER, VERDICT_NOTE, comparison_rows
from .config import load_settings
from .output import format_table, say
from .replay import CannotReplay, engines_differ, replay, same_engine
from .target import Target


def extract_like(argv: list[str]) -> tuple[str | None, list[str]]:
    rest: list[str] = []
    like = None
    iterator = iter(argv)
    for arg in iterator:
        if arg == "--like":
            like = next(iterator, None)
            if like is None:
                raise UsageError("--like needs a run URL")
        elif arg.startswith("--like="):
            like = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return like, rest


def run_like(
    url: str, rest: list[str], parser: argparse.ArgumentParser, benchmarks: dict[str, Discovered]
) -> int:
    """Repeat the run at ``url`` here, faithfully or not at all, and compare.

    Uploads only with --upload, like any run. With --dry-run the document is
    the only thing on stdout; the running line, the tables and the comparison
    go to stderr.
    """
    target = _target(rest)
    settings = load_settings()
    try:
        published = upload.get_json(url, token=settings.token)
    except upload.HttpError as exc:
        raise UsageError(f"--like: {exc}") from exc
    name = str(published.get("benchmark"))
    found = benchmarks.get(name)
    if found is None or found.module is None:
        raise UsageError(f"--like: this agent cannot run benchmark {name!r}")
    version = str(published.get("benchmark_version", "1"))
    if version != str(found.module.VERSION):
        raise UsageError(
            f"--like: that run used {name} version {version}, this agent runs version "
            f"{found.module.VERSION}: the workloads differ, so the figures would not compare"
        )
    given = {arg.split("=", 1)[0] for arg in rest if arg.startswith("--")}
    try:
        plan = replay(published, target.engine, given)
    except CannotReplay as exc:
        raise UsageError(f"--like: cannot reproduce that run: {exc}") from exc
    argv = ["run", name, *plan.options, *rest]
    args = parser.parse_args(argv)
    explicit = load_settings(args.server, args.token)
    # The run's own server unless another one is configured: that is where its baseline is.
    server = (explicit.server or upload.server_of(url)).rstrip("/")
    args.server = server
    for note in plan.notes:
        say(f"note: {note}")
    say("running: " + document.reproducing_command(argv))
    doc, result = cmd_run(args, argv, benchmarks)
    # The scheme could not tell MySQL from MariaDB; the server has said which it is.
    source = str((published.get("server") or {}).get("engine") or "")
    measured_on = str((doc.get("environment", {}).get("database") or {}).get("engine") or "")
    if source and measured_on and source != measured_on and same_engine(source, target.engine):
        say(f"note: {engines_differ(source, measured_on)}")
    code = finish_document(doc, args)
    rows = comparison_rows(
        server,
        published.get("fingerprint"),
        result.measurements,
        published.get("measurements") or [],
        token=explicit.token,
        benchmark=name,
    )
    out = sys.stderr if args.dry_run else sys.stdout
    print(file=out)
    print(f"compared with {published.get('html_url') or published.get('url') or url}", file=out)
    print(format_table(COMPARISON_HEADER, rows), file=out)
    print(VERDICT_NOTE, file=out)
    return code


def _target(rest: list[str]) -> Target:
    for index, arg in enumerate(rest):
        value = rest[index + 1] if arg == "--dsn" and index + 1 < len(rest) else None
        if arg.startswith("--dsn="):
            value = arg.split("=", 1)[1]
        if value:
            try:
                return Target.parse(value)
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
    raise UsageError("--like needs --dsn: the database to repeat that run on")
