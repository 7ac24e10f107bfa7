"""The WSGI application gunicorn runs, called as gunicorn calls it."""

from __future__ import annotations

import json

import pytest

from tests.lib import wsgi_calls


def call(path: str, content_type: str, **headers: str) -> tuple[str, dict, bytes]:
    return wsgi_calls.call("POST", path, content_type=content_type, body=b"{}", **headers)


@pytest.mark.parametrize("path", ["/api/v1/submissions/", "/api/v1/imports/", "/api/v1/nope/"])
def test_a_content_type_django_cannot_parse_is_no_500(db, wsgi_in_the_test_transaction, path):
    status, headers, body = call(path, "application/json; charset*=bogus''utf-8")

    assert not status.startswith("5"), body[:300]
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["error"]["code"] in ("not_authenticated", "not_found")


def test_with_a_token_such_an_upload_is_a_415(db, wsgi_in_the_test_transaction, alice):
    from benchhub.accounts.services import api_token_create

    _, token = api_token_create(user=alice, name="wsgi")

    status, _, body = call(
        "/api/v1/submissions/",
        "application/json; charset*=bogus''utf-8",
        HTTP_AUTHORIZATION=f"Token {token}",
    )

    assert status.startswith("415"), body
    assert json.loads(body)["error"]["code"] == "unsupported_media_type"
