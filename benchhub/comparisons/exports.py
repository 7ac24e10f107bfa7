"""A comparison as CSV: the table the chart draws, one row per point."""

from __future__ import annotations

import csv
import io

from django.http import HttpResponse

from benchhub.comparisons.aggregation import Comparison
from benchhub.comparisons.verdicts import Verdict
from benchhub.results.exports import csv_cell

COLUMNS = (
    "series",
    "x",
    "value",
    "n",
    "min",
    "max",
    "relative",
    "verdict",
    "test",
    "p_value",
    "ratio",
    "ratio_low",
    "ratio_high",
)


def comparison_csv_rows(comparison: Comparison) -> list[list[object]]:
    """Header, then per series (in order) per x (in order) its point. The
    ``relative`` column is empty when there is no reference, or no
    reference value at that x; the verdict columns for the series judged
    against (the reference, or the first)."""
    rows: list[list[object]] = [list(COLUMNS)]
    for series in comparison.series:
        for point in series.points:
            rows.append(
                [
                    csv_cell(series.label),
                    csv_cell(point.x),
                    point.value,
                    point.n,
                    point.min,
                    point.max,
                    _blank(point.relative),
                    *_verdict_cells(point.verdict),
                ]
            )
    return rows


def comparison_csv_response(comparison: Comparison) -> HttpResponse:
    out = io.StringIO()
    csv.writer(out).writerows(comparison_csv_rows(comparison))
    name = f"{comparison.query.file_stem}.csv"
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _blank(value: object) -> object:
    return "" if value is None else value


def _verdict_cells(verdict: Verdict | None) -> list[object]:
    if verdict is None:
        return [""] * 6
    return [
        verdict.verdict,
        _blank(verdict.test),
        _blank(verdict.p_value),
        _blank(verdict.ratio),
        _blank(verdict.ratio_low),
        _blank(verdict.ratio_high),
    ]
