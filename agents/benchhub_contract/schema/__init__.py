"""The submission document's JSON Schema, and the package's public names: the
catalog (catalog.py), bounds and the bounded JSON parser (bounds.py), times
(times.py).

This is the one thing the agent and the server share: both validate a
document with :func:`validation_errors` before sending or storing it.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from importlib import resources
from typing import Any

import jsonschema

from .bounds import (  # noqa: F401 -- the package's public names
    INTEGER_LIMIT,
    MAX_BOUNDS_ERRORS,
    MAX_DEPTH,
    JSONTooDeep,
    OversizedInteger,
    _bounds_walk,
    _plain_within_bounds,
    bounds_errors,
    loads,
)
from .catalog import benchmark_catalog, catalog_errors, metric_catalog  # noqa: F401
from .errors import DocumentError, json_path
from .times import EARLIEST_TIME, LATEST_TIME, MAX_UTC_OFFSET, parse_time, time_problem  # noqa: F401

try:  # optional for the agent (pip install 'benchhub-agent[fast]'); the server installs it
    import jsonschema_rs
except ImportError:  # pragma: no cover - depends on the environment
    jsonschema_rs = None

SCHEMA_VERSION = 1

#: Whether :func:`validation_errors` may ask ``jsonschema_rs`` first. The one
#: seam for tests (and for anyone who distrusts the fast path): set it to False
#: and every document goes through ``jsonschema`` alone. The answer is the same
#: either way; only the time differs.
fast_path_enabled = jsonschema_rs is not None


@functools.cache
def submission_schema() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("submission-v1.schema.json").read_text("utf-8")
    return json.loads(text)


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    schema = submission_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@functools.cache
def _fast_validator() -> Any:
    """The schema compiled by ``jsonschema_rs`` with the same notion of valid as
    :func:`_validator`, or None without ``jsonschema_rs``.

    Format checking: the schema's only format is ``date-time`` (``started_at``,
    ``ended_at``). ``jsonschema`` registers its ``date-time`` checker only when
    ``rfc3339-validator`` is importable, which it is not in the server's or the
    agent's requirements, so the Python path does not check ``date-time`` at all
    ("yesterday" passes the schema; ``catalog_errors`` catches it afterwards
    with ``parse_time``). ``jsonschema_rs`` would check it with its own rules
    when ``validate_formats`` is on (draft 2020-12 leaves it off), and those
    rules differ from ``rfc3339-validator``'s. So rather than guess, every
    format the schema uses is handed to ``jsonschema_rs`` as a callback into
    the Python validator's own format checker: unchecked where the Python path
    does not check, checked by the very same function where it does.
    """
    if jsonschema_rs is None:
        return None
    checker = _validator().format_checker
    formats = {
        name: functools.partial(_conforms, checker, name) for name in _formats(submission_schema())
    }
    return jsonschema_rs.Draft202012Validator(
        submission_schema(), formats=formats, validate_formats=True
    )


def _conforms(checker: jsonschema.FormatChecker, name: str, value: Any) -> bool:
    return checker.conforms(value, name)


def _formats(schema: Any) -> set[str]:
    """Every value of a "format" keyword in ``schema``."""
    if isinstance(schema, dict):
        found = {schema["format"]} if isinstance(schema.get("format"), str) else set()
        for value in schema.values():
            found |= _formats(value)
        return found
    if isinstance(schema, list):
        return set().union(*map(_formats, schema))
    return set()


# What json.loads produces. ``jsonschema_rs`` also takes a tuple for an array,
# an Enum member for its value and Decimal("2") for an integer, where
# ``jsonschema`` says "not of type"; a document holding anything else than
# these exact types takes the Python path.
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain_json(document: Any) -> bool:
    """Whether ``document`` is made of dict (with str keys), list and
    ``_JSON_SCALARS`` only (~0.06 ms for an 8 kB upload)."""
    stack = [document]
    while stack:
        value = stack.pop()
        if type(value) is dict:
            if not all(type(key) is str for key in value):
                return False
            children: Any = value.values()
        elif type(value) is list:
            children = value
        else:  # a scalar document, or a child of a foreign type
            return type(value) in _JSON_SCALARS
        for child in children:
            if type(child) not in _JSON_SCALARS:
                stack.append(child)
    return True


def _valid_fast(document: Any, *, plain: bool = False) -> bool:
    """True only when ``jsonschema_rs`` finds ``document`` valid. False means
    "ask jsonschema", not "invalid": the two regex engines differ ("abc\\n"
    matches ``^[a-z]+$`` in Python, not in Rust) and NaN is a number only to
    Python, and in such cases the Rust side is the stricter one, never the
    laxer, so a False from here costs time and never changes an answer.
    ``plain``: the caller knows ``_plain_json(document)`` holds."""
    validator = _fast_validator() if fast_path_enabled else None
    if validator is None or not (plain or _plain_json(document)):
        return False
    try:
        return validator.is_valid(document)
    except Exception:  # anything it cannot take; jsonschema decides
        return False


def validation_errors(document: Any) -> list[DocumentError]:
    """Every schema violation in ``document``, in document order; first the
    bounds of :func:`bounds_errors`, which the schema cannot say."""
    plain = _plain_within_bounds(document)
    if not plain:
        out_of_bounds = _bounds_walk(document)
        if out_of_bounds:
            return out_of_bounds  # neither validator may see what is out of bounds
    if _valid_fast(document, plain=plain):
        return []  # ~0.1 ms instead of ~5 ms for a valid upload
    found = []
    # Cut as the bounds are: 60,000 bad measurements were 60,001 errors, an
    # answer of 9 MB and seconds of the request's time to make it.
    errors = itertools.islice(_validator().iter_errors(document), MAX_BOUNDS_ERRORS)
    for error in errors:
        path = list(error.absolute_path)
        message = error.message
        missing = _REQUIRED.match(message) if error.validator == "required" else None
        if missing:
            # jsonschema reports a missing field on its parent; point at the field.
            path.append(missing.group(1))
            message = "this field is required"
        elif error.validator == "pattern" and "x-hint" in error.schema:
            # A regular expression tells a person little; the schema says in words.
            message = f"{_quoted(error.instance)} is not {error.schema['x-hint']}"
        else:
            message = _abridged(message, error.instance)
        found.append((path, DocumentError(json_path(path), message)))
    found.sort(key=lambda item: [(isinstance(p, str), p) for p in item[0]])
    return [error for _, error in found]


_REQUIRED = re.compile(r"^'(.+)' is a required property$")

#: Longest quotation of a value in an error message: jsonschema quotes a
#: value whole (a 100,000-character name, a list of 60,000 measurements), and
#: the server's answer gives each message twice.
QUOTED_LIMIT = 80
# Keys longer than that, as "Additional properties …" quotes them.
_LONG_KEY = re.compile(rf"'([^'\\]{{{QUOTED_LIMIT},}})'")


def _quoted(value: Any) -> str:
    """``repr(value)``, cut past QUOTED_LIMIT characters and followed by its size."""
    text = repr(value)
    if len(text) <= QUOTED_LIMIT:
        return text
    if isinstance(value, str):
        size = f"{len(value):,} characters"
    elif isinstance(value, (list, dict)):
        size = f"{len(value):,} {'items' if isinstance(value, list) else 'keys'}"
    else:
        size = f"{len(text):,} characters as Python writes it"
    cut = text[:QUOTED_LIMIT] + ("…'" if isinstance(value, str) else "…")
    return f"{cut} ({size})"


def _abridged(message: str, instance: Any) -> str:
    """jsonschema's message with the value it is about, and any long key it
    names, quoted by :func:`_quoted`."""
    whole = repr(instance)
    if len(whole) > QUOTED_LIMIT and whole in message:
        message = message.replace(whole, _quoted(instance))
    return _LONG_KEY.sub(lambda key: _quoted(key.group(1)), message)
