"""manage.py runserver, the embedded default's server (``make run``): the
project's command, its connections' writes sent at once, and chunked request
bodies read as gunicorn reads them, on a real runserver process."""

from __future__ import annotations

import contextlib
import json
import socket

import pytest
from django.core.management import get_commands, load_command_class

from benchhub.accounts.services import api_token_create
from benchhub.devserver.management.commands.runserver import DevWSGIServer
from benchhub.results.models import Submission
from tests.factories import example_document
from tests.live import runserver


def test_runserver_is_the_projects_which_still_serves_static_files():
    assert get_commands()["runserver"] == "benchhub.devserver"
    command = load_command_class("benchhub.devserver", "runserver")
    assert command.server_cls is DevWSGIServer
    options = [action.dest for action in command.create_parser("manage.py", "runserver")._actions]
    assert "use_static_handler" in options and "insecure_serving" in options


def test_an_accepted_connection_sends_without_waiting_for_acknowledgements():
    server = DevWSGIServer(("127.0.0.1", 0), None, bind_and_activate=True)
    try:
        with socket.create_connection(server.server_address, timeout=5) as client:
            # the client's own socket keeps the system default: Nagle on
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
            accepted, _ = server.get_request()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        server.server_close()


# --- chunked bodies, on a real runserver ---------------------------------------

LIMIT = 9_001  # BENCHHUB_MAX_UPLOAD_BYTES of the server under test


@pytest.fixture(scope="module")
def server(django_db_setup) -> int:
    with runserver(env={"BENCHHUB_MAX_UPLOAD_BYTES": str(LIMIT)}) as port:
        yield port


@pytest.fixture
def token(alice) -> str:
    return api_token_create(user=alice, name="runserver")[1]


def chunked(body: bytes, sizes: list[int]) -> bytes:
    """``body`` in chunks of the given sizes (the last one repeated), with a
    chunk extension on the first, as a client may send it."""
    out, at, i = [], 0, 0
    while at < len(body):
        size = sizes[min(i, len(sizes) - 1)]
        extension = b";note=first" if i == 0 else b""
        piece = body[at : at + size]
        out.append(f"{len(piece):x}".encode() + extension + b"\r\n" + piece + b"\r\n")
        at, i = at + size, i + 1
    # Joined once: adding each chunk to one growing bytes copied 50 MB hundreds of times.
    return b"".join(out) + b"0\r\n\r\n"


def upload_head(token: str, extra: str = "") -> bytes:
    return (
        "POST /api/v1/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Token {token}\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: chunked\r\n{extra}\r\n"
    ).encode()


def read_answers(client: socket.socket) -> list[tuple[int, dict[str, str], bytes]]:
    """Every answer on the connection until the server closes it."""
    received = b""
    with contextlib.suppress(ConnectionResetError):
        while part := client.recv(65536):
            received += part
    answers = []
    while received:
        head, _, rest = received.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        length = int(headers.get("content-length", len(rest)))
        answers.append((int(status_line.split()[1]), headers, rest[:length]))
        received = rest[length:]
    return answers


@pytest.mark.django_db(transaction=True)
def test_a_chunked_upload_is_stored_and_the_connection_serves_the_next_request(server, token):
    document = example_document()
    body = json.dumps(document).encode()
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    # Uneven chunks, the first of 1 byte; then a second request on the same connection.
    client.sendall(upload_head(token) + chunked(body, [1, 977, 13]))
    client.sendall(
        b"GET /api/v1/benchmarks/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )

    answers = read_answers(client)
    client.close()

    assert [status for status, _, _ in answers] == [201, 200], answers
    assert json.loads(answers[0][2])["uuid"] == document["uuid"]
    assert Submission.objects.get(uuid=document["uuid"]).runs.count() == 1
    assert "select-update" in {b["name"] for b in json.loads(answers[1][2])}


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_of_50_mb_is_a_413_and_nothing_of_it_is_a_next_request(server, token):
    # A body whose bytes read as a request line if they were parsed as one.
    line = b"GET /api/v1/benchmarks/ HTTP/1.1\r\nHost: x\r\n\r\n"
    body = line * (50 * 1024 * 1024 // len(line))
    client = socket.create_connection(("127.0.0.1", server), timeout=60)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        client.sendall(upload_head(token) + chunked(body, [65_521]))

    answers = read_answers(client)
    client.close()

    assert len(answers) == 1, [a[0] for a in answers]
    status, headers, raw = answers[0]
    assert status == 413
    assert headers["connection"] == "close"
    error = json.loads(raw)["error"]
    assert error["code"] == "too_large"
    assert f"upload limit of {LIMIT} bytes" in error["message"]
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_just_over_the_limit_is_a_413(server, token):
    document = example_document()
    document["runs"][0]["note"] = "x" * LIMIT
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    body = json.dumps(document).encode()
    client.sendall(upload_head(token, "Connection: close\r\n") + chunked(body, [8_999, 7]))

    answers = read_answers(client)

    assert [a[0] for a in answers] == [413]
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_unread_rest_of_a_body_over_the_limit_is_never_read_as_a_request(server, token):
    # The site reads at most DATA_UPLOAD_MAX_MEMORY_SIZE + 1 bytes: the first
    # chunk; the rest is a chunk holding a request a kept-alive connection
    # would have answered, after one for the chunk-size line.
    read = LIMIT + 1024 * 1024 + 1
    smuggled = b"GET /api/v1/benchmarks/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    client.sendall(upload_head(token) + chunked(b"7" * read + smuggled, [read]))
    client.shutdown(socket.SHUT_WR)

    answers = read_answers(client)

    assert [a[0] for a in answers] == [413]


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_nothing_reads_is_never_read_as_a_request(server):
    # Static files are served before the site's middleware: nothing reads
    # the body; its second chunk holds a request that a kept-alive
    # connection would have answered, after a 400 for the chunk-size line.
    smuggled = b"GET /api/v1/benchmarks/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    client.sendall(
        b"GET /static/results/favicon.svg HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + chunked(b"{}" * 311 + smuggled, [622])
    )

    answers = read_answers(client)

    assert len(answers) == 1, [(status, body[:80]) for status, _, body in answers]
    assert answers[0][1]["connection"] == "close"


@pytest.mark.parametrize(
    ("framing", "problem"),
    [
        (b"zz\r\n{}\r\n0\r\n\r\n", "invalid chunk size b'zz'"),
        (b"2\r\n{}XX0\r\n\r\n", "a chunk's data is not followed by CRLF"),
        (b"10\r\n{}", "the body ended inside a chunk"),  # then the client stops sending
    ],
)
@pytest.mark.django_db(transaction=True)
def test_broken_chunk_framing_is_a_400_saying_so(server, token, framing, problem):
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    client.sendall(upload_head(token) + framing)
    client.shutdown(socket.SHUT_WR)

    answers = read_answers(client)

    assert [a[0] for a in answers] == [400]
    error = json.loads(answers[0][2])["error"]
    assert error["code"] == "malformed_request"
    assert problem in error["message"]
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_chunked_request_that_also_has_a_content_length_is_refused(server):
    # Two framings: which one ends the body is the smuggler's ambiguity.
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    client.sendall(upload_head("none", "Content-Length: 5\r\n") + b"5\r\nhello\r\n0\r\n\r\n")

    answers = read_answers(client)

    assert [a[0] for a in answers] == [400]
    assert answers[0][1]["connection"] == "close"


@pytest.mark.django_db(transaction=True)
def test_a_transfer_coding_other_than_chunked_is_a_501(server):
    client = socket.create_connection(("127.0.0.1", server), timeout=30)
    client.sendall(
        b"POST /api/v1/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    )

    answers = read_answers(client)

    assert [a[0] for a in answers] == [501]
    assert b"not supported" in answers[0][2]
