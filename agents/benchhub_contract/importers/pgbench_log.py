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
* tps            = transactions of every interval but the first and the
  last, divided by their total length. Both ends are partial: the first
  interval starts at the whole second before the clients connect, the
  last is cut by the end of the run, so counting either lowers tps (in
  a two-thread fixture the first second holds 1,967 transactions, the
  whole ones 2,704 to 3,185). tps needs at least three intervals.

The log is recognised by what its columns must satisfy, not by their
count alone: pgbench's per-transaction log (``-l`` without
``--aggregate-interval``) also has 6 whole numbers a line (``client_id
transaction_no time script_no time_epoch time_us``), and read as an
aggregate it gives a tps a hundred times too high. Every line must start
with an epoch second and hold ``min ≤ max``, ``n·min ≤ sum ≤ n·max`` and
``n·sum_latency_2 ≥ sum_latency²``; a per-transaction log is named as such
and refused.

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
# Any interval_start pgbench can write is a Unix time after 2000-01-01.
_EPOCH_2000 = 946_684_800
# The per-transaction log's latency column holds these words instead of a
# number for skipped (-L) and failed (--failures-detailed) transactions.
_TRANSACTION_OUTCOMES = {"skipped", "failed", "serialization", "deadlock"}
PER_TRANSACTION_REFUSAL = (
    "this is pgbench's per-transaction log (-l without --aggregate-interval; columns "
    "client_id transaction_no time script_no time_epoch time_us), not an aggregate log: "
    "rerun pgbench with -l --aggregate-interval=N and import that log, or import "
    "pgbench's own report with the tool pgbench"
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
        if not rows and _is_per_transaction(fields):
            raise ImportFormatError(PER_TRANSACTION_REFUSAL)
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
        row = [int(field) for field in fields]
        if problem := _aggregate_problem(row):
            raise not_this_tool(WHAT, f"{_LAYOUT}; line {number} {problem}")
        rows.append(row)
    return rows


def _is_per_transaction(fields: list[str]) -> bool:
    """client_id transaction_no time script_no time_epoch time_us [lag] [retries]."""
    if not 6 <= len(fields) <= 8:
        return False
    numeric = [i for i in range(len(fields)) if i != 2]
    if not all(fields[i].isascii() and fields[i].isdigit() for i in numeric):
        return False
    if not (fields[2].isascii() and fields[2].isdigit()) and fields[2] not in _TRANSACTION_OUTCOMES:
        return False
    return (
        int(fields[4]) >= _EPOCH_2000
        and int(fields[5]) < 1_000_000
        and int(fields[0]) < _EPOCH_2000
    )


def _aggregate_problem(row: list[int]) -> str | None:
    """Why the row cannot be one interval of an aggregate log, or None."""
    start, count, sum_latency, sum_latency_2, low, high = row[:6]
    if start < _EPOCH_2000:
        return f"starts with {start}, not a Unix time (interval_start)"
    if count == 0:
        if sum_latency or sum_latency_2:
            return "has latencies for an interval without transactions"
        return None
    if low > high:
        return f"has min_latency {low} above max_latency {high}"
    if not count * low <= sum_latency <= count * high:
        return f"has sum_latency {sum_latency} outside num_transactions times min..max"
    if count * sum_latency_2 < sum_latency * sum_latency:
        return "has sum_latency_2 below what sum_latency allows (not squares of latencies)"
    return None


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
    if length and len(intervals) >= 3:
        full = intervals[1:-1]
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
    if length and len(intervals) >= 3:
        notes.append(
            "The first and last intervals are left out of tps: the start and the end of "
            "the run cut them short."
        )
    else:
        notes.append(
            "Fewer than three intervals hold no whole interval between the run's start "
            "and end, so no tps was derived."
        )
    return notes
