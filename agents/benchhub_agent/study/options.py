"""``benchhub-agent study BENCHMARK …``: its options, beside each benchmark's own."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .plan import AXES
from .scratch import DEFAULT_SIZE_MIB


def add_study_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("study")
    group.add_argument(
        "--vary",
        nargs="+",
        action="append",
        metavar=("FACTOR", "LEVELS"),
        help=f"what varies ({', '.join(AXES)}), once or twice; levels separated by ';', "
        "e.g. --vary mount-options 'defaults;noatime', --vary dsn 'postgresql://…;mysql://…', "
        "--vary protocol (unix_socket;tcp_loopback), --vary pin (same_core;other_core;unpinned)",
    )
    group.add_argument("--on", metavar="DIR[,DIR…]", help="mount points the data is put on")
    group.add_argument(
        "--format-scratch",
        metavar="IMAGE_DIR",
        help="make loop-mounted filesystems (--fs) in image files here; removed afterwards (root)",
    )
    group.add_argument("--fs", metavar="FS[,FS…]", help="with --format-scratch: ext4,xfs,btrfs…")
    group.add_argument(
        "--scratch-size",
        type=int,
        default=DEFAULT_SIZE_MIB,
        metavar="MIB",
        help=f"size of each image file (sparse; default {DEFAULT_SIZE_MIB})",
    )
    group.add_argument(
        "--restart-command",
        metavar="CMD",
        help="with --vary config: the shell command that restarts the server, run when a "
        "profile changes a setting that needs a restart (PostgreSQL), and after restoring it",
    )
    group.add_argument("--yes", action="store_true", help="run without asking after the plan")
    group.add_argument("--title", help="the study's title")
    group.add_argument("--question", help="what the study asks, in a sentence")
    group.add_argument("--write-up", help="what you found or want readers to know")
    group.add_argument("--metric", help="the metric compared (default: the benchmark's headline)")
    group.add_argument(
        "--reference",
        help="the level that is 100 (default: the first factor's first level; none for "
        "mount options, which the site shows as a mount's every option)",
    )
    group.add_argument(
        "--point",
        action="append",
        type=_point,
        metavar="NAME=VALUE",
        help="where each run's value is read, e.g. clients=8 (default: its best point)",
    )


def _point(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name, int(value)
    except ValueError:
        return name, value


def add_study_command(
    commands: Any,
    benchmarks: dict[str, Any],
    add_common_run_options: Callable[[argparse.ArgumentParser, str, Any], None],
    load_options: Any,
) -> None:
    study = commands.add_parser(
        "study",
        help="run a benchmark over varied filesystems, mount options, schedulers, server "
        "settings, servers, protocols or CPU placements; publish the runs as one study",
    )
    study.add_argument(
        "--like", metavar="STUDY_URL", help="repeat a published study here, with the same levels"
    )
    study.add_argument(
        "--undo-leftovers",
        action="store_true",
        help="undo what a study that was killed (SIGKILL, power cut) left changed, as its "
        "journal lists it; a new study refuses to start until that is done",
    )
    per_benchmark = study.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    for name, found in benchmarks.items():
        sub = per_benchmark.add_parser(name, help=f"a study of {name}")
        add_common_run_options(sub, name, getattr(found.module, "LOAD_OPTIONS", load_options))
        for action in sub._actions:  # --vary dsn names the servers instead of --dsn
            if action.dest == "dsn":
                action.required = False
        if found.module is not None:
            found.module.add_arguments(sub)
        add_study_options(sub)
        sub.set_defaults(repeats=None)
