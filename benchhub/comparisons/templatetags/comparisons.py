"""Filters for the comparison page. They return plain text: autoescape
applies. ``comparison_cells`` returns a table row's cells' HTML, each
value escaped: a comparison of operations has hundreds of cells, and the
template language took 60 ms to render them (benchmarks/compare.py, case 3)."""

from __future__ import annotations

import html
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from benchhub_contract.verdicts import EQUIVALENT, INCONCLUSIVE, Verdict
from django import template
from django.template.defaultfilters import floatformat
from django.utils.safestring import SafeString, mark_safe

from benchhub.baselines.histogram import bucket_of
from benchhub.comparisons.aggregation import label_shown
from benchhub.comparisons.exports import ratio_rounded, relative_rounded

register = template.Library()


@register.filter
def figure(value: Any) -> str:
    """A median or a relative value, readable: 1800, 107.3, 0.6271, 97.7612."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if abs(value) >= 100_000:
        return f"{value:.0f}"
    return f"{value:.6g}"


@register.filter
def baseline_figure(value: Any) -> str:
    """A baseline's statistic (median, quartile, min, max) at the precision
    it has: the baseline counts values at their rounding to 4 significant
    digits (histogram.bucket_of), so its median 2650.5 (the mean of two
    buckets) may stand for an exact 2650.65. It reads "≈2650": the digits
    it holds, and the "≈" the site marks approximate figures with."""
    rounded = bucket_of(value) if isinstance(value, (int, float)) else None
    if rounded is None or isinstance(value, bool):
        return figure(value)
    return "≈" + figure(rounded)


@register.filter
def shown(value: Any) -> str:
    """An axis or series value as the chart labels it: the empty text (no
    mount options, no filesystem given) as "(none)", which ``reference=``
    reads back as that empty value (``aggregation.EMPTY_SHOWN``)."""
    return label_shown(value)


@register.filter
def lookup(mapping: Any, key: str) -> Any:
    """``errors|lookup:"param.operation"``: a key the dot syntax cannot reach."""
    return mapping.get(key, "") if isinstance(mapping, dict) else ""


# The chart's glyphs (static/comparisons/compare.js, VERDICT_MARKS): "=" only
# where the interval shows the two the same within the minimum effect; "?"
# where it could not tell; "…" where no test could run (more data needed).
_MARKS = {
    "better": "▲",
    "higher": "▲",
    "worse": "▼",
    "lower": "▼",
    "equivalent": "=",
    "inconclusive": "?",
    "insufficient data": "…",
}


@register.filter
def verdict_mark(verdict: Verdict) -> str:
    """The glyph the chart draws for this verdict, so the table reads the same."""
    return _MARKS.get(verdict.verdict, "")


@register.filter
def verdict_label(verdict: Verdict) -> str:
    """The verdict's word; "inconclusive" with the interval that makes it so
    (seed 002's TOTALS: "inconclusive: 0.856\u20132.63 \u00d7"), so that a
    reader sees at once how far either way the data still allow."""
    return _label(verdict, _ratios(verdict))


def _label(verdict: Verdict, ratios: tuple[float | None, float | None, float | None]) -> str:
    """``verdict_label``, with the verdict's ``_ratios``."""
    if verdict.verdict != INCONCLUSIVE:
        return verdict.verdict
    _, low, high = ratios
    if low is None or high is None:
        return f"{INCONCLUSIVE}: no 95 % interval"
    return f"{INCONCLUSIVE}: {low:.3g}\u2013{high:.3g} \u00d7"


@register.filter
def verdict_class(verdict: Verdict) -> str:
    return "verdict-" + verdict.verdict.replace(" ", "-")


@register.filter
def verdict_detail(verdict: Verdict) -> str:
    """How the verdict was reached, for the cell's title."""
    return _detail(verdict, _ratios(verdict))


def _detail(verdict: Verdict, ratios: tuple[float | None, float | None, float | None]) -> str:
    """``verdict_detail``, with the verdict's ``_ratios``."""
    if verdict.test is None:
        # Verdict does not say which (the agent judges with the same class):
        # each of them, rather than the first alone, which a cell of four
        # runs a side against a reference of 0 was told.
        return (
            "no verdict: a side is a single unrepeated value or a single run, too few runs "
            "(2 against up to 7, 3 against 3 or 4) or operations (up to 5) for any test to "
            "tell at 5 %, or the reference is 0"
        )
    ratio, low, high = ratios
    text = f"{verdict.test}, p = {verdict.p_value:.3g}; ratio {ratio:.4g}"
    if low is not None and high is not None:
        text += f", 95 % interval {low:.4g} to {high:.4g}"
    else:
        text += (
            ", no 95 % interval (too few runs or operations to bound one, or a value of 0 or less)"
        )
    return f"{text}; {_meaning(verdict)}"


def _meaning(verdict: Verdict) -> str:
    """What the word says, in the terms of this verdict's minimum effect."""
    effect = percent(verdict.minimum_effect)
    if verdict.verdict == EQUIVALENT:
        return f"equivalent: the interval lies within \u00b1{effect}, so any difference is smaller"
    if verdict.verdict == INCONCLUSIVE:
        return (
            f"inconclusive: the interval reaches past \u00b1{effect}, so the data cannot tell "
            f"whether the difference reaches {effect}"
        )
    return f"{verdict.verdict}: p < 0.05 and at least {effect} apart"


@register.filter
def verdict_numbers(verdict: Verdict) -> str:
    """What a verdict rests on, shown under it: its p-value and the ratio
    with its 95 % interval (insufficient data: the ratio alone). A title
    alone is out of reach on a phone (no hover) and of most keyboard and
    screen-reader users."""
    return _numbers(verdict, _ratios(verdict))


def _numbers(verdict: Verdict, ratios: tuple[float | None, float | None, float | None]) -> str:
    """``verdict_numbers``, with the verdict's ``_ratios``."""
    if verdict.ratio is None:
        return ""
    ratio, low, high = ratios
    if verdict.test is None or verdict.p_value is None:
        # insufficient data: no test, but the ratio the JSON and CSV give
        return f"ratio {ratio:.3g}"
    text = f"p = {verdict.p_value:.2g} · ratio {ratio:.3g}"
    if low is not None and high is not None and verdict.verdict != INCONCLUSIVE:
        # (an inconclusive verdict's label carries its interval)
        text += f" ({low:.3g}\u2013{high:.3g})"
    return text


def _ratios(verdict: Verdict) -> tuple[float | None, float | None, float | None]:
    """The verdict's ratio and interval as the JSON and the CSV give them
    (``ratio_rounded``), so the page's figures are theirs, shortened."""
    return (
        ratio_rounded(verdict.ratio),
        ratio_rounded(verdict.ratio_low),
        ratio_rounded(verdict.ratio_high),
    )


@register.filter
def percent(fraction: float) -> str:
    return f"{fraction * 100:g} %"


_MISSING = '<span class="missing" title="no measurement">\u2014</span>'


@register.simple_tag
def comparison_cells(points: list[Any], reference: Any, unit: str) -> SafeString:
    """A row of the comparison table's cells, a ``<td>`` per series: the
    value (relative to the reference, with the absolute value beside it,
    when there is one), n and the range, and the verdict; a dash where the
    series has no value. One tag per row rather than per cell: a comparison
    of operations has hundreds of cells, and the template language's loop
    and argument lookups per cell cost more than the cells."""
    unit = html.escape(str(unit))
    return mark_safe(  # noqa: S308 -- every value escaped in _cell_html
        "".join(
            [f'<td class="number">{_cell_html(point, reference, unit)}</td>' for point in points]
        )
    )


def _cell_html(point: Any, reference: Any, unit: str) -> str:
    """One cell's inside, ``unit`` escaped already: each value escaped by
    html.escape, as Django's escape (and so format_html) does."""
    if not point:
        return _MISSING
    if reference is not None:  # "" too: the empty mount options, say
        html_text = (
            f'<span class="value">{_figure_html(relative_rounded(point.relative))}</span> '
            f'<span class="absolute">{_figure_html(point.value)}&nbsp;{unit}</span>'
        )
    else:
        html_text = f'<span class="value">{_figure_html(point.value)}</span>'
    spread = f", {figure(point.min)}\u2013{figure(point.max)}" if point.n > 1 else ""  # en dash
    html_text = (
        f'{html_text} <span class="n">n={html.escape(str(point.n))}{html.escape(spread)}</span>'
    )
    verdict = point.verdict
    if verdict:
        ratios = _ratios(verdict)  # rounded once for the title, the label and the numbers
        html_text = (
            f'{html_text} <span class="verdict {html.escape(verdict_class(verdict))}" '
            f'title="{html.escape(_detail(verdict, ratios))}">'
            f"{html.escape(verdict_mark(verdict))} {html.escape(_label(verdict, ratios))}</span>"
        )
        numbers = _numbers(verdict, ratios)
        if numbers:
            html_text += f' <span class="verdict-numbers">{html.escape(numbers)}</span>'
    return html_text


def _figure_html(value: Any) -> str:
    """``figure(value)``, escaped: a number's figure has nothing to escape."""
    if value.__class__ is float:
        return figure(value)
    return html.escape(figure(value))


@register.simple_tag
def side_by_side_cells(cells: list[Any]) -> SafeString:
    """A row of the runs-side-by-side table's cells (side_by_side.Cell), a
    ``<td>`` per run: the value as ``figure`` writes it and n, then the ratio
    to the first run's, the verdict and its interval. Built here rather than
    in the template for the reason ``comparison_cells`` is: twelve runs of
    select-update are 972 cells, and the template's lookups and four
    ``floatformat`` calls per cell were a third of the page's time."""
    return mark_safe("".join(map(_side_by_side_cell, cells)))  # noqa: S308 -- escaped below


def _side_by_side_cell(cell: Any) -> str:
    text = f'<td class="num">{_figure_html(cell.value)} <span class="sub">n {cell.n:d}</span>'
    judged = cell.verdict
    if cell.ratio is not None:
        text += (
            f'<span class="sub">\u00d7 {fixed(cell.ratio, 3)} \u00b7 '
            f"{html.escape(judged.verdict if judged else '')}"
        )
        if judged is not None and judged.ratio_low is not None:
            text += f" ({fixed(judged.ratio_low, 2)}\u2013{fixed(judged.ratio_high, 2)} \u00d7)"
        text += "</span>"
    return text + "</td>"


_PLACES = {places: Decimal(1).scaleb(-places) for places in range(1, 7)}


def fixed(value: Any, places: int) -> str:
    """``floatformat:"-<places>"`` of ``value``, the same text: rounded half
    up at ``places`` decimals from the float's shortest repr, an integral
    value without decimals. Written out here for the floats a page prints
    by the thousand (a ratio, its interval), where Django's filter costs
    20 µs; anything else (huge, tiny, not a float) goes to the filter."""
    if value.__class__ is not float or not 1e-3 <= abs(value) < 1e12:
        return html.escape(floatformat(value, f"-{places}"))
    exact = Decimal(repr(value))
    if exact == exact.to_integral_value():
        return f"{value:.0f}"
    rounded = exact.quantize(_PLACES[places], ROUND_HALF_UP)
    return f"{rounded if rounded else abs(rounded):f}"
