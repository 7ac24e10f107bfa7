"""What gunicorn answers itself, before Django sees the request: in the
API's JSON error shape, and a 4xx for every request a client got wrong."""

from __future__ import annotations

import json
import socket

import pytest

from tests.live import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

GET = b"GET /api/v1/benchmarks/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@pytest.fixture(scope="module")
def server(django_db_setup) -> int:
    with gunicorn(config=True) as port:
        yield port


def exchange(port: int, request: bytes) -> tuple[bytes, bytes]:
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    client.sendall(request)
    received = b""
    while part := client.recv(65536):
        received += part
    client.close()
    head, _, body = received.partition(b"\r\n\r\n")
    return head, body


@pytest.mark.parametrize(
    ("request_bytes", "status", "code", "message"),
    [
        (
            b"GET /api/v1/runs/?q=" + b"a" * 5000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            414,
            "too_large",
            "Request Line is too large (5029 > 4094)",
        ),
        (
            GET + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n",
            431,
            "too_large",
            "Error parsing headers: 'limit request headers fields'",
        ),
        (GET + b"Bad Header\r\n\r\n", 400, "bad_request", "Invalid HTTP Header: 'Bad Header'"),
        # gunicorn answered these two with a 5xx: 501 and 500
        (
            GET + b"Transfer-Encoding: foo, chunked\r\n\r\n0\r\n\r\n",
            400,
            "bad_request",
            "Unsupported transfer coding: 'foo, chunked'",
        ),
        (
            GET + b"SCRIPT_NAME: /elsewhere\r\n\r\n",
            400,
            "bad_request",
            "Configuration problem: Request path '/api/v1/benchmarks/' "
            "does not start with SCRIPT_NAME '/elsewhere'",
        ),
    ],
    ids=["request line", "headers", "header", "transfer coding", "script name"],
)
def test_a_request_gunicorn_refuses_is_answered_in_the_apis_shape(
    server, request_bytes, status, code, message
):
    head, body = exchange(server, request_bytes)

    assert head.split(b"\r\n")[0].startswith(b"HTTP/1.1 %d " % status), head
    assert b"\r\nContent-Type: application/json\r\n" in head + b"\r\n"
    assert json.loads(body) == {"error": {"code": code, "message": message}}


def test_a_request_it_can_parse_still_reaches_the_site(server):
    head, _ = exchange(server, GET + b"Connection: close\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
