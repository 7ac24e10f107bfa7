"""The hostile table: uploads made to break the server.

Each row is a body an attacker (or a broken client) may send. Every one
must answer its 4xx in the API's error shape, naming the JSON path where
there is one, and leave every table exactly as it was: nothing half-stored,
no 500, no HTML.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.test import override_settings
from rest_framework.test import APIClient

from benchhub.results.models import Submission
from tests.factories import example_document

URL = "/api/v1/submissions/"
MEASUREMENT = ("runs", 0, "measurements", 0)
MARKER = "@@hostile@@"


def row_counts() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for model in apps.get_models()}


def with_literal(keys: tuple[Any, ...], literal: str) -> bytes:
    """The example document as JSON text with the value at ``keys`` replaced
    by ``literal`` as written (NaN, 1e400, a 5,001-digit number…)."""
    document = example_document()
    target = document
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = MARKER
    return json.dumps(document, ensure_ascii=False).replace(json.dumps(MARKER), literal).encode()


def with_value(keys: tuple[Any, ...], value: Any) -> bytes:
    return with_literal(keys, json.dumps(value, ensure_ascii=False))


def assert_error_shape(response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    if code:
        assert error["code"] == code, error
    return error


def post_chunked(client: APIClient, body: bytes):
    """A body sent with Transfer-Encoding: chunked, as gunicorn hands it to
    Django: no Content-Length, the de-chunked bytes in wsgi.input."""
    return client.generic(
        "POST",
        URL,
        data=b"",
        content_type="application/json",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(body)},
    )


@dataclass(frozen=True)
class Case:
    body: bytes
    status: int
    code: str
    path: str | None = None  # the JSON path the error must name
    content_type: str = "application/json"


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


TINY_RUN = {"benchmark": "select-update", "measurements": [{"metric": "throughput", "value": 1}]}

HOSTILE: dict[str, Case] = {
    # numbers PostgreSQL cannot store, or that break arithmetic
    "NaN value": Case(with_literal((*MEASUREMENT, "value"), "NaN"), 400, "invalid_document",
                      "$.runs[0].measurements[0].value"),
    "Infinity value": Case(with_literal((*MEASUREMENT, "value"), "Infinity"), 400,
                           "invalid_document", "$.runs[0].measurements[0].value"),
    "-Infinity sample": Case(with_literal((*MEASUREMENT, "samples"), "[1, -Infinity]"), 400,
                             "invalid_document", "$.runs[0].measurements[0].samples[1]"),
    "1e400 value": Case(with_literal((*MEASUREMENT, "value"), "1e400"), 400,
                        "invalid_document", "$.runs[0].measurements[0].value"),
    "-1e400 in a parameter": Case(with_literal(("runs", 0, "parameters", "rows"), "-1e400"), 400,
                                  "invalid_document", "$.runs[0].parameters.rows"),
    "NaN server setting": Case(
        with_literal(("environment", "database", "settings", "fsync"), "NaN"), 400,
        "invalid_document", "$.environment.database.settings.fsync"),
    "value 1e19 beyond the schema's 1e18": Case(
        with_literal((*MEASUREMENT, "value"), "1e19"), 400, "invalid_document",
        "$.runs[0].measurements[0].value"),
    # integers
    "ram_bytes 2**64": Case(with_value(("environment", "hardware", "ram_bytes"), 2**64), 400,
                            "invalid_document", "$.environment.hardware.ram_bytes"),
    "ram_bytes 2**63 as a float": Case(
        with_literal(("environment", "hardware", "ram_bytes"), "9.3e18"), 400,
        "invalid_document", "$.environment.hardware.ram_bytes"),
    "ram_bytes of 5,001 digits": Case(
        with_literal(("environment", "hardware", "ram_bytes"), "9" * 5001), 400,
        "invalid_document", "$.environment.hardware.ram_bytes"),
    "value of 5,001 digits": Case(with_literal((*MEASUREMENT, "value"), "-" + "7" * 5001), 400,
                                  "invalid_document", "$.runs[0].measurements[0].value"),
    "parameter 2**70": Case(with_value((*MEASUREMENT, "parameters", "clients"), 2**70), 400,
                            "invalid_document", "$.runs[0].measurements[0].parameters.clients"),
    "cores 2**31": Case(with_value(("environment", "hardware", "cores"), 2**31), 400,
                        "invalid_document", "$.environment.hardware.cores"),
    # the catalog's ranges
    "throughput -1": Case(with_value((*MEASUREMENT, "value"), -1), 400, "invalid_document",
                          "$.runs[0].measurements[0].value"),
    "negative sample": Case(with_value((*MEASUREMENT, "samples"), [1.0, -0.5]), 400,
                            "invalid_document", "$.runs[0].measurements[0].samples[1]"),
    # text
    "NUL in the CPU name": Case(with_value(("environment", "hardware", "cpu"), "Xeon\x00"), 400,
                                "invalid_document", "$.environment.hardware.cpu"),
    "NUL in a run note": Case(with_value(("runs", 0, "note"), "\x00"), 400, "invalid_document",
                              "$.runs[0].note"),
    "NUL in a settings key": Case(
        with_value(("environment", "database", "settings"), {"fsync\x00": "on"}), 400,
        "invalid_document", "$.environment.database.settings"),
    "unpaired surrogate in the command": Case(
        with_literal(("source", "command"), '"run \\ud800"'), 400, "invalid_document",
        "$.source.command"),
    "NUL in the uuid": Case(with_value(("uuid",), "3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10\x00"),
                            400, "invalid_document", "$.uuid"),
    # nesting
    "10,000-deep arrays as the body": Case(deep(10_000), 400, "malformed_json"),
    "10,000-deep arrays in a field": Case(
        with_literal(("runs", 0, "note"), deep(10_000).decode()), 400, "malformed_json"),
    "40-deep arrays in a parameter": Case(
        with_literal((*MEASUREMENT, "parameters", "clients"), deep(40).decode()), 400,
        "invalid_document", None),
    "40-deep objects in the environment": Case(
        with_literal(("environment", "os"), '{"a":' * 40 + "1" + "}" * 40), 400,
        "invalid_document", None),
    # times
    "offset -19:00": Case(with_value(("runs", 0, "started_at"), "2026-11-20T10:00:00-19:00"),
                          400, "invalid_document", "$.runs[0].started_at"),
    "offset +14:30": Case(with_value(("runs", 0, "ended_at"), "2026-11-20T10:04:12+14:30"),
                          400, "invalid_document", "$.runs[0].ended_at"),
    "offset of seconds": Case(
        with_value(("runs", 0, "started_at"), "2026-11-20T10:00:00+05:00:30"), 400,
        "invalid_document", "$.runs[0].started_at"),
    "year 1 with +05:00 (1 BC in UTC)": Case(
        with_value(("runs", 0, "started_at"), "0001-01-01T00:00:00+05:00"), 400,
        "invalid_document", "$.runs[0].started_at"),
    "year 9999 with -05:00 (year 10000 in UTC)": Case(
        with_value(("runs", 0, "ended_at"), "9999-12-31T23:00:00-05:00"), 400,
        "invalid_document", "$.runs[0].ended_at"),
    "not a time": Case(with_value(("runs", 0, "started_at"), "yesterday"), 400,
                       "invalid_document", "$.runs[0].started_at"),
    # not JSON, or not UTF-8
    "truncated JSON": Case(with_value(("uuid",), "x")[:-40], 400, "malformed_json"),
    "empty body": Case(b"", 400, "malformed_json"),
    "Latin-1 bytes": Case(with_value(("environment", "hardware", "cpu"), "Cæsar")
                          .replace("æ".encode(), "æ".encode("latin-1")), 400, "malformed_json"),
    "UTF-16 body": Case(json.dumps(example_document()).encode("utf-16"), 400, "malformed_json"),
    "UTF-8 with a byte order mark": Case(b"\xef\xbb\xbf" + json.dumps(example_document()).encode(),
                                         400, "malformed_json"),
    "a lone NaN": Case(b"NaN", 400, "invalid_document", "$"),
    "JSON array": Case(b"[]", 400, "invalid_document", "$"),
    "JSON string": Case(b'"<script>alert(1)</script>"', 400, "invalid_document", "$"),
    "JSON null": Case(b"null", 400, "invalid_document", "$"),
    # media types
    "no Content-Type": Case(json.dumps(example_document()).encode(), 415,
                            "unsupported_media_type", content_type=""),
    "text/plain": Case(json.dumps(example_document()).encode(), 415, "unsupported_media_type",
                       content_type="text/plain"),
    "charset=utf-16": Case(json.dumps(example_document()).encode("utf-16"), 415,
                           "unsupported_media_type",
                           content_type="application/json; charset=utf-16"),
    "charset=latin-1": Case(json.dumps(example_document()).encode(), 415,
                            "unsupported_media_type",
                            content_type="application/json; charset=iso-8859-1"),
    "form body": Case(b"schema=1&uuid=x", 415, "unsupported_media_type",
                      content_type="application/x-www-form-urlencoded"),
    "application/json-patch+json": Case(b"[]", 415, "unsupported_media_type",
                                        content_type="application/json-patch+json"),
    # markup and SQL where the schema allows neither
    "SQL in the benchmark name": Case(
        with_value(("runs", 0, "benchmark"), "select-update'; DROP TABLE results_run; --"), 400,
        "invalid_document", "$.runs[0].benchmark"),
    "SQL in the uuid": Case(with_value(("uuid",), "' OR 1=1 --"), 400, "invalid_document",
                            "$.uuid"),
    "markup as a metric": Case(with_value((*MEASUREMENT, "metric"), "<img src=x onerror=1>"),
                               400, "invalid_document", "$.runs[0].measurements[0].metric"),
    "markup as a parameter name": Case(
        with_value((*MEASUREMENT, "parameters"), {"<b>clients</b>": 1}), 400,
        "invalid_document", "$.runs[0].measurements[0].parameters"),
    "SQL as an OS family": Case(with_value(("environment", "os", "family"), "linux' --"), 400,
                                "invalid_document", "$.environment.os.family"),
    "unknown benchmark": Case(with_value(("runs", 0, "benchmark"), "rm-rf"), 400,
                              "invalid_document", "$.runs[0].benchmark"),
    # schema versions
    "schema 2": Case(with_value(("schema",), 2), 400, "invalid_document", "$.schema"),
    "schema 0": Case(with_value(("schema",), 0), 400, "invalid_document", "$.schema"),
    "schema '1'": Case(with_value(("schema",), "1"), 400, "invalid_document", "$.schema"),
    "schema 1.5": Case(with_value(("schema",), 1.5), 400, "invalid_document", "$.schema"),
    "schema null": Case(with_value(("schema",), None), 400, "invalid_document", "$.schema"),
    "schema 1e400": Case(with_literal(("schema",), "1e400"), 400, "invalid_document", "$.schema"),
    # sizes
    "501 runs": Case(with_value(("runs",), [TINY_RUN] * 501), 400, "invalid_document", "$.runs"),
}  # fmt: skip


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_upload_is_refused_in_the_error_shape_and_stores_nothing(alice_api, name):
    case = HOSTILE[name]
    before = row_counts()

    response = alice_api.generic("POST", URL, data=case.body, content_type=case.content_type)

    error = assert_error_shape(response, case.status, case.code)
    if case.path:
        assert case.path in [detail["path"] for detail in error.get("details", [])], error
    assert row_counts() == before


def test_a_50_megabyte_body_is_refused_before_it_is_read(alice_api):
    before = row_counts()
    body = b'{"schema": 1, "note": "' + b"x" * (50 * 1024 * 1024) + b'"}'

    response = alice_api.generic("POST", URL, data=body, content_type="application/json")

    assert_error_shape(response, 413, "too_large")
    assert row_counts() == before


def test_a_50_megabyte_chunked_body_is_refused_without_reading_it_all(alice_api):
    """No Content-Length to refuse it by: the server reads up to its limit and stops."""
    before = row_counts()
    body = b"[" + b"1," * (25 * 1024 * 1024) + b"1]"

    response = post_chunked(alice_api, body)

    assert_error_shape(response, 413, "too_large")
    assert row_counts() == before


def test_a_content_length_shorter_than_the_body_reads_as_truncated_json(alice_api):
    body = json.dumps(example_document()).encode()

    response = alice_api.generic(
        "POST", URL, data=body, content_type="application/json", CONTENT_LENGTH="100"
    )

    assert_error_shape(response, 400, "malformed_json")
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("encoded", "message"),
    [
        (
            b"\xef\xbb\xbf" + json.dumps(example_document()).encode(),
            "The body starts with a byte order mark (EF BB BF), which JSON text must not have:"
            " send it without those 3 bytes (save the file as UTF-8 without BOM)",
        ),
        (
            json.dumps(example_document()).encode("utf-16"),  # the mark, little-endian
            "The body is UTF-16 text (it starts with the byte order mark FF FE);"
            " JSON is sent as UTF-8, without a byte order mark",
        ),
        (
            json.dumps(example_document()).encode("utf-32"),
            "The body is UTF-32 text (it starts with the byte order mark FF FE 00 00);"
            " JSON is sent as UTF-8, without a byte order mark",
        ),
    ],
)
def test_a_byte_order_mark_is_named_with_what_to_send_instead(alice_api, encoded, message):
    """It was told in Python's words: "Unexpected UTF-8 BOM (decode using
    utf-8-sig)", or "not UTF-8 text (byte 0)" for UTF-16."""
    before = row_counts()

    response = alice_api.generic("POST", URL, data=encoded, content_type="application/json")

    assert assert_error_shape(response, 400, "malformed_json")["message"] == message
    assert row_counts() == before


def test_every_error_of_a_document_with_thousands_is_a_400(alice_api):
    document = example_document()
    run = document["runs"][0]
    run["measurements"] = [
        {"metric": "throughput", "parameters": {"clients": i}, "value": float("nan")}
        for i in range(5000)
    ]
    body = json.dumps(document).encode()  # Python writes NaN

    response = alice_api.generic("POST", URL, data=body, content_type="application/json")

    error = assert_error_shape(response, 400, "invalid_document")
    assert 0 < len(error["details"]) <= 100  # the first hundred, not a megabyte of errors
    assert Submission.objects.count() == 0


# ------------------------------------------------------------------ wrong types


WRONG_VALUES: dict[str, Any] = {
    "null": None,
    "true": True,
    "text": "<script>alert(1)</script>",
    "fraction": 1.5,
    "negative": -7,
    "array": [],
    "object": {},
}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}[type(value)]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if path:
        yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value[:2]):  # two of each list are enough
            yield from _paths(child, (*path, index))


def _allowed_anyway(path: tuple[Any, ...], wrong: Any) -> bool:
    """Places where the schema accepts more than one type."""
    scalar = _json_type(wrong) in ("string", "number", "boolean")
    if len(path) >= 2 and path[-2] in ("parameters", "settings"):
        # parameter and setting values may be text, numbers or booleans; -7 is
        # still a valid number, 1.5 too, except where the catalog objects
        return scalar
    if path[-1] == "mount_options":
        return _json_type(wrong) in ("string", "array")
    return path[-1] in ("note", "command", "tool", "tool_version") and isinstance(wrong, str)


def wrong_type_cases() -> Iterator[tuple[tuple[Any, ...], str]]:
    document = example_document()
    for path in _paths(document):
        target = document
        for key in path:
            target = target[key]
        for name, wrong in WRONG_VALUES.items():
            same_type = _json_type(wrong) == _json_type(target)
            if not same_type and not _allowed_anyway(path, wrong):
                yield path, name


def test_a_wrong_type_in_any_field_is_a_400_naming_it(alice_api):
    """Every field of the example, each replaced by each value of another JSON type."""
    before = row_counts()
    cases = list(wrong_type_cases())
    unexpected = []
    for path, name in cases:
        response = alice_api.generic(
            "POST", URL, data=with_value(path, WRONG_VALUES[name]), content_type="application/json"
        )
        if response.status_code != 400 or response.json()["error"]["code"] != "invalid_document":
            unexpected.append((path, name, response.status_code, response.content[:200]))
    assert unexpected == []
    assert len(cases) > 300
    assert row_counts() == before


# ------------------------------------------------------------------ what is only data


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert('x')</script>",
        "'; DROP TABLE results_submission; --",
        "Robert'); DELETE FROM auth_user WHERE ('1'='1",
        "{{ settings.SECRET_KEY }} {% debug %}",
        '=HYPERLINK("http://evil.invalid")',
        "\u202eevil\u202c ﷽ \U0001f600",
    ],
)
def test_markup_and_sql_in_free_text_are_stored_as_text(alice_api, text):
    document = example_document()
    document["environment"]["hardware"]["cpu"] = text
    document["runs"][0]["note"] = text
    before = row_counts()

    response = alice_api.post(URL, data=json.dumps(document), content_type="application/json")

    assert response.status_code == 201, response.content
    submission = Submission.objects.get(uuid=document["uuid"])
    run = submission.runs.get()
    assert (run.note, run.hardware.cpu_raw) == (text, text)
    assert row_counts()["results.Submission"] == before["results.Submission"] + 1
    assert row_counts()["auth.User"] == before["auth.User"]


@pytest.mark.parametrize(
    "content_type",
    ["Application/JSON", "application/json; charset=UTF-8", "APPLICATION/JSON;CHARSET=utf8"],
)
def test_media_types_and_charsets_compare_case_insensitively(alice_api, content_type):
    body = json.dumps(example_document()).encode()

    response = alice_api.generic("POST", URL, data=body, content_type=content_type)

    assert response.status_code == 201, response.content


def test_the_bounds_still_take_the_largest_values_postgresql_stores(alice_api):
    document = example_document()
    document["environment"]["hardware"]["ram_bytes"] = 2**63 - 1
    document["runs"][0]["measurements"][0]["value"] = 1e18
    document["runs"][0]["parameters"]["rows"] = -(2**63)
    document["runs"][0]["started_at"] = "1950-01-01T14:00:00+14:00"
    document["runs"][0]["ended_at"] = "2199-12-31T09:59:59-14:00"

    response = alice_api.post(URL, data=json.dumps(document), content_type="application/json")
    assert response.status_code == 201, response.content

    run = alice_api.get(response.json()["runs"][0]["url"])
    assert run.status_code == 200
    assert run.json()["hardware"]["ram_bytes"] == 2**63 - 1
    assert run.json()["started_at"] == "1950-01-01T00:00:00Z"


def test_a_document_of_many_errors_gets_the_first_hundred_each_quoting_little(alice_api):
    """60,000 bad measurements in 1.6 MB: the answer was 9 MB (every error,
    the first quoting the whole list, each message twice) and took seconds."""
    document = example_document()
    document["environment"]["hardware"]["cpu"] = "y" * 100_000
    document["runs"][0]["measurements"] = [{"metric": "x", "value": "x"}] * 60_000
    body = json.dumps(document, separators=(",", ":")).encode()
    before = row_counts()

    response = alice_api.generic("POST", URL, data=body, content_type="application/json")

    error = assert_error_shape(response, 400, "invalid_document")
    assert error["message"].startswith("Nothing was stored: the document has 100 errors; first: ")
    assert len(error["details"]) == 100
    assert max(len(detail["message"]) for detail in error["details"]) < 200
    assert len(response.content) < 20_000
    assert row_counts() == before


@pytest.mark.parametrize("url", [URL, "/api/v1/imports/"])
@pytest.mark.parametrize(
    ("coding", "compress"),
    [
        ("gzip", gzip.compress),  # was "The body is not UTF-8 text (byte 1)"
        ("deflate, gzip", gzip.compress),
        ("br", lambda body: body),  # a plain body the header says is not: was stored
    ],
)
def test_a_body_with_a_content_coding_is_a_415_naming_it(alice_api, url, coding, compress):
    """Bodies are read as sent, never decompressed: RFC 9110 answers a coding
    the server does not take with 415 and the codings it does take."""
    body = compress(json.dumps(example_document()).encode())
    before = row_counts()

    response = alice_api.generic(
        "POST", url, data=body, content_type="application/json", HTTP_CONTENT_ENCODING=coding
    )

    error = assert_error_shape(response, 415, "unsupported_media_type")
    assert f"Content-Encoding {coding!r} is not accepted" in error["message"]
    assert "uncompressed" in error["message"]
    assert response["Accept-Encoding"] == "identity"
    assert row_counts() == before


def test_a_body_said_to_be_identity_coded_is_read(alice_api):
    body = json.dumps(example_document()).encode()

    response = alice_api.generic(
        "POST", URL, data=body, content_type="application/json", HTTP_CONTENT_ENCODING="Identity"
    )

    assert response.status_code == 201, response.content


@override_settings(BENCHHUB_MAX_UPLOAD_BYTES=2_000)
def test_a_chunked_body_over_the_limit_is_a_413(alice_api):
    response = post_chunked(alice_api, json.dumps(example_document()).encode())

    assert_error_shape(response, 413, "too_large")
