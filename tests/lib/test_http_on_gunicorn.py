"""HTTP as gunicorn speaks it: chunked uploads, media types in any letter
case, and a CSV export whose database goes away part-way."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import time

import pytest
from django.db import connection

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document
from tests.live import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(alice) -> str:
    return api_token_create(user=alice, name="live")[1]


@pytest.fixture(scope="module")
def server(django_db_setup) -> int:
    with gunicorn() as port:
        yield port


def post_chunked(port: int, token: str, body: bytes, content_type: str = "application/json"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    pieces = (body[i : i + 700] for i in range(0, len(body), 700))
    # A server may answer (413) and close before the whole body is sent; its
    # answer is already on the socket: read it, as a client should.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        conn.request(
            "POST",
            "/api/v1/submissions/",
            body=pieces,
            headers={"Authorization": f"Token {token}", "Content-Type": content_type},
            encode_chunked=True,
        )
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def test_a_chunked_upload_is_read_whole_and_stored(server, token):
    """gunicorn de-chunks; Django alone would read Content-Length (none) bytes."""
    document = example_document()

    status, body = post_chunked(server, token, json.dumps(document).encode())

    assert status == 201, body
    assert Submission.objects.get(uuid=document["uuid"]).runs.count() == 1


def test_a_chunked_upload_over_the_limit_is_a_413(server, token):
    # Far more than the socket buffers hold: the server answers 413 and closes
    # while the client is still sending, every time, as a real oversize upload.
    body = b'{"schema": 1, "note": "' + b"x" * (32 * 1024 * 1024) + b'"}'

    status, answer = post_chunked(server, token, body)

    assert status == 413
    assert answer["error"]["code"] == "too_large"


def test_media_types_compare_case_insensitively(server, token):
    body = json.dumps(example_document()).encode()

    status, answer = post_chunked(server, token, body, "Application/JSON; Charset=UTF-8")

    assert status == 201, answer


RUNS = 16  # of 4,000 rows each, about 300 bytes a row


def test_a_csv_export_whose_database_goes_away_ends_visibly_incomplete(server, bob):
    """Rows are sent while they are read: the database connection killed
    part-way leaves a last #error line and a transfer without its final chunk."""
    document = example_document()
    run = document["runs"][0]
    document["runs"] = [
        {**run, "parameters": {"rows": r}, "measurements": [
            {"metric": "throughput", "parameters": {"clients": c}, "value": float(c)}
            for c in range(4000)
        ]}
        for r in range(RUNS)
    ]  # fmt: skip
    submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    client = socket.create_connection(("127.0.0.1", server))
    client.sendall(
        b"GET /api/v1/measurements/export.csv HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Connection: close\r\n\r\n"
    )
    received = client.recv(65536)
    assert received.startswith(b"HTTP/1.1 200")
    time.sleep(0.5)  # the worker is now blocked on its socket, mid-export
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        assert cursor.fetchone()[0] >= 1
    client.settimeout(30)
    while part := client.recv(65536):
        received += part
    client.close()

    head, _, raw = received.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    body, complete = dechunk(raw)
    assert not complete  # no final chunk: any HTTP client reports the transfer as broken
    lines = body.decode().splitlines()
    assert lines[-1].startswith("#error,export failed after ")
    assert "the file is incomplete" in lines[-1]
    # Some rows, not all. Between PostgreSQL's COPY and the client, the sockets' buffers
    # hold about 10 MB: the export is larger than that.
    assert 1 < len(lines) - 1 < RUNS * 4000


def dechunk(raw: bytes) -> tuple[bytes, bool]:
    """The body of a chunked transfer, and whether its final chunk came."""
    body = b""
    while raw:
        size_line, _, raw = raw.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return body, True
        body, raw = body + raw[:size], raw[size + 2 :]
    return body, False


@pytest.mark.parametrize(
    ("framing", "problem"),
    [
        (b"zz\r\n{}\r\n0\r\n\r\n", "Invalid chunk size: b'zz'"),
        (b"2\r\n{}XX0\r\n\r\n", "Invalid chunk terminator is not '\\r\\n': b'XX'"),
        (b"10\r\n{}", "the chunked request body is broken ("),  # then the client stops sending
    ],
)
def test_a_chunked_body_with_broken_framing_is_a_400_saying_so(server, token, framing, problem):
    """gunicorn's parse error surfaced inside the site as an exception: 500."""
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    client.sendall(
        b"POST /api/v1/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Authorization: Token {token}\r\n".encode()
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + framing
    )
    client.shutdown(socket.SHUT_WR)
    received = b""
    while part := client.recv(65536):
        received += part
    client.close()

    head, _, raw = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), received
    error = json.loads(dechunk(raw)[0] if b"chunked" in head else raw)["error"]
    assert error["code"] == "malformed_request"
    assert problem in error["message"]
    assert error["message"].endswith("; nothing was read")
    assert not Submission.objects.exists()
