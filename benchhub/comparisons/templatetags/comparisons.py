"""Filters for the comparison page. They return plain text: autoescape applies."""

from __future__ import annotations

from typing import Any

from django import template

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
