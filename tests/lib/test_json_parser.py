"""The API's JSON parser (benchhub.lib.jsonbody.JsonParser) where DRF's
JSONParser, which it stands in for, answers otherwise: each test names the
body and what DRF's parser made of it."""

from __future__ import annotations

import json

URL = "/api/v1/imports/"  # a DRF view reading request.data


def test_a_body_nested_deeper_than_python_reads_is_a_400(alice_api):
    """DRF's JSONParser catches ValueError only: json's RecursionError on
    "[[[[…" went up as a 500."""
    response = alice_api.generic("POST", URL, "[" * 50_000, content_type="application/json")

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], error["message"]) == (
        "malformed_json",
        "The body nests JSON too deeply to read",
    )


def test_a_body_in_another_charset_is_a_415(alice_api):
    """DRF's parser decodes by the charset given, so Latin-1 text was
    taken; JSON is UTF-8 text (RFC 8259)."""
    body = json.dumps({"tool": "pgbench", "output": "tps = 8.5 ± 0.3"}, ensure_ascii=False)

    response = alice_api.generic(
        "POST", URL, body.encode("latin-1"), content_type="application/json; charset=iso-8859-1"
    )

    assert response.status_code == 415, response.content
    assert response.json()["error"]["message"] == (
        "JSON is UTF-8 text; charset=iso-8859-1 is not accepted"
    )


def test_a_body_with_a_byte_order_mark_is_told_to_drop_it(alice_api):
    """DRF's parser said "JSON parse error - Unexpected UTF-8 BOM (decode
    using utf-8-sig)", advice about Python for a client that is not."""
    body = b"\xef\xbb\xbf" + json.dumps({"tool": "sysbench", "output": "x"}).encode()

    response = alice_api.generic("POST", URL, body, content_type="application/json")

    assert response.status_code == 400, response.content
    assert "starts with a byte order mark (EF BB BF)" in response.json()["error"]["message"]
