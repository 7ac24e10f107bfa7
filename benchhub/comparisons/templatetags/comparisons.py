"""Filters for the comparison page. They return plain text: autoescape
applies. ``comparison_cell`` returns a table cell's HTML, escaped by
format_html: a comparison of operations has hundreds of cells, and the
template language took 60 ms to render them (benchmarks/compare.py, case 3)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from benchhub.comparisons.verdicts import Verdict

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
def shown(value: Any) -> str:
    """An axis or series value as the chart labels it: the empty text (no
    mount options, say) as "(none)"."""
    return "(none)" if value is None or value == "" else str(value)


@register.filter
def lookup(mapping: Any, key: str) -> Any:
    """``errors|lookup:"param.operation"``: a key the dot syntax cannot reach."""
    return mapping.get(key, "") if isinstance(mapping, dict) else ""


_MARKS = {
    "better": "▲",
    "higher": "▲",
    "worse": "▼",
    "lower": "▼",
    "within noise": "≈",
    "insufficient data": "?",
}


@register.filter
def verdict_mark(verdict: Verdict) -> str:
    """The glyph the chart draws for this verdict, so the table reads the same."""
    return _MARKS.get(verdict.verdict, "")


@register.filter
def verdict_class(verdict: Verdict) -> str:
    return "verdict-" + verdict.verdict.replace(" ", "-")


@register.filter
def verdict_detail(verdict: Verdict) -> str:
    """How the verdict was reached, for the cell's title."""
    if verdict.test is None:
        return "a side has a single unrepeated value: no verdict"
    text = f"{verdict.test}, p = {verdict.p_value:.3g}; ratio {verdict.ratio:.4g}"
    if verdict.ratio_low is not None and verdict.ratio_high is not None:
        text += f", 95 % interval {verdict.ratio_low:.4g} to {verdict.ratio_high:.4g}"
    return text


@register.filter
def percent(fraction: float) -> str:
    return f"{fraction * 100:g} %"


_MISSING = mark_safe('<span class="missing" title="no measurement">\u2014</span>')


@register.simple_tag
def comparison_cell(point: Any, reference: Any, unit: str) -> SafeString:
    """The inside of a comparison table's cell: the value (relative to the
    reference, with the absolute value beside it, when there is one), n and
    the range, and the verdict; a dash where the series has no value."""
    if not point:
        return _MISSING
    if reference:
        value = format_html(
            '<span class="value">{}</span> <span class="absolute">{}&nbsp;{}</span>',
            figure(point.relative),
            figure(point.value),
            unit,
        )
    else:
        value = format_html('<span class="value">{}</span>', figure(point.value))
    spread = f", {figure(point.min)}\u2013{figure(point.max)}" if point.n > 1 else ""  # en dash
    html = format_html('{} <span class="n">n={}{}</span>', value, point.n, spread)
    if point.verdict:
        verdict = point.verdict
        html = format_html(
            '{} <span class="verdict {}" title="{}">{} {}</span>',
            html,
            verdict_class(verdict),
            verdict_detail(verdict),
            verdict_mark(verdict),
            verdict.verdict,
        )
    return html
