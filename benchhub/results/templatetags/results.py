"""Filters for the result pages. They return plain text: autoescape applies."""

from __future__ import annotations

import re
from typing import Any

from django import template

from benchhub.results.presentation import parameter_value_text

register = template.Library()

# Scripts that name their language well enough for a screen reader and for
# font selection; a Latin title is left to the citation's own "language".
_SCRIPTS = (
    (re.compile(r"[\u3040-\u30ff]"), "ja"),  # kana: Japanese even beside kanji
    (re.compile(r"[\uac00-\ud7af]"), "ko"),
    (re.compile(r"[\u4e00-\u9fff]"), "zh"),
    (re.compile(r"[\u0400-\u04ff]"), "ru"),
    (re.compile(r"[\u0370-\u03ff]"), "el"),
)


@register.filter
def text_lang(text: Any, declared: Any = "") -> str:
    """The BCP 47 tag of a title written in another language than the page,
    or "": the declared one when there is, else from its script."""
    if declared:
        return str(declared)
    for pattern, lang in _SCRIPTS:
        if pattern.search(str(text or "")):
            return lang
    return ""


@register.filter
def citation_lang(citation: Any) -> str:
    """The language of a citation's title: its "language" field, or its script."""
    if not isinstance(citation, dict):
        return ""
    return text_lang(citation.get("title"), citation.get("language", ""))


# A stored address becomes a link only if it is a web address: uploads are checked on
# the way in, but a row stored before that check, or written around it, must still not
# turn into javascript: or data: in a moderator's browser.
_WEB_ADDRESS = re.compile(r"^https?://[^\s]+$", re.IGNORECASE)


@register.filter
def web_address(value: Any) -> str:
    """``value`` when it is an http(s) address, else "" (shown as text, not as a link)."""
    text = str(value or "").strip()
    return text if _WEB_ADDRESS.match(text) else ""


@register.filter
def parameter_value(value: Any) -> str:
    """true, not True: as the rest of the site spells a parameter's value."""
    return parameter_value_text(value)


@register.filter
def percent(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}%"


@register.filter
def commas(value: Any) -> str:
    """A stored comma-joined set ("noatime,sync") as text that can wrap."""
    return ", ".join(str(value or "").split(","))


@register.filter
def percent_of_one(value: Any) -> str:
    """0.034 → "3.4%"."""
    if value is None:
        return "—"
    return f"{value * 100:.1f}%"
