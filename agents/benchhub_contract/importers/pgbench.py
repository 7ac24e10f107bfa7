"""pgbench's end-of-run report, PostgreSQL 13 to 17.

Imported: the summary (tps, latency average and stddev, failed
transactions), and with ``-r`` the per-statement latencies, each as a
``latency_mean`` measurement with a ``statement`` parameter holding the
statement text as pgbench printed it. ``-P`` progress lines are recognised
and skipped: the summary already covers the whole run.

The differences between versions that matter here:

* 13 prints no version line and two tps lines; the one "excluding
  connections establishing" is the figure 14+ prints "without initial
  connection time".
* 14+ starts with ``pgbench (client[, server S])``; the server's version is
  the client's when pgbench does not name it separately.
* 15+ adds "maximum number of tries", "number of failed transactions" and
  a failures column (and with retries a retries column) to ``-r``.

Only the built-in TPC-B script maps to the catalog benchmark ``tpcb``: a
select-only, simple-update or custom script measures something else, and
pooling it with TPC-B results would be wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._common import (
    ImportedRuns,
    ImportFormatError,
    Number,
    measurement,
    merge_parameters,
    not_this_tool,
    number,
    run_document,
    whole_number,
)

WHAT = "pgbench output"
BENCHMARK = "tpcb"
TPCB_SCRIPT = "<builtin: TPC-B (sort of)>"
# \set aid, \set bid, \set tid, \set delta, BEGIN, 5 statements, END.
TPCB_COMMANDS = 11

_TPS_LINE = "a line 'tps = … (without initial connection time)' (PostgreSQL 14+) or 'tps = … (excluding connections establishing)' (13)"  # noqa: E501

_HEADER_WITH_SERVER = re.compile(r"^pgbench \((?P<client>.+), server (?P<server>.+)\)$")
_HEADER = re.compile(r"^pgbench \((?P<client>.+)\)$")
_FIELD = re.compile(r"^(?P<key>[a-z][a-z ]+?)(?::| =) (?P<value>.+)$")
_TPS = re.compile(r"^tps = (?P<tps>\d+(?:\.\d+)?) \((?P<kind>[a-z ]+)\)$")
_MS = re.compile(r"^(?P<value>\d+(?:\.\d+)?) ms$")
_PROCESSED = re.compile(r"^(?P<done>\d+)(?:/(?P<planned>\d+))?$")
_FAILED = re.compile(r"^(?P<count>\d+) \(\d+(?:\.\d+)?%\)$")
_LATENCY_LIMIT = re.compile(
    r"^number of transactions above the (?P<limit>\d+(?:\.\d+)?) ms latency limit: "
)
_STATEMENTS_HEADER = re.compile(
    r"^(?: - )?statement latencies in milliseconds"
    r"(?P<extra> and failures|, failures and retries)?:$"
)
_PROGRESS = re.compile(r"^progress: \d+(?:\.\d+)? s, ")

# "tps = … (kind)": which kind is the throughput without connection set-up.
_TPS_KINDS = {
    "without initial connection time": "tps",
    "excluding connections establishing": "tps",
    "including connections establishing": "tps_including_connections",
    # -C: every transaction opens its own connection, so that is the figure.
    "including reconnection times": "tps",
}


@dataclass
class _Report:
    client_version: str | None = None
    server_version: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    tps: dict[str, float] = field(default_factory=dict)
    statements: list[tuple[float, str]] = field(default_factory=list)
    statement_header: str | None = None
    latency_limit_ms: Number | None = None
    progress_lines: int = 0


def parse(text: str, parameters: Mapping[str, Any] | None = None) -> ImportedRuns:
    report = _read(text)
    _check_complete(report, text)
    clients = _int_field(report, "number of clients")
    point = {"clients": clients}
    run_parameters = merge_parameters(_run_parameters(report), parameters)
    measurements = _summary_measurements(report, point)
    measurements += [
        measurement(BENCHMARK, "latency_mean", latency, {**point, "statement": statement})
        for latency, statement in report.statements
    ]
    run = run_document(BENCHMARK, run_parameters, measurements, _notes(report))
    return ImportedRuns(runs=[run], facts=_facts(report), source=_source(report))


def _read(text: str) -> _Report:
    report = _Report()
    lines = [line.rstrip() for line in text.split("\n")]
    for index, line in enumerate(lines):
        if report.statement_header is not None:
            _read_statement(report, line)
        elif _PROGRESS.match(line):
            report.progress_lines += 1
        elif match := _HEADER_WITH_SERVER.match(line) or _HEADER.match(line):
            report.client_version = match["client"]
            report.server_version = match.groupdict().get("server") or match["client"]
        elif match := _TPS.match(line):
            if match["kind"] in report.tps:
                raise _two_reports(index, line)
            report.tps[match["kind"]] = float(match["tps"])
        elif match := _STATEMENTS_HEADER.match(line):
            report.statement_header = match["extra"] or ""
        elif match := _LATENCY_LIMIT.match(line):
            report.latency_limit_ms = number(match["limit"])
        elif match := _FIELD.match(line):
            if match["key"] == "transaction type" and match["key"] in report.fields:
                raise _two_reports(index, line)
            report.fields.setdefault(match["key"], match["value"])
        elif line.startswith("tps ="):
            raise not_this_tool(WHAT, f"{_TPS_LINE}; line {index + 1} is {line!r}")
    return report


def _two_reports(index: int, line: str) -> ImportFormatError:
    # Read on, the second report's figures would mix with the first's fields.
    return ImportFormatError(
        f"two pgbench reports in one file (line {index + 1} starts another: {line[:60]!r}); "
        "import each run's report on its own"
    )


def _read_statement(report: _Report, line: str) -> None:
    if not line.strip():
        return
    extra_columns = {"": 0, " and failures": 1, ", failures and retries": 2}[
        report.statement_header or ""
    ]
    counts = r"\s+\d+" * extra_columns
    match = re.match(rf"^\s+(?P<latency>\d+\.\d+){counts}\s+(?P<statement>\S.*)$", line)
    if not match:
        raise not_this_tool(
            WHAT,
            "per-statement lines '<latency>"
            + "  <count>" * extra_columns
            + f"  <statement>' after 'statement latencies in milliseconds'; got {line!r}",
        )
    report.statements.append((float(match["latency"]), match["statement"].strip()))


def _check_complete(report: _Report, text: str) -> None:
    if "transaction type" not in report.fields:
        raise not_this_tool(WHAT, "a line 'transaction type: …' (the report pgbench prints)")
    if "Run was aborted" in text:
        raise ImportFormatError(
            "pgbench says the run was aborted, so its figures are incomplete; nothing imported"
        )
    if "tps" not in {_TPS_KINDS.get(kind) for kind in report.tps}:
        raise not_this_tool(WHAT, f"{_TPS_LINE}; the report stops before it")
    for name in ("scaling factor", "query mode", "number of clients", "number of threads"):
        if name not in report.fields:
            raise not_this_tool(WHAT, f"a line '{name}: …' in the report")
    _check_script(report.fields["transaction type"])
    if report.statement_header is not None and len(report.statements) != TPCB_COMMANDS:
        raise ImportFormatError(
            "the per-statement latencies (-r) are cut short: expected "
            f"{TPCB_COMMANDS} lines for the TPC-B script, found {len(report.statements)}"
        )


def _check_script(script: str) -> None:
    if script == TPCB_SCRIPT:
        return
    if script == "multiple scripts":
        raise ImportFormatError(
            "this pgbench run mixed several scripts; only a run of the built-in "
            "TPC-B script alone maps to the catalog benchmark 'tpcb'"
        )
    if script.startswith("<builtin:"):
        raise ImportFormatError(
            f"this pgbench run used the built-in script {script}, which is not a catalog "
            "benchmark; only <builtin: TPC-B (sort of)> maps to 'tpcb'"
        )
    raise ImportFormatError(
        f"this pgbench run used the custom script {script!r}; custom scripts are not a "
        "catalog benchmark (only the built-in TPC-B script maps to 'tpcb')"
    )


def _int_field(report: _Report, name: str) -> int:
    return whole_number(report.fields[name], WHAT, f"a whole number after '{name}:'")


def _ms_field(report: _Report, name: str) -> float | None:
    value = report.fields.get(name)
    if value is None:
        return None
    match = _MS.match(value)
    if not match:
        raise not_this_tool(WHAT, f"'{name} = <number> ms', got {value!r}")
    return float(match["value"])


def _run_parameters(report: _Report) -> dict[str, Any]:
    parameters: dict[str, Any] = {
        "scale": _int_field(report, "scaling factor"),
        "query_mode": report.fields["query mode"],
        "threads": _int_field(report, "number of threads"),
    }
    if "duration" in report.fields:
        duration = re.fullmatch(r"(\d+) s", report.fields["duration"])
        if not duration:
            raise not_this_tool(WHAT, f"'duration: <seconds> s', got {report.fields['duration']!r}")
        parameters["duration"] = whole_number(duration[1], WHAT, "seconds after 'duration:'")
    elif "number of transactions per client" in report.fields:
        parameters["transactions_per_client"] = _int_field(
            report, "number of transactions per client"
        )
    else:
        raise not_this_tool(WHAT, "a line 'duration: …' or 'number of transactions per client: …'")
    tries = report.fields.get("maximum number of tries", "1")
    if tries != "1":
        parameters["max_tries"] = (
            whole_number(tries, WHAT, "a number of tries") if tries.isdigit() else tries
        )
    if "rate limit schedule lag" in report.fields:
        parameters["rate_limited"] = True
    if report.latency_limit_ms is not None:
        parameters["latency_limit_ms"] = report.latency_limit_ms
    if "including reconnection times" in report.tps:
        parameters["connect_per_transaction"] = True
    return parameters


def _summary_measurements(report: _Report, point: dict[str, Any]) -> list[dict[str, Any]]:
    tps = next(value for kind, value in report.tps.items() if _TPS_KINDS.get(kind) == "tps")
    found = [measurement(BENCHMARK, "tps", tps, point)]
    for metric, name in (("latency_mean", "latency average"), ("latency_stddev", "latency stddev")):
        value = _ms_field(report, name)
        if value is not None:
            found.append(measurement(BENCHMARK, metric, value, point))
    failed = report.fields.get("number of failed transactions")
    if failed is not None:
        match = _FAILED.match(failed)
        if not match:
            raise not_this_tool(WHAT, f"'number of failed transactions: N (x%)', got {failed!r}")
        count = whole_number(match["count"], WHAT, "a number of failed transactions")
        found.append(measurement(BENCHMARK, "failed_transactions", count, point))
    return found


def _notes(report: _Report) -> list[str]:
    notes = ["Imported from pgbench's report."]
    processed = _PROCESSED.match(report.fields.get("number of transactions actually processed", ""))
    if processed and processed["planned"] and processed["done"] != processed["planned"]:
        notes.append(
            f"pgbench processed {processed['done']} of {processed['planned']} planned transactions."
        )
    if report.progress_lines:
        notes.append(f"{report.progress_lines} progress (-P) lines were not imported.")
    return notes


def _facts(report: _Report) -> dict[str, Any]:
    facts: dict[str, Any] = {"client": {"load_engine": "pgbench"}}
    if report.server_version:
        facts["database"] = {
            "version_string": f"PostgreSQL {report.server_version}",
            "engine": "postgresql",
        }
    return facts


def _source(report: _Report) -> dict[str, Any]:
    source: dict[str, Any] = {"kind": "import", "tool": "pgbench"}
    if report.client_version:
        source["tool_version"] = report.client_version
    return source
