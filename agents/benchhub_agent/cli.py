"""``benchhub-agent``: the command line (sysinfo, run, study, push, import) and its entry point.

The commands themselves are in :mod:`.commands` (exit codes there), ``run
--like`` in :mod:`.like`, what is printed in :mod:`.output`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Collection, Sequence
from typing import Any

from . import __version__, errors
from .benchmarks import Discovered, discover_benchmarks
from .commands import (
    EXIT_FAILED,
    EXIT_USAGE,
    UsageError,
    cmd_import,
    cmd_push,
    cmd_run,
    cmd_sysinfo,
    finish_document,
)
from .interrupts import catch_ctrl_c, cut_by_ctrl_c, quiet_after_interrupt
from .like import extract_like, run_like
from .output import say
from .placement import PLACEMENTS
from .study.options import add_study_command
from .target import Target

IMPORT_TOOLS = ("pgbench", "pgbench-log", "sysbench", "benchbase", "hammerdb")


# --- argument parsing -----------------------------------------------------------


def int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected numbers separated by commas, got {text!r}"
        ) from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("expected positive numbers, e.g. 1,2,4,8")
    return values


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", help="BenchHub server URL (else BENCHHUB_SERVER or config)")
    parser.add_argument("--token", help="API token (else BENCHHUB_TOKEN or config)")


def add_send_options(parser: argparse.ArgumentParser) -> None:
    send = parser.add_mutually_exclusive_group()
    send.add_argument("--dry-run", action="store_true", help="print the document, send nothing")
    send.add_argument("--upload", action="store_true", help="send the document to the server")
    add_server_options(parser)


# The load options of `run`: each benchmark names those it applies (its
# LOAD_OPTIONS). The others are refused by name: sql-bench given --clients 8
# ran one client, said nothing, and recorded "--clients 8" in the command
# that is to reproduce the run.
LOAD_OPTIONS: dict[str, dict[str, Any]] = {
    "clients": {"type": int_list, "help": "concurrent clients, e.g. 1,2,4,8"},
    "transactions": {"type": positive_int, "help": "transactions in total"},
    "duration": {"type": positive_float, "help": "seconds to measure (time-based)"},
    "warmup": {"type": float, "help": "seconds of warm-up before measuring"},
    "pin": {
        "choices": PLACEMENTS,
        "help": "pin the load to the server's core or to other cores",
    },
}


class NotApplicable(argparse.Action):
    """A load option the benchmark does not apply: a usage error naming it."""

    def __init__(self, *args: Any, benchmark: str, takes: Collection[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.benchmark, self.takes = benchmark, takes

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        taken = ", ".join(f"--{name}" for name in LOAD_OPTIONS if name in self.takes)
        its = f"its load options: {taken}" if taken else "it takes no load options"
        parser.error(f"{option_string} does not apply to {self.benchmark} ({its})")


def add_common_run_options(
    parser: argparse.ArgumentParser, benchmark: str, takes: Collection[str]
) -> None:
    parser.add_argument("--dsn", required=True, help="database URL, e.g. postgresql:///bench")
    for name, spec in LOAD_OPTIONS.items():
        if name in takes:
            parser.add_argument(f"--{name}", **spec)
        else:
            parser.add_argument(
                f"--{name}",
                action=NotApplicable,
                benchmark=benchmark,
                takes=takes,
                help=argparse.SUPPRESS,
            )
    parser.add_argument("--repeat", type=positive_int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the benchmark's own schema, database or file afterwards (default: removed)",
    )
    add_send_options(parser)


def build_parser(benchmarks: dict[str, Discovered]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchhub-agent",
        description="Run database benchmarks here and publish them on BenchHub.",
    )
    parser.add_argument("--version", action="version", version=f"benchhub-agent {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser("sysinfo", help="print the environment this machine reports")
    info.add_argument("--json", action="store_true", help="as JSON (the document's sections)")
    info.add_argument("--path", default=".", help="describe the storage under this path")
    info.add_argument(
        "--show-redacted",
        action="store_true",
        help="also list (on stderr) what is removed before anything is sent",
    )

    run = commands.add_parser("run", help="run a benchmark")
    run.add_argument(
        "--like",
        metavar="RUN_URL",
        help="repeat a published run here (same benchmark and parameters) and compare",
    )
    names = commands_for_run(run, benchmarks)
    run.set_defaults(available=names)

    add_study_command(commands, benchmarks, add_common_run_options, LOAD_OPTIONS)

    push = commands.add_parser("push", help="send the documents kept in the outbox")
    push.add_argument("--include-rejected", action="store_true", help="resend refused ones too")
    add_server_options(push)

    imp = commands.add_parser("import", help="turn another tool's output into a submission")
    imp.add_argument("tool", choices=IMPORT_TOOLS)
    imp.add_argument("file", help="the tool's output ('-' for stdin)")
    where = imp.add_mutually_exclusive_group()
    where.add_argument("--dsn", help="ask this database for its version and settings")
    where.add_argument("--database-version", help="the server's version() text, as it printed it")
    imp.add_argument(
        "--param",
        type=parameter,
        action="append",
        metavar="NAME=VALUE",
        help="a run parameter the output does not state (e.g. test=oltp_read_write)",
    )
    add_send_options(imp)
    return parser


def commands_for_run(run: argparse.ArgumentParser, benchmarks: dict[str, Discovered]) -> list[str]:
    per_benchmark = run.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    for name, found in benchmarks.items():
        doc = (found.module.__doc__ or "").strip().splitlines() if found.module else []
        sub = per_benchmark.add_parser(name, help=doc[0] if doc else found.error)
        takes = getattr(found.module, "LOAD_OPTIONS", LOAD_OPTIONS)
        add_common_run_options(sub, name, takes)
        if found.module is not None:
            found.module.add_arguments(sub)
    return list(benchmarks)


def parameter(text: str) -> tuple[str, str | int | float]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    for kind in (int, float):
        try:
            return name, kind(value)
        except ValueError:
            continue
    return name, value


# --- entry point --------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("BENCHHUB_DEBUG") == "1"
    argv = [arg for arg in argv if arg != "--debug"]
    catch_ctrl_c()
    try:
        return dispatch(argv)
    except KeyboardInterrupt:
        return interrupted()
    except Exception as exc:  # every failure: one line, the traceback only with --debug
        if cut_by_ctrl_c(exc):
            return interrupted()
        if debug:
            traceback.print_exc()
        return report_failure(exc, argv)


def interrupted() -> int:
    """Ctrl-C's one line and exit status."""
    quiet_after_interrupt()
    say("interrupted")
    return 130


def dispatch(argv: list[str]) -> int:
    benchmarks = discover_benchmarks()
    parser = build_parser(benchmarks)
    if argv[:1] == ["run"]:
        like, rest = extract_like(argv[1:])
        if like:
            return run_like(like, rest, parser, benchmarks)
    if argv[:1] == ["study"]:
        from .study.like import study_like
        from .study.runner import cmd_study

        like, rest = extract_like(argv[1:])
        if like:
            return study_like(like, rest, parser, benchmarks)
        args = parser.parse_args(argv)
        return cmd_study(args, argv, benchmarks)
    args = parser.parse_args(argv)
    if args.command == "sysinfo":
        return cmd_sysinfo(args)
    if args.command == "push":
        return cmd_push(args)
    if args.command == "import":
        return cmd_import(args, argv)
    doc, _ = cmd_run(args, argv, benchmarks)
    return finish_document(doc, args)


def report_failure(exc: Exception, argv: list[str]) -> int:
    """One line on stderr and the exit status for a failure that reached the top."""
    if isinstance(exc, UsageError):
        say(f"benchhub-agent: {exc}")
        return EXIT_USAGE
    explained = errors.explain(exc, _target_of(argv))
    if explained:
        say(f"benchhub-agent: {explained}")
        return EXIT_USAGE
    if isinstance(exc, RuntimeError):  # a benchmark that failed loudly (invariant, worker death)
        say(f"benchhub-agent: {_one_line(str(exc))}")
        return EXIT_FAILED
    say(
        f"benchhub-agent: unexpected {type(exc).__name__}: {_one_line(str(exc))} "
        "(--debug shows where; please report it)"
    )
    return EXIT_FAILED


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def _target_of(argv: list[str]) -> Target | None:
    """The --dsn of the command line, to name its host, port, user and database."""
    for index, arg in enumerate(argv):
        value = None
        if arg == "--dsn" and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith("--dsn="):
            value = arg.split("=", 1)[1]
        if value:
            try:
                return Target.parse(value)
            except ValueError:
                return None
    return None


if __name__ == "__main__":
    sys.exit(main())
