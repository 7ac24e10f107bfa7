"""BenchBase's ``<timestamp>.summary.json``.

The benchmark is the file's "Benchmark Type" when the catalog has it (in
practice ``tpcc``); anything else is refused by name rather than filed
under a benchmark it is not. Latencies arrive in microseconds and are
stored in the catalog's milliseconds. Goodput has no catalog metric and is
kept in the run's note. "terminals" is the measurement point (like a
client count); scale factor and isolation are run parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from benchhub_contract.schema import JSONTooDeep, OversizedInteger, loads, metric_catalog

from ._common import (
    ImportedRuns,
    measurement,
    merge_parameters,
    not_this_tool,
    run_document,
    whole_number,
)

WHAT = "a BenchBase summary.json"
THROUGHPUT = "Throughput (requests/second)"
LATENCY = "Latency Distribution"
_LATENCY_METRICS = {
    "latency_mean": "Average Latency (microseconds)",
    "latency_p95": "95th Percentile Latency (microseconds)",
    "latency_p99": "99th Percentile Latency (microseconds)",
}
_ENGINES = {"POSTGRES": "postgresql", "MYSQL": "mysql", "MARIADB": "mariadb", "SQLITE": "sqlite"}


def parse(text: str, parameters: Mapping[str, Any] | None = None) -> ImportedRuns:
    summary = _load(text)
    benchmark = _benchmark(summary)
    point = {"terminals": _whole(summary, "terminals")} if "terminals" in summary else {}
    measurements = [measurement(benchmark, "throughput", _number(summary, THROUGHPUT), point)]
    latency = _latency_block(summary)
    for metric, key in _LATENCY_METRICS.items():
        measurements.append(measurement(benchmark, metric, _number(latency, key) / 1000, point))
    run = run_document(
        benchmark,
        merge_parameters(_run_parameters(summary), parameters),
        measurements,
        _notes(summary),
    )
    return ImportedRuns(
        runs=[run], facts=_facts(summary), source={"kind": "import", "tool": "benchbase"}
    )


def _load(text: str) -> dict[str, Any]:
    try:
        # schema.loads: an integer of over 20 digits stays text (json.loads
        # raises beyond 4,300), nesting too deep raises JSONTooDeep, not
        # RecursionError: each was a 500 on the server.
        summary = loads(text)
    except JSONTooDeep:
        raise not_this_tool(WHAT, "a JSON object; it is nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise not_this_tool(
            WHAT, f"a JSON object; it is not JSON (line {exc.lineno}: {exc.msg})"
        ) from None
    if not isinstance(summary, dict):
        raise not_this_tool(WHAT, "a JSON object with BenchBase's summary keys")
    for key in ("Benchmark Type", THROUGHPUT, LATENCY):
        if key not in summary:
            raise not_this_tool(WHAT, f"the key {key!r}")
    return summary


def _benchmark(summary: dict[str, Any]) -> str:
    name = summary["Benchmark Type"]
    catalog = metric_catalog()
    if isinstance(name, str) and name in catalog and "throughput" in catalog[name]:
        return name
    raise not_this_tool(
        WHAT,
        f"a catalog benchmark in 'Benchmark Type' (tpcc); {name!r} is not one BenchHub "
        "compares, so nothing was imported",
    )


def _latency_block(summary: dict[str, Any]) -> dict[str, Any]:
    latency = summary[LATENCY]
    if not isinstance(latency, dict):
        raise not_this_tool(WHAT, f"an object under {LATENCY!r}")
    return latency


def _number(source: dict[str, Any], key: str) -> float:
    value = source.get(key)
    if isinstance(value, OversizedInteger):
        raise not_this_tool(WHAT, f"a number under {key!r}, got one of {len(value)} digits")
    # bool is an int in Python, and true is not a latency.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise not_this_tool(WHAT, f"a non-negative number under {key!r}, got {value!r}")
    return value


def _whole(summary: dict[str, Any], key: str) -> int:
    value = summary[key]
    # BenchBase writes these configuration values as strings ("1").
    if isinstance(value, str) and value.isdigit():
        return whole_number(value, WHAT, f"a whole number under {key!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise not_this_tool(WHAT, f"a whole number under {key!r}, got {value!r}")


def _run_parameters(summary: dict[str, Any]) -> dict[str, Any]:
    parameters: dict[str, Any] = {}
    scale = summary.get("scalefactor")
    if scale is not None:
        try:
            parameters["scale"] = int(scale) if str(scale).isdigit() else float(scale)
        except (TypeError, ValueError):
            raise not_this_tool(WHAT, f"a number under 'scalefactor', got {scale!r}") from None
    isolation = summary.get("isolation") or summary.get("Isolation")
    if isinstance(isolation, str):
        parameters["isolation"] = isolation
    return parameters


def _notes(summary: dict[str, Any]) -> list[str]:
    notes = ["Imported from BenchBase's summary.json."]
    goodput = summary.get("Goodput (requests/second)")
    if isinstance(goodput, (int, float)):
        notes.append(f"Goodput {goodput} requests/s (no catalog metric).")
    return notes


def _facts(summary: dict[str, Any]) -> dict[str, Any]:
    facts: dict[str, Any] = {"client": {"load_engine": "benchbase"}}
    version = summary.get("DBMS Version")
    if isinstance(version, str) and version.strip():
        engine = _ENGINES.get(str(summary.get("DBMS Type", "")).upper(), "other")
        facts["database"] = {"version_string": version.strip()[:500], "engine": engine}
    return facts
