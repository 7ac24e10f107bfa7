"""Bounds any JSON value must hold to before it reaches the schema: depth,
integers, text; and a JSON parser that enforces them while it reads."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import DocumentError, json_path

#: Deepest nesting of a document: a valid one nests 6 deep
#: (``$.runs[0].environment.database.settings.name``), so this leaves room for
#: errors to be reported by the schema with their path, and none for a bomb.
MAX_DEPTH = 16
#: Integers are stored as PostgreSQL bigint at most.
INTEGER_LIMIT = 2**63 - 1
#: More errors than this are cut, out of bounds or against the schema: a
#: document with a million bad numbers gets the first ones and a count, not
#: a megabyte of answer.
MAX_BOUNDS_ERRORS = 100
_UNPAIRED_SURROGATE = re.compile("[\ud800-\udfff]")


class OversizedInteger(str):
    """An integer literal too long to be a 64-bit integer, as :func:`loads`
    leaves it (``int()`` of 5,001 digits raises, and costs time before that)."""


class JSONTooDeep(ValueError):
    """Raised by :func:`loads` for nesting deeper than Python's parser recurses."""


def loads(text: str | bytes) -> Any:
    """JSON as the server reads it: UTF-8 only (``json.loads`` would guess
    UTF-16 and UTF-32 from bytes), every number kept as written so that
    :func:`bounds_errors` can point at the one out of range (NaN, Infinity and
    ``1e400`` become non-finite floats, over-long integers
    :class:`OversizedInteger`). Raises ValueError (UnicodeDecodeError,
    json.JSONDecodeError, :class:`JSONTooDeep`) for what is not JSON text."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text, parse_int=_parse_int, parse_constant=float)
    except RecursionError:
        raise JSONTooDeep("nested too deeply to parse") from None


def _parse_int(literal: str) -> int | OversizedInteger:
    # 20 characters hold every 64-bit integer with its sign.
    return int(literal) if len(literal) <= 20 else OversizedInteger(literal)


def bounds_errors(value: Any) -> list[DocumentError]:
    """What no JSON value may hold, wherever it is, because PostgreSQL cannot
    store it or arithmetic on it breaks: non-finite numbers, integers beyond
    64 bits, NUL characters and unpaired surrogates in text (and in object
    keys), nesting deeper than :data:`MAX_DEPTH`."""
    return [] if _plain_within_bounds(value) else _bounds_walk(value)


def _plain_within_bounds(document: Any) -> bool:
    """True only when ``document`` is plain JSON (:func:`_plain_json`) with
    nothing :func:`bounds_errors` refuses: one walk that keeps no paths,
    for the common case (an upload of 8 kB: ~0.07 ms, where the two walks
    it stands for took ~0.25). False means "walk again with paths", not
    "out of bounds": anything unusual (a type json.loads does not make) is
    left to :func:`_bounds_walk` and :func:`_plain_json`, which decide as
    before."""
    if type(document) is not dict:
        return False
    integer_low, integer_high, finite = -INTEGER_LIMIT - 1, INTEGER_LIMIT, math.isfinite
    stack = [(document, 0)]  # each container with the length of its path
    while stack:
        item, depth = stack.pop()
        if type(item) is dict:
            for key in item:
                if type(key) is not str or _unusual_text(key):
                    return False
            children: Any = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            if kind is str:
                if _unusual_text(child):
                    return False
            elif kind is float:
                if not finite(child):
                    return False
            elif kind is int:
                if not integer_low <= child <= integer_high:
                    return False
            elif kind is dict or kind is list:
                if depth + 1 >= MAX_DEPTH:
                    return False
                stack.append((child, depth + 1))
            elif kind is not bool and child is not None:
                return False
    return True


def _unusual_text(text: str) -> bool:
    """Whether _text_problem would find a problem (ASCII text holds no surrogate)."""
    return "\x00" in text or (not text.isascii() and _UNPAIRED_SURROGATE.search(text) is not None)


def _bounds_walk(value: Any) -> list[DocumentError]:
    """bounds_errors' walk, which keeps every container's path."""
    found: list[tuple[tuple[Any, ...], DocumentError]] = []
    if type(value) is not dict and type(value) is not list:
        problem = _scalar_problem(value)
        return [DocumentError("$", problem)] if problem else []
    # Only containers go on the stack, with their path; scalars are checked
    # in place (a 2 MB document holds some 200,000 of them).
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack and len(found) < MAX_BOUNDS_ERRORS:
        item, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            found.append((path, DocumentError(json_path(path), _TOO_DEEP)))
            continue
        for key, child in item.items() if type(item) is dict else enumerate(item):
            if type(key) is str and (problem := _text_problem(key)):
                message = f"the key {key!r} {problem}"
                found.append((path, DocumentError(json_path(path), message)))
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, (*path, key)))
            elif kind is float and math.isfinite(child):
                continue
            elif problem := _scalar_problem(child):
                where = (*path, key)
                found.append((where, DocumentError(json_path(where), problem)))
    found.sort(key=lambda entry: [(isinstance(p, str), p) for p in entry[0]])
    return [error for _, error in found]


_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, OversizedInteger):
        return f"an integer of {len(value.lstrip('-'))} digits is beyond 64 bits"
    if isinstance(value, str):
        return _text_problem(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not -INTEGER_LIMIT - 1 <= value <= INTEGER_LIMIT:
        return f"{value} is beyond 64-bit integers (±{INTEGER_LIMIT})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number (NaN, Infinity and beyond ±1.8e308 are refused)"
    return None


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which text cannot hold"
    if _UNPAIRED_SURROGATE.search(text):
        return "contains an unpaired UTF-16 surrogate, which is not Unicode text"
    return None
