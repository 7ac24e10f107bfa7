"""Filters for the import pages. They return plain text: autoescape applies."""

from __future__ import annotations

from typing import Any

from django import template

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


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
