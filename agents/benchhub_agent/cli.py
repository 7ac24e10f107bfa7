"""``benchhub-agent``: sysinfo, run, push, import.

Exit codes: 0 done; 1 the benchmark or the document failed; 2 bad usage;
3 not sent but kept in the outbox (server down, token refused); 4 refused by
the server (kept in the outbox, marked rejected).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from . import __version__, db, document, sysinfo, upload
from .benchmarks import base
from .compare import COMPARISON_HEADER, comparison_rows, options_for_run
from .config import ConfigError, load_settings
from .outbox import Outbox
from .placement import PLACEMENTS, PinningError
from .progress import ProgressBar
from .schema import metric_catalog

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_KEPT, EXIT_REJECTED = 0, 1, 2, 3, 4
IMPORT_TOOLS = ("pgbench", "pgbench-log", "sysbench", "benchbase", "hammerdb")


class UsageError(Exception):
    pass


# --- benchmark discovery ------------------------------------------------------


@dataclass
class Discovered:
    name: str
    module: ModuleType | None
    error: str | None = None


def discover_benchmarks() -> dict[str, Discovered]:
    """Modules of benchhub_agent.benchmarks named after a catalog entry ('-' → '_').

    A module that fails to import is listed with its error instead of
    breaking every other command.
    """
    from . import benchmarks

    catalog = metric_catalog()
    found: dict[str, Discovered] = {}
    for info in pkgutil.iter_modules(benchmarks.__path__):
        name = info.name.replace("_", "-")
        if info.name.startswith("_") or name not in catalog:
            continue
        try:
            module = importlib.import_module(f"{benchmarks.__name__}.{info.name}")
        except Exception as exc:  # any import failure: report it when this benchmark is asked for
            found[name] = Discovered(name, None, f"{type(exc).__name__}: {exc}")
            continue
        found[name] = Discovered(name, module)
    return dict(sorted(found.items()))


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


def add_common_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dsn", required=True, help="database URL, e.g. postgresql:///bench")
    parser.add_argument("--clients", type=int_list, help="concurrent clients, e.g. 1,2,4,8")
    parser.add_argument("--transactions", type=positive_int, help="transactions in total")
    parser.add_argument("--duration", type=positive_float, help="seconds to measure (time-based)")
    parser.add_argument("--warmup", type=float, help="seconds of warm-up before measuring")
    parser.add_argument("--repeat", type=positive_int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--pin", choices=PLACEMENTS, help="pin the load to the server's core or to other cores"
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

    run = commands.add_parser("run", help="run a benchmark")
    run.add_argument(
        "--like",
        metavar="RUN_URL",
        help="repeat a published run here (same benchmark and parameters) and compare",
    )
    names = commands_for_run(run, benchmarks)
    run.set_defaults(available=names)

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
        add_common_run_options(sub)
        if found.module is not None:
            found.module.add_arguments(sub)
    return list(benchmarks)


# --- output ---------------------------------------------------------------------


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def results_table(measurements: Sequence[base.Measurement]) -> str:
    """One row per point of the parameter space, one column per metric."""
    metrics: list[str] = []
    points: dict[tuple, dict[str, Any]] = {}
    for m in measurements:
        if m.metric not in metrics:
            metrics.append(m.metric)
        key = tuple(sorted(m.parameters.items()))
        points.setdefault(key, {})[m.metric] = m.value
    units = {m.metric: m.unit for m in measurements}
    header = ["point", *(f"{name} ({units[name]})" for name in metrics)]
    rows = []
    for key, values in points.items():
        label = " ".join(f"{k}={v}" for k, v in key) or "-"
        rows.append([label, *(_cell(values.get(name)) for name in metrics)])
    return format_table(header, rows)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(int(value)) if isinstance(value, float) else str(value)


def say(message: str) -> None:
    print(message, file=sys.stderr)


# --- commands -------------------------------------------------------------------


def cmd_sysinfo(args: argparse.Namespace) -> int:
    sections = sysinfo.environment(args.path)
    if args.json:
        print(json.dumps(sections, indent=2))
    else:
        print(sysinfo.format_table(sections))
    return EXIT_OK


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
    """Before a new upload, send what earlier runs could not."""
    server, token = upload_settings(args)
    outbox = Outbox()
    if not outbox.uuids():
        return
    for document_uuid, answer in upload.push(server, token, outbox):
        say(f"outbox {document_uuid}: {answer.describe()}")


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


def cmd_run(args: argparse.Namespace, argv: Sequence[str], benchmarks: dict[str, Discovered]):
    found = benchmarks.get(args.benchmark)
    if found is None:
        available = ", ".join(benchmarks) or "none"
        raise UsageError(f"run: name a benchmark ({available}) or give --like RUN_URL")
    if found.module is None:
        raise UsageError(f"benchmark {args.benchmark} cannot be loaded: {found.error}")
    module = found.module
    try:
        target = base.Target.parse(args.dsn)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if target.engine not in module.ENGINES:
        engines = ", ".join(sorted(module.ENGINES))
        raise UsageError(f"{args.benchmark} runs on {engines}, not on {target.engine}")
    if args.upload:
        push_outbox_first(args)  # also checks server and token before a long run
    document_uuid = document.new_uuid()  # when the run starts: its identity from now on
    try:
        result = module.run(target, args, ProgressBar())
    except (db.DriverMissing, PinningError, ValueError) as exc:
        # Benchmarks raise ValueError for what the user asked that cannot be done.
        raise UsageError(str(exc)) from exc
    table = results_table(result.measurements)
    print(table, file=sys.stderr if args.dry_run else sys.stdout)
    machine = sysinfo.environment(result.storage_path)
    doc = document.agent_document(
        document_uuid=document_uuid,
        result=result,
        command=document.reproducing_command(argv),
        machine=machine,
    )
    return doc, result


def finish_document(doc: dict[str, Any], args: argparse.Namespace) -> int:
    try:
        document.validate(doc)
    except document.InvalidDocument as exc:
        kept = Outbox().save(doc)
        say(f"{exc}\nthe run is kept in {kept} (not sent); please report this as a bug")
        return EXIT_FAILED
    return deliver(doc, args, table_shown=True)


def cmd_import(args: argparse.Namespace, argv: Sequence[str]) -> int:
    try:
        from .importers import ImportFormatError, parse_tool_output
    except ImportError as exc:
        raise UsageError(f"import is not available in this version: {exc}") from exc
    text = sys.stdin.read() if args.file == "-" else _read_file(args.file)
    try:
        imported = parse_tool_output(args.tool, text, parameters=dict(args.param or []))
    except ImportFormatError as exc:
        say(f"{args.file}: {exc}")
        return EXIT_FAILED
    stated = imported.facts.get("database", {}).get("version_string")
    environment, version = import_environment(args, stated)
    try:
        doc = imported.document(
            uuid=document.import_uuid(args.tool, text, version),
            environment=environment,
        )
    except ImportFormatError as exc:  # the output and --dsn/--database-version disagree
        say(f"{args.file}: {exc}")
        return EXIT_FAILED
    say(f"{len(imported.runs)} run(s) read from {args.file}")
    for note in imported.notes:
        say(f"note: {note}")
    return finish_document(doc, args)


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


def _read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from exc


def import_environment(
    args: argparse.Namespace, stated_version: str | None
) -> tuple[dict[str, Any], str]:
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
        return environment, info.version_string
    version = args.database_version or stated_version
    if not version:
        raise UsageError(
            "import: the output does not name the server's version; "
            "give --dsn URL (to ask the database) or --database-version TEXT"
        )
    environment = sysinfo.environment()
    environment["database"] = {"version_string": version}
    environment["client"] = {"load_engine": args.tool}
    return environment, version


# --- run --like -------------------------------------------------------------------


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


# --- entry point --------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    benchmarks = discover_benchmarks()
    parser = build_parser(benchmarks)
    try:
        if argv[:1] == ["run"]:
            like, rest = extract_like(argv[1:])
            if like:
                return run_like(like, rest, parser, benchmarks)
        args = parser.parse_args(argv)
        if args.command == "sysinfo":
            return cmd_sysinfo(args)
        if args.command == "push":
            return cmd_push(args)
        if args.command == "import":
            return cmd_import(args, argv)
        doc, _ = cmd_run(args, argv, benchmarks)
        return finish_document(doc, args)
    except UsageError as exc:
        say(f"benchhub-agent: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except RuntimeError as exc:  # a benchmark that failed loudly (invariant, worker death)
        say(f"benchhub-agent: {exc}")
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
