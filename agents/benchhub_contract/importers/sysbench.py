"""sysbench 1.0 and 1.1 text output of the database (oltp_*) tests.

1.0 ends with "General statistics: total time, total number of events";
1.1 replaced that block with "Throughput: events/s (eps), time elapsed,
total number of events". Both keep "SQL statistics" and "Latency (ms)".

sysbench does not print which test ran. The test comes from a command
line kept in the file (``sysbench oltp_read_write … run``, as people paste
it) or from the caller's ``parameters={"test": …}``; without either the
import is refused, because a tps figure without its test compares with
nothing. ``Number of threads`` becomes the measurement parameter
``threads`` when the header is there.

What sysbench prints does not include the dataset (``--tables``,
``--table-size``) or the run's limits (``--time``, ``--events``,
``--rate``), yet each changes the workload. From a pasted command line
every workload option below is kept as a run parameter (so that runs on
10,000-row and 1,000,000-row tables get different comparability keys),
with sysbench's own default for the dataset and time when the command
leaves them out. Options that say how to connect (``--mysql-password=…``,
hosts, users) or how to report are never kept. Without a command line
the caller may give the same parameters; the run's note says when the
dataset size is unknown.

Only the 95th percentile has a catalog metric (latency_p95); a run made
with ``--percentile=99`` keeps its 99th out rather than pass it off as
something else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._common import (
    ImportedRuns,
    ImportFormatError,
    measurement,
    merge_parameters,
    not_this_tool,
    run_document,
    whole_number,
)

WHAT = "sysbench output"
BENCHMARK = "sysbench"

_VERSION = re.compile(r"^sysbench (?P<version>\d+\.\d+\.\d+\S*)(?: \(|:|$)")
_THREADS = re.compile(r"^Number of threads: (?P<threads>\d+)$")
_RATE = re.compile(r"^(?P<count>\d+)\s+\((?P<rate>\d+(?:\.\d+)?) per sec\.\)$")
_SECONDS = re.compile(r"^(?P<seconds>\d+(?:\.\d+)?)s$")
_PERCENTILE = re.compile(r"^(?P<p>\d+)(?:st|nd|rd|th) percentile$")
_TEST_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")

# sysbench option → whether it takes a whole number (else a word). These
# change what the run does; sysbench's defaults are filled for the first three.
_WORKLOAD_OPTIONS: dict[str, bool] = {
    "tables": True,
    "table_size": True,
    "time": True,
    "events": True,
    "rate": True,
    "range_size": True,
    "point_selects": True,
    "simple_ranges": True,
    "sum_ranges": True,
    "order_ranges": True,
    "distinct_ranges": True,
    "index_updates": True,
    "non_index_updates": True,
    "delete_inserts": True,
    "range_selects": False,
    "skip_trx": False,
    "secondary": False,
    "auto_inc": False,
    "db_ps_mode": False,
    "mysql_storage_engine": False,
    "rand_type": False,
    "warmup_time": True,
}
_DEFAULTS = {"tables": 1, "table_size": 10000, "time": 10}
_WORD = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")

_SECTIONS = ("SQL statistics", "General statistics", "Throughput", "Latency (ms)")


def parse(text: str, parameters: Mapping[str, Any] | None = None) -> ImportedRuns:
    lines = [line.rstrip() for line in text.split("\n")]
    _refuse_failures(lines)
    sections = _sections(lines)
    _check_complete(sections)
    sql, latency = sections["SQL statistics"], sections["Latency (ms)"]
    threads = _threads(lines)
    point = {"threads": threads} if threads is not None else {}
    supplied = dict(parameters or {})
    command = _command_arguments(lines)
    test_from_caller = "test" in supplied and command is None
    test = _test(lines, supplied)
    stated = {"test": test}
    if command is not None:
        options = _options(command)
        _check_threads(options.pop("threads", None), threads)
        stated |= _DEFAULTS | options
    run_parameters = merge_parameters(stated, supplied)
    measurements = [
        measurement(BENCHMARK, "tps", _rate(sql, "transactions"), point),
        measurement(BENCHMARK, "qps", _rate(sql, "queries"), point),
        measurement(BENCHMARK, "latency_min", _float(latency, "min"), point),
        measurement(BENCHMARK, "latency_mean", _float(latency, "avg"), point),
        measurement(BENCHMARK, "latency_max", _float(latency, "max"), point),
    ]
    percentiles = _percentiles(latency)
    if 95 in percentiles:
        measurements.append(measurement(BENCHMARK, "latency_p95", percentiles[95], point))
    measurements += [
        measurement(BENCHMARK, "errors", _count(sql, "ignored errors"), point),
        measurement(BENCHMARK, "reconnects", _count(sql, "reconnects"), point),
    ]
    notes = _notes(percentiles, threads, test_from_caller)
    if "table_size" not in run_parameters:
        notes.append(
            "The dataset size is unknown: sysbench does not print --tables or --table-size "
            "and no command line was kept with the output."
        )
    version = _version(lines)
    return ImportedRuns(
        runs=[run_document(BENCHMARK, run_parameters, measurements, notes)],
        facts={"client": {"load_engine": "sysbench"}},
        source={"kind": "import", "tool": "sysbench"}
        | ({"tool_version": version} if version else {}),
    )


def _refuse_failures(lines: list[str]) -> None:
    fatal = next((line for line in lines if line.startswith("FATAL:")), None)
    if fatal:
        raise ImportFormatError(f"sysbench reported a fatal error, nothing imported: {fatal!r}")


def _sections(lines: list[str]) -> dict[str, dict[str, str]]:
    """Section title → {label: value}, from the indented 'label: value' lines."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for number, line in enumerate(lines, start=1):
        title = line.rstrip(":")
        if title in _SECTIONS and line.endswith(":") and not line.startswith(" "):
            if title in sections:
                # Read on, one run's figures would mix with the other's.
                raise ImportFormatError(
                    f"two sysbench reports in one file (a second '{title}:' at line "
                    f"{number}); import each run's output on its own"
                )
            current = sections.setdefault(title, {})
        elif current is not None and line.startswith(" ") and ":" in line:
            label, _, value = line.strip().partition(":")
            current[label] = value.strip()
        elif line and not line.startswith(" "):
            current = None
    return sections


def _check_complete(sections: dict[str, dict[str, str]]) -> None:
    sql = sections.get("SQL statistics")
    if not sql:
        raise not_this_tool(WHAT, "a 'SQL statistics:' block (the summary of an oltp_* test's run)")
    for label in ("transactions", "queries", "ignored errors", "reconnects"):
        if label not in sql:
            raise not_this_tool(WHAT, f"a line '{label}: …' under 'SQL statistics:'")
    if "General statistics" not in sections and "Throughput" not in sections:
        raise not_this_tool(
            WHAT,
            "a 'General statistics:' (1.0) or 'Throughput:' (1.1) block after 'SQL statistics:'",
        )
    latency = sections.get("Latency (ms)", {})
    # "sum" is the block's last line: without it the file was cut inside the block.
    for label in ("min", "avg", "max", "sum"):
        if label not in latency:
            raise not_this_tool(WHAT, f"a line '{label}: …' under 'Latency (ms):' (cut short?)")


def _rate(section: dict[str, str], label: str) -> float:
    match = _RATE.match(section[label])
    if not match:
        raise not_this_tool(WHAT, f"'{label}: N (X per sec.)', got {section[label]!r}")
    return float(match["rate"])


def _count(section: dict[str, str], label: str) -> int:
    match = _RATE.match(section[label])
    if not match:
        raise not_this_tool(WHAT, f"'{label}: N (X per sec.)', got {section[label]!r}")
    return whole_number(match["count"], WHAT, f"a whole number of {label}")


def _float(section: dict[str, str], label: str) -> float:
    try:
        return float(section[label])
    except ValueError:
        raise not_this_tool(
            WHAT, f"a number after '{label}:' under 'Latency (ms):', got {section[label]!r}"
        ) from None


def _percentiles(latency: dict[str, str]) -> dict[int, float]:
    found = {}
    for label in latency:
        match = _PERCENTILE.match(label)
        if match:
            found[whole_number(match["p"], WHAT, "a percentile")] = _float(latency, label)
    return found


def _threads(lines: list[str]) -> int | None:
    for line in lines:
        if match := _THREADS.match(line):
            return whole_number(match["threads"], WHAT, "a number of threads")
    return None


def _version(lines: list[str]) -> str | None:
    for line in lines:
        if match := _VERSION.match(line):
            return match["version"]
    return None


def _test(lines: list[str], supplied: dict[str, Any]) -> str:
    named = _test_from_command(lines)
    given = supplied.pop("test", None)
    if named and given and named != given:
        raise ImportFormatError(
            f"parameter 'test': the command in the file runs {named!r}, you gave {given!r}"
        )
    test = named or given
    if test is None:
        raise ImportFormatError(
            "sysbench does not print which test ran; give it (test=oltp_read_write, "
            "oltp_read_only, oltp_point_select, …) or keep the command line in the file"
        )
    if not isinstance(test, str) or not _TEST_NAME.match(test):
        raise ImportFormatError(
            f"parameter 'test': expected a name like oltp_read_write, got {test!r}"
        )
    return test


def _test_from_command(lines: list[str]) -> str | None:
    """The test named on a pasted 'sysbench … TEST … run' line, if there is one."""
    arguments = _command_arguments(lines)
    return None if arguments is None else _test_argument(arguments)


def _command_arguments(lines: list[str]) -> list[str] | None:
    """The arguments between 'sysbench' and 'run' on a pasted command line.

    Two lines that run different workloads (the command given beside the
    file and the one in it, or two runs pasted together) are refused: the
    figures are of one run, and which is unknown."""
    found: list[list[str]] = []
    for line in lines:
        tokens = line.split()
        if not tokens or tokens[-1] != "run":
            continue
        for index, token in enumerate(tokens[:-1]):
            if token.rsplit("/", 1)[-1] == "sysbench":
                found.append(tokens[index + 1 : -1])
                break
    if not found:
        return None
    # Only the test and the allow-listed options are shown: a line may hold a password.
    workloads = [
        " ".join([str(_test_argument(a))] + [f"{k}={v}" for k, v in sorted(_options(a).items())])
        for a in found
    ]
    if len(set(workloads)) > 1:
        raise ImportFormatError(
            "two sysbench command lines with different tests or workload options "
            f"({' | '.join(dict.fromkeys(workloads))[:300]}): the output is of one run; "
            "keep only its command"
        )
    return found[0]


def _options(arguments: list[str]) -> dict[str, Any]:
    """The workload options of the command line, and --threads; nothing else."""
    found: dict[str, Any] = {}
    for argument in arguments:
        if not argument.startswith("--") or "=" not in argument:
            continue
        name, _, value = argument[2:].partition("=")
        name = name.replace("-", "_")
        if name == "threads":
            found[name] = whole_number(value, WHAT, "--threads=N on the command line")
        elif name in _WORKLOAD_OPTIONS:
            found[name] = _option_value(name, value)
    return found


def _option_value(name: str, value: str) -> int | str | bool:
    if _WORKLOAD_OPTIONS[name]:
        return whole_number(value, WHAT, f"--{name.replace('_', '-')}=N on the command line")
    if value.lower() in ("on", "true"):
        return True
    if value.lower() in ("off", "false"):
        return False
    if not _WORD.match(value):
        raise not_this_tool(WHAT, f"a plain word after --{name.replace('_', '-')}=, got {value!r}")
    return value


def _check_threads(commanded: int | None, printed: int | None) -> None:
    if commanded is not None and printed is not None and commanded != printed:
        raise ImportFormatError(
            f"the command line says --threads={commanded} but sysbench printed "
            f"'Number of threads: {printed}': the output is not this command's"
        )


def _test_argument(arguments: list[str]) -> str | None:
    for argument in arguments:
        if argument.startswith("--test="):  # the 0.5-era spelling
            argument = argument.removeprefix("--test=")
        elif argument.startswith("-"):
            continue
        return argument.rsplit("/", 1)[-1].removesuffix(".lua")
    return None


def _notes(percentiles: dict[int, float], threads: int | None, test_from_caller: bool) -> list[str]:
    notes = ["Imported from sysbench's report."]
    others = sorted(p for p in percentiles if p != 95)
    if others:
        notes.append(
            "Not imported (no catalog metric): "
            + ", ".join(f"{p}th percentile {percentiles[p]} ms" for p in others)
            + "."
        )
    if threads is None:
        notes.append("The output does not give the number of threads.")
    if test_from_caller:
        notes.append("The test name was given at import; sysbench does not print it.")
    return notes
