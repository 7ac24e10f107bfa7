"""A comparison as CSV: the table the chart draws, one row per point."""

from __future__ import annotations

import csv
import io
import math

from benchhub_contract.verdicts import Verdict
from django.http import HttpResponse

from benchhub.comparisons.aggregation import Comparison
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

# A relative value (percent of the reference) is a quotient times 100, and
# carries the float noise of both (109.39000000000001 for 109.39 / 100 * 100).
RELATIVE_SIGNIFICANT_DIGITS = 6


def relative_rounded(value: float | None) -> float | None:
    """A relative value as every output gives it (the CSV, the JSON, the
    page's table and so the chart): rounded to 6 significant digits, the
    figures the page's table shows (``figure``), so that 109.39000000000001
    is 109.39 and 104.06998858881704 is 104.07. Far below the noise of any
    benchmark; None stays None."""
    return _rounded(value, RELATIVE_SIGNIFICANT_DIGITS)


# A ratio (a verdict's, its interval's bounds, a geometric mean's) is a
# quotient of medians and carries its float noise (1.0499999999999998 for
# 105 / 100). Twelve significant digits drop the noise and keep far more than
# anyone compares ratios at: a client's approx (relative 1e-6) still holds.
RATIO_SIGNIFICANT_DIGITS = 12


def ratio_rounded(value: float | None) -> float | None:
    """A ratio as every output gives it (the CSV, the JSON and so the chart,
    the page's verdicts): rounded to 12 significant digits. None stays None."""
    return _rounded(value, RATIO_SIGNIFICANT_DIGITS)


# A median of an even count is the mean of the two middle values, and a sum of
# medians adds them up: each step may round by an ulp, and the figure carries
# that noise (4.074355000000001 for the median of 4.07435 and 4.07436).
# Rounding every figure to fewer digits would also move a measured value
# (a rate computed by division has all seventeen): only those two are rounded.
def statistic_rounded(value: float | None) -> float | None:
    """A computed figure (an interpolated median, a sum of medians) as every
    output gives it (the CSV, the JSON and so the chart): its fifteen
    significant digits where they are within one ulp of it, so
    4.074355000000001 is 4.074355; else the value itself (0.3333333333333333
    stays as it is). Two decimals of fifteen digits are further apart than
    two ulps, so no shorter decimal is within the ulp but that one. None
    stays None."""
    if value is None or not math.isfinite(value):
        return value
    fifteen = float(f"{value:.15g}")
    return fifteen if abs(fifteen - value) <= math.ulp(value) else value


def median_shown(value: float | None, n: int | None) -> float | None:
    """A point's median as the outputs give it: rounded as ``statistic_rounded``
    where it is the mean of two middle values (n even); otherwise it is one
    of the measurements, every digit as stored."""
    if n is not None and n % 2 == 0:
        return statistic_rounded(value)
    return value


def _rounded(value: float | None, digits: int) -> float | None:
    if value is None:
        return None
    return float(f"{value:.{digits}g}")


def comparison_csv_rows(comparison: Comparison) -> list[list[object]]:
    """Header, then per series (in order) per x (in order) its point. The
    ``relative`` column is empty when there is no reference, or no
    reference value at that x; the verdict columns for the series judged
    against (the reference, or the first). Then the combined scores, if
    any: per series a TOTALS row (value = its sum, n = the common operations,
    relative = 100 * its ratio) and a geometric-mean row. Relative values
    are rounded as ``relative_rounded`` says, ratios as ``ratio_rounded``,
    medians as ``median_shown``, their sums as ``statistic_rounded``."""
    rows: list[list[object]] = [list(COLUMNS)]
    for series in comparison.series:
        for point in series.points:
            rows.append(
                [
                    csv_cell(series.label),
                    csv_cell(point.x),
                    median_shown(point.value, point.n),
                    point.n,
                    point.min,
                    point.max,
                    _blank(relative_rounded(point.relative)),
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
                    statistic_rounded(totals.value),
                    row.operations,
                    "",
                    "",
                    _blank(None if totals.ratio is None else relative_rounded(totals.ratio * 100)),
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
                _blank(None if mean.ratio is None else relative_rounded(mean.ratio * 100)),
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
        _blank(ratio_rounded(verdict.ratio)),
        _blank(ratio_rounded(verdict.ratio_low)),
        _blank(ratio_rounded(verdict.ratio_high)),
    ]
