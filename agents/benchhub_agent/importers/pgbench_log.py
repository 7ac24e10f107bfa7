"""pgbench's aggregate log (``-l --aggregate-interval=N``), tool name ``pgbench-log``.

One line per interval: ``interval_start num_transactions sum_latency
sum_latency_2 min_latency max_latency`` (microseconds), then

* PostgreSQL 13-14: nothing more, or ``sum_lag sum_lag_2 min_lag max_lag``
  with ``--rate``, and ``skipped`` with ``--latency-limit`` (6, 10 or 11
  fields);
* PostgreSQL 15+: always 15 fields — the lag columns, skipped, retried,
  retries and two failure columns, zero when the option is off.

Decision: the log becomes ONE summarized run, not a measurement per
interval. Per-interval points would enter the comparability key as if the
interval were a parameter of the benchmark, and a long run would exceed
the document's limits. What is summarized is exact arithmetic on pgbench's
own sums, never an estimate:

* latency_mean   = Σ sum_latency / Σ num_transactions;
* latency_stddev = √(Σ sum_latency_2 / n - mean²), pgbench's own formula;
* tps            = transactions of every interval but the last, divided by
  their total length. The last interval is left out because the end of the
  run may cut it short; tps needs at least two intervals.

pgbench writes one log per thread (``-j``): concatenate them all
(``cat pgbench_log.*``); lines with the same interval start are added up.
A single thread's file gives that thread's share only, which the file
cannot reveal — the run's note says so. The log does not name the number
of clients, the scale or the script: the caller supplies them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._common import (
    ImportedRuns,
    ImportFormatError,
    measurement,
    merge_parameters,
    not_this_tool,
    run_document,
)

WHAT = "a pgbench aggregate log (-l --aggregate-interval)"
BENCHMARK = "tpcb"
_FIELD_COUNTS = {6: "13-14", 10: "13-14 with --rate", 11: "13-14 with --rate and -L", 15: "15+"}
_LAYOUT = (
    "lines of 6, 10 or 11 whole numbers (PostgreSQL 13-14) or 15 (15+): "
    "interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency …"
)


@dataclass
class _Interval:
    start: int
    transactions: int = 0
    sum_latency: int = 0
    sum_latency_2: int = 0
    sum_lag: int = 0


def parse(text: str, parameters: Mapping[str, Any] | None = None) -> ImportedRuns:
    rows = _rows(text)
    field_count = len(rows[0])
    intervals = _merged(rows)
    length = _interval_length(intervals)
    total = sum(i.transactions for i in intervals)
    if total == 0:
        raise not_this_tool(WHAT, "at least one transaction in the log; every interval is empty")
    supplied = dict(parameters or {})
    # Clients is the measurement point in pgbench's report import; put it in
    # the same place here so that both imports of one run compare.
    point = _clients_point(supplied.pop("clients", None))
    run_parameters: dict[str, Any] = {"aggregate_interval": length} if length else {}
    if field_count in (10, 11) or any(i.sum_lag for i in intervals):
        run_parameters["rate_limited"] = True
    run = run_document(
        BENCHMARK,
        merge_parameters(run_parameters, supplied),
        _measurements(intervals, length, total, point),
        _notes(intervals, length, field_count),
    )
    return ImportedRuns(
        runs=[run],
        facts={"client": {"load_engine": "pgbench"}},
        source={"kind": "import", "tool": "pgbench"},
    )


def _rows(text: str) -> list[list[int]]:
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if not all(field.isascii() and field.isdigit() and len(field) <= 20 for field in fields):
            raise not_this_tool(WHAT, f"{_LAYOUT}; line {number} is {line[:80]!r}")
        if len(fields) not in _FIELD_COUNTS:
            raise not_this_tool(WHAT, f"{_LAYOUT}; line {number} has {len(fields)} fields")
        if rows and len(fields) != len(rows[0]):
            # A short last line is the usual sign of a log copied while pgbench still wrote it.
            raise not_this_tool(
                WHAT,
                f"every line with {len(rows[0])} fields like the first; line {number} has "
                f"{len(fields)} (truncated or mixed logs)",
            )
        rows.append([int(field) for field in fields])
    return rows


def _merged(rows: list[list[int]]) -> list[_Interval]:
    by_start: dict[int, _Interval] = {}
    for row in rows:
        interval = by_start.setdefault(row[0], _Interval(start=row[0]))
        interval.transactions += row[1]
        interval.sum_latency += row[2]
        interval.sum_latency_2 += row[3]
        interval.sum_lag += row[6] if len(row) > 6 else 0
    return sorted(by_start.values(), key=lambda i: i.start)


def _interval_length(intervals: list[_Interval]) -> int | None:
    """The aggregation interval in seconds, read from the starts' spacing."""
    if len(intervals) < 2:
        return None
    gaps = {b.start - a.start for a, b in itertools.pairwise(intervals)}
    if len(gaps) != 1:
        # pgbench writes a line for every interval, empty ones included, so
        # uneven spacing means lines are missing or two runs were mixed.
        raise not_this_tool(
            WHAT,
            "evenly spaced interval starts (one run's logs); found gaps of "
            + ", ".join(f"{gap} s" for gap in sorted(gaps)),
        )
    return gaps.pop()


def _clients_point(clients: Any) -> dict[str, int]:
    if clients is None:
        return {}
    if isinstance(clients, bool) or not isinstance(clients, int) or clients < 1:
        raise ImportFormatError(f"parameter 'clients': expected a whole number, got {clients!r}")
    return {"clients": clients}


def _measurements(
    intervals: list[_Interval], length: int | None, total: int, point: dict[str, int]
) -> list[dict[str, Any]]:
    mean_us = sum(i.sum_latency for i in intervals) / total
    variance_us = sum(i.sum_latency_2 for i in intervals) / total - mean_us**2
    found = [
        measurement(BENCHMARK, "latency_mean", mean_us / 1000, point),
        measurement(BENCHMARK, "latency_stddev", math.sqrt(max(variance_us, 0.0)) / 1000, point),
    ]
    if length:
        full = intervals[:-1]
        tps = sum(i.transactions for i in full) / (len(full) * length)
        found.insert(0, measurement(BENCHMARK, "tps", tps, point))
    return found


def _notes(intervals: list[_Interval], length: int | None, field_count: int) -> list[str]:
    notes = [
        f"Summarized from a pgbench aggregate log ({_FIELD_COUNTS[field_count]} layout), "
        f"{len(intervals)} intervals" + (f" of {length} s" if length else "") + ".",
        "tps counts the transactions in the log given; with -j > 1 pgbench writes one log "
        "per thread, and all of them must be concatenated for the run's tps.",
    ]
    if length:
        notes.append("The last interval is left out of tps: the end of the run may cut it short.")
    else:
        notes.append("A single interval gives no interval length, so no tps was derived.")
    return notes
