"""The WSGI application gunicorn runs, called as gunicorn calls it."""

from __future__ import annotations

import io
import json

import pytest

from benchhub.wsgi import application


def call(
    path: str, content_type: str, body: bytes = b"{}", **headers: str
) -> tuple[str, dict, bytes]:
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, dict(headers)

    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": content_type,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        **headers,
    }
    chunks = application(environ, start_response)
    return answer["status"], answer["headers"], b"".join(chunks)


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
