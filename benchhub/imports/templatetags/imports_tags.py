"""Filters for the import pages. They return plain text: autoescape applies."""

from __future__ import annotations

from typing import Any

from django import template

from benchhub.results.labels import ENUM_LABELS

register = template.Library()


@register.filter
def pairs(values: Any) -> str:
    """{"clients": 4, "test": "oltp_read_write"} → "clients=4, test=oltp_read_write".

    A filter rather than ``.items`` in the template: a parameter may be
    named "items", and the template language would look that key up instead.
    """
    if not isinstance(values, dict):
        return "" if values is None else str(values)
    return ", ".join(f"{key}={_text(value)}" for key, value in values.items())


@register.filter
def sections(environment: Any) -> list[tuple[str, Any]]:
    """An environment's sections as (name, fields) pairs, in document order."""
    return list(environment.items()) if isinstance(environment, dict) else []


@register.filter
def enum_label(value: str) -> str:
    """A schema vocabulary value as the form names it: unix_socket → Unix socket."""
    return ENUM_LABELS.get(value, value)


@register.filter
def number(value: Any) -> str:
    """A measured value as the tool printed it: 15, not 15.0; 2400.595767, not 2400.6."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.15g}"
    return "" if value is None else str(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
