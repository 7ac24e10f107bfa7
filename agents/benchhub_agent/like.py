"""``run --like RUN_URL``: the published run's parameters become this machine's command."""

from __future__ import annotations

import argparse

from . import document, upload
from .benchmarks import Discovered
from .commands import UsageError, cmd_run, finish_document
from .compare import COMPARISON_HEADER, comparison_rows, options_for_run
from .config import load_settings
from .output import format_table, say


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
    settings = load_settings()
    try:
        published = upload.get_json(url, token=settings.token)
    except upload.HttpError as exc:
        raise UsageError(f"--like: {exc}") from exc
    name = published.get("benchmark")
    found = benchmarks.get(name)
    if found is None or found.module is None:
        raise UsageError(f"--like: this agent cannot run benchmark {name!r}")
    if str(published.get("benchmark_version", "1")) != str(found.module.VERSION):
        say(
            f"warning: that run used {name} version {published.get('benchmark_version')}, "
            f"this agent runs version {found.module.VERSION}"
        )
    sub = parser._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    bench_parser = sub._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
    argv = ["run", name, *options_for_run(published, bench_parser), *rest]
    args = parser.parse_args(argv)
    explicit = load_settings(args.server, args.token)
    # The run's own server unless another one is configured: that is where its baseline is.
    server = (explicit.server or upload.server_of(url)).rstrip("/")
    args.server = server
    if not args.dry_run:
        args.upload = bool(explicit.token)
        if not explicit.token:
            say("no token configured: this run will be compared but not uploaded")
    say("running: " + document.reproducing_command(argv))
    doc, result = cmd_run(args, argv, benchmarks)
    code = finish_document(doc, args)
    rows = comparison_rows(
        server,
        published.get("fingerprint"),
        result.measurements,
        published.get("measurements") or [],
        token=explicit.token,
    )
    print()
    print(f"compared with {published.get('url') or url}")
    print(format_table(COMPARISON_HEADER, rows))
    return code
