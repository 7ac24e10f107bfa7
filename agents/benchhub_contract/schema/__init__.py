"""The submission document's JSON Schema and the benchmark catalog.

This is the one thing the agent and the server share: both validate a
document with :func:`validation_errors` before sending or storing it.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jsonschema

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
def benchmark_catalog() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("benchmarks.json").read_text("utf-8")
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


@dataclass(frozen=True)
class DocumentError:
    """One problem in a document: where it is (a JSON path such as
    ``$.runs[0].measurements[3].value``) and what is wrong."""

    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


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


# --- bounds: what any JSON value must hold to before it reaches the schema ---------------

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


def metric_catalog() -> dict[str, dict[str, dict[str, Any]]]:
    """benchmark name → metric name → metric definition."""
    return {
        b["name"]: {m["name"]: m for m in b["metrics"]} for b in benchmark_catalog()["benchmarks"]
    }


def catalog_errors(document: dict[str, Any]) -> list[DocumentError]:
    """What the schema cannot say: benchmarks and metrics from the catalog,
    units, measurement points given once per run, start before end."""
    catalog = metric_catalog()
    errors = []
    for r, run in enumerate(document["runs"]):
        path = f"$.runs[{r}]"
        metrics = catalog.get(run["benchmark"])
        if metrics is None:
            known = ", ".join(sorted(catalog))
            errors.append(
                DocumentError(
                    f"{path}.benchmark", f"unknown benchmark {run['benchmark']!r}; known: {known}"
                )
            )
            continue
        times = {}
        for field in ("started_at", "ended_at"):
            if field in run:
                problem = time_problem(run[field])
                if problem:
                    errors.append(DocumentError(f"{path}.{field}", problem))
                else:
                    times[field] = parse_time(run[field])
        started, ended = times.get("started_at"), times.get("ended_at")
        if started and ended and ended < started:
            errors.append(DocumentError(f"{path}.ended_at", "ended_at is before started_at"))
        seen: dict[tuple[str, str], int] = {}
        for m, measurement in enumerate(run["measurements"]):
            mpath = f"{path}.measurements[{m}]"
            definition = metrics.get(measurement["metric"])
            if definition is None:
                known = ", ".join(sorted(metrics))
                errors.append(
                    DocumentError(
                        f"{mpath}.metric",
                        f"benchmark {run['benchmark']!r} has no metric "
                        f"{measurement['metric']!r}; known: {known}",
                    )
                )
                continue
            unit = measurement.get("unit")
            if unit is not None and unit != definition["unit"]:
                errors.append(
                    DocumentError(
                        f"{mpath}.unit",
                        f"metric {measurement['metric']!r} is measured in "
                        f"{definition['unit']!r}, not {unit!r}",
                    )
                )
            errors.extend(_range_errors(definition, measurement, mpath))
            point = (measurement["metric"], _canonical(measurement.get("parameters", {})))
            if point in seen:
                errors.append(
                    DocumentError(
                        mpath,
                        f"duplicate of measurements[{seen[point]}]: same metric and parameters",
                    )
                )
            else:
                seen[point] = m
    return errors


def parse_time(value: str) -> dt.datetime | None:
    """An ISO 8601 date-time, None if unparsable. Validation (time_problem)
    refuses one without a UTC offset; any other is read as UTC."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


#: The times a run may carry, in UTC. Outside them PostgreSQL or Python cannot
#: hold the value (0001-01-01T00:00:00+05:00 is 1 BC in UTC, 9999-12-31T23:00-05:00
#: is year 10000), and nothing was benchmarked then anyway.
EARLIEST_TIME = dt.datetime(1950, 1, 1, tzinfo=dt.UTC)
LATEST_TIME = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
#: Real UTC offsets run from -12:00 to +14:00; PostgreSQL refuses beyond ±15:59.
MAX_UTC_OFFSET = dt.timedelta(hours=14)


def time_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a run's time, or None."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return f"{value!r} is not a date-time like 2026-11-20T10:00:00Z"
    if parsed.tzinfo is None:
        # Read as UTC, a local time would be stored hours away from when it ran.
        return (
            f"{value!r} has no UTC offset; add one, e.g. 2026-11-20T10:00:00Z (UTC) "
            "or 2026-11-20T11:00:00+01:00"
        )
    offset = parsed.utcoffset() or dt.timedelta()
    if abs(offset) > MAX_UTC_OFFSET:
        return f"{value!r} has a UTC offset beyond ±14:00"
    if offset % dt.timedelta(minutes=1):
        return f"{value!r} has a UTC offset that is not whole minutes"
    # Compared on the local clock: converting to UTC itself fails at year 1 and 9999.
    local, shift = parsed.replace(tzinfo=None), offset
    earliest, latest = (t.replace(tzinfo=None) + shift for t in (EARLIEST_TIME, LATEST_TIME))
    if not earliest <= local < latest:
        return (
            f"{value!r} is outside {EARLIEST_TIME.year}-01-01 to {LATEST_TIME.year - 1}-12-31 (UTC)"
        )
    return None


def _range_errors(
    definition: dict[str, Any], measurement: dict[str, Any], path: str
) -> list[DocumentError]:
    """The value and samples within the metric's range in the catalog."""
    low, high = definition.get("minimum"), definition.get("maximum")
    value, samples = measurement["value"], measurement.get("samples", [])
    if (low is None or (low <= value and all(low <= sample for sample in samples))) and (
        high is None or (value <= high and all(sample <= high for sample in samples))
    ):
        return []  # the common case, without a path written for each number
    numbers = [("value", measurement["value"])] + [
        (f"samples[{i}]", sample) for i, sample in enumerate(measurement.get("samples", []))
    ]
    errors = []
    for where, number in numbers:
        if (low is not None and number < low) or (high is not None and number > high):
            bounds = f"from {'-∞' if low is None else low} to {'∞' if high is None else high}"
            errors.append(
                DocumentError(
                    f"{path}.{where}",
                    f"{number} is out of range for {definition['name']} ({bounds})",
                )
            )
    return errors


def _canonical(parameters: dict[str, Any]) -> str:
    return repr(sorted(parameters.items()))
