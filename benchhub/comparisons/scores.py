"""Combined scores of a multi-operation comparison (x = the operations of
sql-bench, say), one summary row per series against the reference series
(or the first), each with its own verdict. Pure: a Comparison in, rows out.

- ``totals``: seed 002's TOTALS row, for a metric in seconds: the sum of the
  medians over the operations both series ran, the operations either one
  lacks named beside it. Its verdict takes each run's own total (runs that
  ran every common operation) as the unit, as a cell's verdict does.
- ``geometric_mean``: ClickBench's way, for any positive metric: the
  geometric mean of the per-operation ratios to the reference, with a
  bootstrap over operations for its interval. The run stays the unit, as
  for the cells and the totals: a side with a single run in an operation
  has its ratio shown but is insufficient data, since operations that agree
  between one run and another say nothing of how the next run would differ.

An x value named TOTALS (case-insensitive: the articles carry the row
themselves) is never summed or averaged again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from benchhub_contract.verdicts import (
    Verdict,
    geometric_mean_insufficient,
    geometric_mean_verdict,
    ratio_of,
    values_verdict,
)

from benchhub.comparisons.aggregation import NO_RUNS, Comparison, verdict_reference

# Units a sum of makes sense for (the catalog's time units).
ADDITIVE_UNITS = {"s", "ms", "us", "min", "h"}


@dataclass(frozen=True)
class Totals:
    value: float
    reference: float
    ratio: float | None
    verdict: Verdict


@dataclass(frozen=True)
class GeometricMean:
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    verdict: Verdict


@dataclass(frozen=True)
class SummaryRow:
    label: str
    operations: int  # common to this series and the reference
    missing: list[Any]  # x values the reference has and this series lacks
    extra: list[Any]  # x values this series has and the reference lacks
    totals: Totals | None
    geometric_mean: GeometricMean


def _is_total(x: Any) -> bool:
    return isinstance(x, str) and x.strip().casefold() == "totals"


def combined_scores(comparison: Comparison) -> list[SummaryRow]:
    """Empty unless the x values are text (operations, not a numeric sweep),
    there are at least two of them and at least two series, and a series
    shares at least two of them with the reference."""
    reference = verdict_reference(comparison)
    if reference is None or len(comparison.series) < 2 or comparison.x_numeric:
        return []
    operations = [x for x in comparison.x_values if not _is_total(x)]
    if len(operations) < 2:
        return []
    query = comparison.query
    metric = query.metric
    medians = {
        (series.label, point.x): point.value
        for series in comparison.series
        for point in series.points
    }
    reference_has = {x for x in operations if (reference, x) in medians}
    # The reference's runs' totals over each set of common operations: the
    # same for every series that has all of the reference's operations.
    reference_totals: dict[tuple[Any, ...], list[float]] = {}
    rows = []
    for series in comparison.series:
        if series.label == reference:
            continue
        has = {x for x in operations if (series.label, x) in medians}
        common = [x for x in operations if x in has and x in reference_has]
        # An operation without a finite ratio (0 s on the reference's side)
        # leaves the geometric mean; it stays in the totals.
        ratios = {
            x: ratio
            for x in common
            if (ratio := ratio_of(medians[series.label, x], medians[reference, x])) is not None
        }
        if _a_single_run(comparison, (series.label, reference), ratios):
            # decided before the test, which would be thrown away
            judged = geometric_mean_insufficient(
                list(ratios.values()), minimum_effect=query.minimum_effect
            )
        else:
            judged = geometric_mean_verdict(
                list(ratios.values()),
                direction=metric.direction,
                minimum_effect=query.minimum_effect,
            )
        totals = None
        if metric.unit in ADDITIVE_UNITS and common:
            reference_runs = reference_totals.get(tuple(common))
            if reference_runs is None:
                reference_runs = _run_totals(comparison, reference, common)
                reference_totals[tuple(common)] = reference_runs
            totals = _totals(comparison, medians, series.label, reference, common, reference_runs)
        rows.append(
            SummaryRow(
                label=series.label,
                operations=len(common),
                missing=[x for x in operations if x in reference_has and x not in has],
                extra=[x for x in operations if x in has and x not in reference_has],
                totals=totals,
                geometric_mean=GeometricMean(
                    judged.ratio, judged.ratio_low, judged.ratio_high, judged
                ),
            )
        )
    # Nothing combines where no series shares two operations with the
    # reference (x = filesystem, the raw device alone in its series): the
    # table would be rows of dashes and "insufficient data".
    return rows if any(row.operations >= 2 for row in rows) else []


def _a_single_run(
    comparison: Comparison, labels: tuple[str, str], operations: Iterable[Any]
) -> bool:
    """Whether either side has a single run (or none) in one of ``operations``."""
    return any(
        len(comparison.cell_runs.get((label, x), NO_RUNS)) < 2
        for label in labels
        for x in operations
    )


def _totals(
    comparison: Comparison,
    medians: dict[tuple[str, Any], float],
    label: str,
    reference: str,
    common: list[Any],
    reference_runs: list[float],
) -> Totals:
    value = math.fsum(medians[label, x] for x in common)
    reference_value = math.fsum(medians[reference, x] for x in common)
    query = comparison.query
    judged = values_verdict(
        _run_totals(comparison, label, common),
        reference_runs,
        direction=query.metric.direction,
        minimum_effect=query.minimum_effect,
    )
    ratio = ratio_of(value, reference_value)
    return Totals(value, reference_value, ratio, judged)


def _run_totals(comparison: Comparison, label: str, common: list[Any]) -> list[float]:
    """Each run's own total over the common operations, for the runs that
    ran all of them (a run missing one has no comparable total)."""
    cells = [comparison.cell_runs.get((label, x), NO_RUNS) for x in common]
    first = cells[0]
    if all(cell.run_ids == first.run_ids for cell in cells):
        # The usual case: every run in every cell (a cell's runs are listed
        # in sample order, a function of the run id alone).
        columns = [cell.run_values for cell in cells]
    else:
        complete = set(first).intersection(*cells[1:])
        # The order the runs had before (a bootstrap's draws depend on it):
        # as they first appear, which for a complete run is in the first cell.
        order = [run_id for run_id in first if run_id in complete]
        columns = [[cell[run_id].value for run_id in order] for cell in cells]
    return list(map(math.fsum, zip(*columns, strict=True)))
