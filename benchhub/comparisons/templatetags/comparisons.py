"""Filters for the comparison page. They return plain text: autoescape applies."""

from __future__ import annotations

from typing import Any

from django import template

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
