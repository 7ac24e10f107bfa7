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


# The summary rows' x: the combined scores of the series (scores.py).
TOTALS_ROW = "(TOTALS over common operations)"
GEOMETRIC_MEAN_ROW = "(geometric mean of ratios)"


def comparison_csv_rows(comparison: Comparison) -> list[list[object]]:
    """Header, then per series (in order) per x (in order) its point. The
    ``relative`` column is empty when there is no reference, or no
    reference value at that x; the verdict columns for the series judged
    against (the reference, or the first). Then the combined scores, if
    any: per series a TOTALS row (value = its sum, n = the common operations,
    relative = 100 * its ratio) and a geometric-mean row."""
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
    for row in comparison.summary:
        if row.totals is not None:
            totals = row.totals
            rows.append(
                [
                    csv_cell(row.label),
                    TOTALS_ROW,
                    totals.value,
                    row.operations,
                    "",
                    "",
                    _blank(None if totals.ratio is None else totals.ratio * 100),
                    *_verdict_cells(totals.verdict),
                ]
            )
        mean = row.geometric_mean
        rows.append(
            [
                csv_cell(row.label),
                GEOMETRIC_MEAN_ROW,
                "",
                row.operations,
                "",
                "",
                _blank(None if mean.ratio is None else mean.ratio * 100),
                *_verdict_cells(mean.verdict),
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
