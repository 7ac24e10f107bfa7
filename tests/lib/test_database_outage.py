"""While PostgreSQL does not answer, BenchHub says "try again" (503 with
Retry-After), in the API's error shape under /api/ and as a page elsewhere,
never a 500. gunicorn with the production settings, its DATABASE_URL on a
loopback port where nothing listens: what a web process sees during a
database restart or fail-over."""

from __future__ import annotations

import http.client
import json

import pytest

from tests.live import free_port, gunicorn


@pytest.fixture(scope="module")
def port() -> int:
    nowhere = f"postgres://postgres@127.0.0.1:{free_port()}/benchhub"
    # The OpenAPI document is built without the database: it tells when
    # gunicorn is up.
    with gunicorn(env={"DATABASE_URL": nowhere}, ready_path="/api/schema/") as port:
        yield port


def request(port: int, method: str, path: str, body: bytes | None = None, **headers: str):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, dict(response.getheaders()), response.read()


COMPARISON = (
    "/api/v1/comparisons/?benchmark=select-update&metric=throughput&x=param.clients&series=engine"
)


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/api/v1/submissions/", {}),
        ("GET", "/api/v1/measurements/?engine=postgresql", {}),
        ("GET", COMPARISON, {}),
        # Streamed, but its query runs before the first byte.
        ("GET", "/api/v1/measurements/export.csv?engine=postgresql&cores=24", {}),
        ("GET", "/api/v1/measurements/export.csv", {}),
        ("GET", "/api/v1/measurements/export.jsonl?cores=24", {}),
        # The token is checked against the database before anything else.
        ("GET", "/api/v1/submissions/", {"Authorization": "Token some-token"}),
        ("POST", "/api/v1/submissions/", {"Authorization": "Token some-token",
                                           "Content-Type": "application/json"}),
    ],
)  # fmt: skip
def test_api_requests_answer_503_in_the_error_shape_with_retry_after(port, method, path, headers):
    body = b'{"schema_version": 1}' if method == "POST" else None
    status, answer_headers, raw = request(port, method, path, body, **headers)

    assert status == 503, raw[:300]
    assert answer_headers["Retry-After"] == "5"
    error = json.loads(raw)["error"]
    assert error["code"] == "unavailable"
    assert "database is not answering" in error["message"]
    assert "sent again" in error["message"]


@pytest.mark.parametrize("path", ["/", "/results/?engine=postgresql", "/runs/1/", "/compare/"])
def test_pages_answer_a_503_page_with_retry_after(port, path):
    status, headers, raw = request(port, "GET", path)

    assert status == 503, raw[:300]
    assert headers["Retry-After"] == "5"
    assert headers["Content-Type"].startswith("text/html")
    assert b"BenchHub is briefly unavailable" in raw


def test_healthz_says_the_database_is_the_problem(port):
    status, _, raw = request(port, "GET", "/healthz")

    assert status == 503
    assert json.loads(raw)["checks"]["postgresql"]["ok"] is False
