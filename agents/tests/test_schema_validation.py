"""validation_errors with its jsonschema_rs fast path gives the Python validator's answers.

The fast path (benchhub_contract.schema.fast_path_enabled) asks jsonschema_rs
whether a document is valid and answers [] when it is; otherwise the Python
jsonschema path builds the errors. So the two validators must agree on what is
valid, and the errors must not depend on the path. Every comparison below asks
both: jsonschema_rs directly (``rust_agrees``), ``validation_errors`` with the
fast path on, and the reference with it off (``python_errors``). Without
jsonschema_rs installed (the agent without its ``fast`` extra) there is nothing
to compare with: those tests skip and say so, and only the tests of the Python
validator's own answers (wording, order, non-objects) run.
"""

from __future__ import annotations

import copy
import decimal
import enum
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from benchhub_contract import schema
from benchhub_contract.schema import catalog

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "docs" / "examples" / "select-update-submission.json"
VALID_FILES = [EXAMPLE, *sorted((REPO_ROOT / "benchhub" / "imports" / "articles").glob("*.json"))]

Document = dict[str, Any]

ONLY_PYTHON = "only the Python validator runs: jsonschema_rs is not installed, nothing to compare"


def load(path: Path) -> Document:
    return json.loads(path.read_text("utf-8"))


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """validation_errors takes its jsonschema_rs fast path in the test."""
    if schema.jsonschema_rs is None:
        pytest.skip(ONLY_PYTHON)
    monkeypatch.setattr(schema, "fast_path_enabled", True)


def python_errors(document: Any) -> list[schema.DocumentError]:
    """The reference: jsonschema alone."""
    saved = schema.fast_path_enabled
    schema.fast_path_enabled = False
    try:
        return schema.validation_errors(document)
    finally:
        schema.fast_path_enabled = saved


def rust_agrees(document: Any, valid: bool) -> bool:
    """Whether jsonschema_rs, asked directly, says ``valid``; never answers without it."""
    if schema.jsonschema_rs is None:
        raise AssertionError(ONLY_PYTHON)
    validator = schema._fast_validator()
    assert isinstance(validator, schema.jsonschema_rs.Validator)
    return validator.is_valid(document) is valid


# ------------------------------------------------------------------ mutations


def setter(*keys: str | int, value: Any) -> Callable[[Document], None]:
    def mutate(document: Document) -> None:
        target = document
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return mutate


def deleter(*keys: str | int) -> Callable[[Document], None]:
    def mutate(document: Document) -> None:
        target = document
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return mutate


def both(*mutations: Callable[[Document], None]) -> Callable[[Document], None]:
    def mutate(document: Document) -> None:
        for mutation in mutations:
            mutation(document)

    return mutate


RUN = ("runs", 0)
MEASUREMENT = (*RUN, "measurements", 0)
HARDWARE = ("environment", "hardware")

# name → (mutation of the example, path of an error it must produce)
INVALID = {
    "schema is a string": (setter("schema", value="1"), "$.schema"),
    "schema is true": (setter("schema", value=True), "$.schema"),
    "uuid is a number": (setter("uuid", value=123), "$.uuid"),
    "runs is an object": (setter("runs", value={}), "$.runs"),
    "value is a string": (
        setter(*MEASUREMENT, "value", value="fast"),
        "$.runs[0].measurements[0].value",
    ),
    "value is a boolean": (
        setter(*MEASUREMENT, "value", value=True),
        "$.runs[0].measurements[0].value",
    ),
    "value is null": (setter(*MEASUREMENT, "value", value=None), "$.runs[0].measurements[0].value"),
    "cores is a string": (setter(*HARDWARE, "cores", value="8"), "$.environment.hardware.cores"),
    "cores is 2.5": (setter(*HARDWARE, "cores", value=2.5), "$.environment.hardware.cores"),
    "samples is a string": (
        setter(*MEASUREMENT, "samples", value="1,2"),
        "$.runs[0].measurements[0].samples",
    ),
    "a sample is a string": (
        setter(*MEASUREMENT, "samples", value=[1, "2"]),
        "$.runs[0].measurements[0].samples[1]",
    ),
    "a setting is a list": (
        setter("environment", "database", "settings", "fsync", value=["on"]),
        "$.environment.database.settings.fsync",
    ),
    "mount options a number (oneOf)": (
        setter("environment", "storage", "mount_options", value=5),
        "$.environment.storage.mount_options",
    ),
    "a parameter is null": (
        setter(*MEASUREMENT, "parameters", "clients", value=None),
        "$.runs[0].measurements[0].parameters.clients",
    ),
    "uuid missing": (deleter("uuid"), "$.uuid"),
    "runs missing": (deleter("runs"), "$.runs"),
    "value missing": (deleter(*MEASUREMENT, "value"), "$.runs[0].measurements[0].value"),
    "version_string missing": (
        deleter("environment", "database", "version_string"),
        "$.environment.database.version_string",
    ),
    "curated without citation (if/then)": (
        setter("source", "kind", value="curated"),
        "$.source.citation",
    ),
    "storage kind not in enum": (
        setter("environment", "storage", "kind", value="floppy"),
        "$.environment.storage.kind",
    ),
    "os family not in enum": (
        setter("environment", "os", "family", value="plan9"),
        "$.environment.os.family",
    ),
    "protocol not in enum": (
        setter("environment", "client", "protocol", value="pigeon"),
        "$.environment.client.protocol",
    ),
    "uuid not a uuid": (setter("uuid", value="not-a-uuid"), "$.uuid"),
    "uuid one digit short": (setter("uuid", value="3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e1"), "$.uuid"),
    "uuid with arabic-indic digits": (
        setter("uuid", value="٠١٢٣٤٥٦٧-8d1e-4b7a-9c0e-2b5d6f8a9e10"),
        "$.uuid",
    ),
    "benchmark name pattern": (
        setter(*RUN, "benchmark", value="Select Update"),
        "$.runs[0].benchmark",
    ),
    "metric name pattern": (
        setter(*MEASUREMENT, "metric", value="Throughput"),
        "$.runs[0].measurements[0].metric",
    ),
    "parameter name pattern": (
        setter(*MEASUREMENT, "parameters", value={"Clients": 1}),
        "$.runs[0].measurements[0].parameters",
    ),
    "additional property at the top": (setter("extra", value=1), "$"),
    "additional property in a measurement": (
        setter(*MEASUREMENT, "color", value="red"),
        "$.runs[0].measurements[0]",
    ),
    "additional environment section": (setter("environment", "gpu", value={}), "$.environment"),
    "no runs (minItems)": (setter("runs", value=[]), "$.runs"),
    "cores 0 (minimum)": (setter(*HARDWARE, "cores", value=0), "$.environment.hardware.cores"),
    "ram negative": (
        setter(*HARDWARE, "ram_bytes", value=-(10**40)),
        "$.environment.hardware.ram_bytes",
    ),
    "cpu 501 characters (maxLength)": (
        setter(*HARDWARE, "cpu", value="\U0001f600" * 501),
        "$.environment.hardware.cpu",
    ),
    "repetitions 1001 (maximum)": (
        setter(*RUN, "repetitions", value=1001),
        "$.runs[0].repetitions",
    ),
    # Bounds the schema and bounds_errors add: what PostgreSQL cannot store.
    "ram 2**64 (beyond bigint)": (
        setter(*HARDWARE, "ram_bytes", value=2**64),
        "$.environment.hardware.ram_bytes",
    ),
    "value 10**40 (beyond 1e18)": (
        setter(*MEASUREMENT, "value", value=10**40),
        "$.runs[0].measurements[0].value",
    ),
    "value NaN": (
        setter(*MEASUREMENT, "value", value=float("nan")),
        "$.runs[0].measurements[0].value",
    ),
    "value infinity": (
        setter(*MEASUREMENT, "value", value=float("inf")),
        "$.runs[0].measurements[0].value",
    ),
    "many errors at once": (
        both(
            setter("uuid", value="nope"),
            deleter(*MEASUREMENT, "value"),
            setter(*RUN, "measurements", 3, "metric", value="Bad"),
            setter("environment", "storage", "kind", value="tape"),
            setter("zzz", value=1),
        ),
        "$.runs[0].measurements[3].metric",
    ),
}

# Valid by the schema, though a person may not think so; both paths must say so.
VALID_MUTATIONS = {
    "cores 8.0 is an integer": setter(*HARDWARE, "cores", value=8.0),
    "schema 1.0 is the const 1": setter("schema", value=1.0),
    "ram 2**63 - 1 (bigint's largest)": setter(*HARDWARE, "ram_bytes", value=2**63 - 1),
    "value 10**18": setter(*MEASUREMENT, "value", value=10**18),
    "cpu 500 astral characters": setter(*HARDWARE, "cpu", value="\U0001f600" * 500),
    "mount options as a list": setter("environment", "storage", "mount_options", value=["rw"]),
    "curated with citation": both(
        setter("source", "kind", value="curated"),
        setter("source", "citation", value={"title": "t"}),
    ),
}


def mutated(mutation: Callable[[Document], None]) -> Document:
    document = copy.deepcopy(load(EXAMPLE))
    mutation(document)
    return document


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("file", VALID_FILES, ids=lambda file: file.name)
def test_the_valid_documents_are_valid_on_both_paths(fast: None, file: Path) -> None:
    document = load(file)
    assert python_errors(document) == []
    assert schema.validation_errors(document) == []
    assert rust_agrees(document, valid=True)


@pytest.mark.parametrize("name", VALID_MUTATIONS)
def test_edge_cases_the_schema_allows_are_valid_on_both_paths(fast: None, name: str) -> None:
    document = mutated(VALID_MUTATIONS[name])
    assert python_errors(document) == []
    assert schema.validation_errors(document) == []
    assert rust_agrees(document, valid=True)


@pytest.mark.parametrize("name", INVALID)
def test_invalid_documents_get_the_same_errors_on_both_paths(fast: None, name: str) -> None:
    mutation, where = INVALID[name]
    document = mutated(mutation)
    expected = python_errors(document)
    assert where in [error.path for error in expected]
    assert rust_agrees(document, valid=False)
    assert schema.validation_errors(document) == expected


def test_the_errors_keep_their_wording_and_order() -> None:
    """The Python validator's own answer (the fast path only ever answers "valid")."""
    document = mutated(INVALID["many errors at once"][0])
    assert [error.as_dict() for error in python_errors(document)] == [
        {"path": "$", "message": "Additional properties are not allowed ('zzz' was unexpected)"},
        {"path": "$.environment.storage.kind", "message": "'tape' is not one of "
         "['hdd', 'ssd', 'nvme', 'virtual', 'unknown']"},
        {"path": "$.runs[0].measurements[0].value", "message": "this field is required"},
        {"path": "$.runs[0].measurements[3].metric", "message": "'Bad' is not a metric name "
         "such as throughput (lower-case letters, digits and _)"},
        {"path": "$.uuid", "message": "'nope' is not a UUID such as "
         "3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10"},
    ]  # fmt: skip


def test_a_long_value_is_quoted_cut_with_its_size() -> None:
    """jsonschema quotes a value whole: a 100,000-character name was 100 kB
    of message, and as much again in the answer's details."""
    document = mutated(
        both(setter("uuid", value="x" * 10_000), setter(*HARDWARE, "cpu", value="y" * 100_000))
    )

    messages = {error.path: error.message for error in schema.validation_errors(document)}

    quoted = "'" + "x" * (schema.QUOTED_LIMIT - 1) + "…'"
    assert messages["$.uuid"] == (
        f"{quoted} (10,000 characters) is not a UUID such as 3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10"
    )
    assert messages["$.environment.hardware.cpu"].endswith("(100,000 characters) is too long")
    assert max(len(message) for message in messages.values()) < 200


def test_a_long_list_and_a_long_unexpected_key_are_quoted_cut() -> None:
    measurement = load(EXAMPLE)["runs"][0]["measurements"][0]
    document = mutated(
        both(
            setter("runs", 0, "measurements", value=[measurement] * 5_001),
            setter("k" * 5_000, value=1),
        )
    )

    errors = schema.validation_errors(document)

    assert [error.message for error in errors] == [
        "Additional properties are not allowed ('" + "k" * (schema.QUOTED_LIMIT - 1) + "…' "
        "(5,000 characters) was unexpected)",
        f"{repr([measurement] * 2)[: schema.QUOTED_LIMIT]}… (5,001 items) is too long",
    ]


def test_the_errors_of_a_document_are_cut_at_a_hundred() -> None:
    """A 1.6 MB document of 60,000 bad measurements had 60,001 errors: an
    answer of 9 MB, and seconds of a request's time to make it."""
    bad = [{"metric": "x", "value": "x"}] * 60_000
    document = mutated(setter("runs", 0, "measurements", value=bad))

    errors = schema.validation_errors(document)

    assert len(errors) == schema.MAX_BOUNDS_ERRORS
    # the first still says what to fix first
    assert errors[0].path == "$.runs[0].measurements"
    assert errors[0].message.endswith("(60,000 items) is too long")


@pytest.mark.parametrize("document", [[], "text", None, 1, {}], ids=repr)
def test_a_document_that_is_not_an_object(fast: None, document: Any) -> None:
    assert rust_agrees(document, valid=False)
    assert schema.validation_errors(document) == python_errors(document) != []


# Where Rust is stricter than Python: Python's "$" also matches before a final
# newline. The fast path says "not sure" and jsonschema answers, so the
# result is still the Python path's. (NaN and infinity, numbers to jsonschema
# and not to jsonschema_rs, are refused by bounds_errors before either.)
PYTHON_ONLY_VALID = {
    "metric with a final newline": setter(*MEASUREMENT, "metric", value="throughput\n"),
    "uuid with a final newline": setter("uuid", value="3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10\n"),
    "parameter name with a final newline": setter(
        *MEASUREMENT, "parameters", value={"clients\n": 1}
    ),
}


@pytest.mark.parametrize("name", PYTHON_ONLY_VALID)
def test_where_rust_is_stricter_python_decides(fast: None, name: str) -> None:
    document = mutated(PYTHON_ONLY_VALID[name])
    assert rust_agrees(document, valid=False)
    assert schema.validation_errors(document) == python_errors(document) == []


class Kind(enum.Enum):
    AGENT = "agent"


# Python objects that are not what json.loads makes. jsonschema_rs would take
# some for JSON (a tuple for an array, an Enum member for its value,
# Decimal("8") for an integer) where jsonschema says "is not of type", and
# refuses others (a dict key that is not a string, which jsonschema lets pass
# "propertyNames"). The fast path leaves them all to jsonschema.
FOREIGN = {
    "samples a tuple": setter(*MEASUREMENT, "samples", value=(1.0, 2.0)),
    "runs a tuple": lambda document: document.update(runs=tuple(document["runs"])),
    "kind an Enum member": setter("source", "kind", value=Kind.AGENT),
    "cores a Decimal": setter(*HARDWARE, "cores", value=decimal.Decimal("8")),
}


@pytest.mark.parametrize("name", FOREIGN)
def test_python_objects_rust_would_accept_take_the_python_path(fast: None, name: str) -> None:
    document = mutated(FOREIGN[name])
    assert not schema._plain_json(document)
    assert rust_agrees(document, valid=True)
    expected = python_errors(document)
    assert expected != []
    assert schema.validation_errors(document) == expected


def test_a_key_that_is_not_a_string_takes_the_python_path(fast: None) -> None:
    document = mutated(setter(*MEASUREMENT, "parameters", value={1: 1}))
    assert not schema._plain_json(document)
    assert schema.validation_errors(document) == python_errors(document) == []


def test_a_valid_document_does_not_reach_jsonschema_on_the_fast_path(
    fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema._fast_validator()  # compiled before _validator goes away

    def no_jsonschema() -> None:
        raise AssertionError("jsonschema was used for a valid document")

    monkeypatch.setattr(schema, "_validator", no_jsonschema)
    assert schema.validation_errors(load(EXAMPLE)) == []


# ------------------------------------------------------------------ formats


def test_date_time_is_checked_as_the_python_path_checks_it(fast: None) -> None:
    """jsonschema checks "date-time" only with rfc3339-validator installed; the
    fast path follows whatever the Python validator's format checker does."""
    checked = "date-time" in schema._validator().format_checker.checkers
    document = mutated(setter(*RUN, "started_at", value="yesterday"))
    errors = schema.validation_errors(document)
    assert errors == python_errors(document)
    assert [error.path for error in errors] == (["$.runs[0].started_at"] if checked else [])


def test_a_date_time_checker_if_installed_is_used_by_both_paths(
    fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if rfc3339-validator were installed: the fast path must reject what
    the Python path's checker rejects, and with the same error."""
    checker = jsonschema.FormatChecker()
    checker.checks("date-time")(lambda value: schema.parse_time(value) is not None)
    cls = jsonschema.Draft202012Validator
    strict = cls(schema.submission_schema(), format_checker=checker)
    monkeypatch.setattr(schema, "_validator", lambda: strict)
    schema._fast_validator.cache_clear()
    try:
        good = load(EXAMPLE)
        bad = mutated(setter(*RUN, "ended_at", value="yesterday"))
        assert schema.validation_errors(good) == python_errors(good) == []
        assert [error.as_dict() for error in schema.validation_errors(bad)] == [
            {"path": "$.runs[0].ended_at", "message": "'yesterday' is not a 'date-time'"}
        ]
        assert schema.validation_errors(bad) == python_errors(bad)
        assert rust_agrees(bad, valid=False)
        assert rust_agrees(good, valid=True)
    finally:
        schema._fast_validator.cache_clear()


# ------------------------------------------------------------------ bounds in one walk


def nested(depth: int) -> Any:
    """A value whose innermost list is ``depth`` containers deep."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


# A parameter's value sits 5 containers deep ($.runs[0].measurements[0].parameters.clients):
# lists inside it reach MAX_DEPTH (16) with 11 of them.
PARAMETER = (*MEASUREMENT, "parameters", "clients")
OUT_OF_BOUNDS = {
    "value NaN": setter(*MEASUREMENT, "value", value=float("nan")),
    "sample -infinity": setter(*MEASUREMENT, "samples", value=[1.0, float("-inf")]),
    "ram 2**63": setter(*HARDWARE, "ram_bytes", value=2**63),
    "ram -2**63 - 1": setter(*HARDWARE, "ram_bytes", value=-(2**63) - 1),
    "an integer of 30 digits as loads leaves it": setter(
        *HARDWARE, "ram_bytes", value=schema.OversizedInteger("9" * 30)
    ),
    "NUL in text": setter(*HARDWARE, "cpu", value="Xeon\x00"),
    "NUL in a key": setter(*MEASUREMENT, "parameters", value={"clients\x00": 1}),
    "surrogate in text": setter("source", "command", value="run \ud800"),
    "surrogate in non-ASCII text": setter("source", "command", value="é \udfff"),
    "surrogate in a key": setter(*MEASUREMENT, "parameters", value={"c\udc00": 1}),
    "nested to MAX_DEPTH": setter(*PARAMETER, value=nested(11)),
    "objects nested to MAX_DEPTH": setter(
        *PARAMETER, value=json.loads('{"a":' * 11 + "1" + "}" * 11)
    ),
}
WITHIN_BOUNDS = {
    "nested one short of MAX_DEPTH": setter(*PARAMETER, value=nested(10)),
    "ram -2**63 and 2**63 - 1": both(
        setter(*HARDWARE, "ram_bytes", value=-(2**63)),
        setter(*HARDWARE, "cores", value=2**63 - 1),
    ),
    "astral and accented text": setter(*HARDWARE, "cpu", value="é \U0001f600"),
    "a non-ASCII key": setter(*MEASUREMENT, "parameters", value={"clïents": 1}),
}


@pytest.mark.parametrize("name", OUT_OF_BOUNDS)
def test_nothing_out_of_bounds_passes_the_walk_without_paths(name: str) -> None:
    document = mutated(OUT_OF_BOUNDS[name])
    assert not schema._plain_within_bounds(document)
    errors = schema.bounds_errors(document)
    assert errors != []
    assert errors == schema._bounds_walk(document) == schema.validation_errors(document)


@pytest.mark.parametrize("name", [*WITHIN_BOUNDS, *VALID_MUTATIONS])
def test_plain_json_within_bounds_is_known_in_one_walk(name: str) -> None:
    document = mutated({**WITHIN_BOUNDS, **VALID_MUTATIONS}[name])
    assert schema._plain_within_bounds(document)
    assert schema._bounds_walk(document) == schema.bounds_errors(document) == []
    assert schema._plain_json(document)


@pytest.mark.parametrize("name", [*FOREIGN, "a key that is not a string"])
def test_what_json_loads_does_not_make_is_left_to_the_two_walks(name: str) -> None:
    foreign = {
        **FOREIGN,
        "a key that is not a string": setter(*MEASUREMENT, "parameters", value={1: 1}),
    }
    document = mutated(foreign[name])
    assert not schema._plain_within_bounds(document)
    assert schema.bounds_errors(document) == schema._bounds_walk(document)


@pytest.mark.parametrize("document", [[], "text", None, 1, float("nan"), "\x00"], ids=repr)
def test_a_value_that_is_not_an_object_is_left_to_the_walk(document: Any) -> None:
    assert not schema._plain_within_bounds(document)
    assert schema.bounds_errors(document) == schema._bounds_walk(document)


def test_the_example_is_known_plain_and_within_bounds_in_one_walk() -> None:
    assert schema._plain_within_bounds(load(EXAMPLE))


@pytest.mark.parametrize(
    ("value", "samples", "expected"),
    [
        (5, [1, 10], []),
        (5.5, [], []),
        (11, [0.5, 3], [("value", "11 is out of range for m (from 1 to 10)"),
                        ("samples[0]", "0.5 is out of range for m (from 1 to 10)")]),
        (5, [2, 10.5], [("samples[1]", "10.5 is out of range for m (from 1 to 10)")]),
        (0, [], [("value", "0 is out of range for m (from 1 to 10)")]),
    ],
)  # fmt: skip
def test_a_catalog_range_names_each_number_outside_it(value, samples, expected) -> None:
    definition = {"name": "m", "minimum": 1, "maximum": 10}
    errors = catalog._range_errors(definition, {"value": value, "samples": samples}, "$.m")
    assert [(e.path, e.message) for e in errors] == [(f"$.m.{w}", m) for w, m in expected]
    low_only = {"name": "m", "minimum": 1}
    assert catalog._range_errors(low_only, {"value": 10**6}, "$.m") == []
    high_only = {"name": "m", "maximum": 10}
    assert [e.message for e in catalog._range_errors(high_only, {"value": 11}, "$.m")] == [
        "11 is out of range for m (from -∞ to 10)"
    ]


@pytest.mark.parametrize(
    ("field", "value", "valid"),
    [
        ("started_at", "2026-11-20T10:00:07", False),
        ("ended_at", "2026-11-20 10:04:13.250", False),
        ("ended_at", "2026-11-20", False),  # a date alone is midnight, without an offset
        ("started_at", "2026-11-20T10:00:07Z", True),
        ("ended_at", "2026-11-20T16:34:13.25+05:30", True),
        ("started_at", "2026-11-20T00:59:59-03:00", True),
    ],
)
def test_a_run_time_without_a_utc_offset_is_refused_naming_the_field(
    field: str, value: str, valid: bool
) -> None:
    """Taken as UTC, a local time would be stored hours off; the document
    must say which time it means."""
    document = load(EXAMPLE)
    document["runs"][0].pop("started_at", None)
    document["runs"][0].pop("ended_at", None)
    document["runs"][0][field] = value

    errors = [e for e in schema.catalog_errors(document) if e.path.endswith("_at")]

    if valid:
        assert errors == []
    else:
        assert [e.path for e in errors] == [f"$.runs[0].{field}"]
        assert errors[0].message.startswith(f"{value!r} has no UTC offset; add one")
