"""Uploads and the outbox: nothing is lost, nothing is stored twice."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import socket
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from benchhub_agent import __version__, transport, upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN, ContractServer

# The repository's docs/, found upwards: two levels up in the repository, three in
# the copy `make mutation` tests (agents/mutants/tests).
EXAMPLE = next(
    found
    for parent in Path(__file__).resolve().parents
    if (found := parent / "docs" / "examples" / "select-update-submission.json").exists()
)
NO_WAIT = (0.0, 0.0)


def example(uuid: str = "3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10") -> dict:
    doc = json.loads(EXAMPLE.read_text())
    doc["uuid"] = uuid
    return doc


def dead_server() -> str:
    """A URL on a local port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class HangingServer:
    """A local port that accepts connections, reads what is sent and never
    answers: a server whose workers are all stuck, or a proxy in front of
    one. It counts the connections it accepted."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted = 0
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed: the test is over
            self.accepted += 1
            self.held.append(connection)  # open, silent

    def __enter__(self) -> HangingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


CREATED_BODY = json.dumps(
    {"uuid": "3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10", "url": "http://x/api/v1/submissions/1/"}
).encode()
CREATED_HEAD = (
    f"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
    f"Content-Length: {len(CREATED_BODY)}\r\nConnection: close\r\n\r\n"
).encode()


def _read_request(connection: socket.socket) -> None:
    """All of a request: hanging up on an unread body resets the connection,
    and the agent hears that instead of the answer."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += _more(connection)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += _more(connection)


def _more(connection: socket.socket) -> bytes:
    chunk = connection.recv(65536)
    if not chunk:
        raise ConnectionResetError("the agent hung up mid-request")
    return chunk


class TricklingServer:
    """A local port that reads a request and answers a complete, valid 201
    one byte every ``every`` seconds (``trickled`` says from where: the head
    or only the body): each read of the agent gets a byte well within a
    socket time-out, the answer as a whole takes many of them. ``tls`` (a
    certificate and its key) serves it over TLS."""

    def __init__(self, trickled: str = "head", every: float = 0.05, tls=None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}"
        self.fast = b"" if trickled == "head" else CREATED_HEAD
        self.slow = CREATED_HEAD + CREATED_BODY if trickled == "head" else CREATED_BODY
        self.every = every
        self.context = None
        if tls:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(*tls)
        self.accepted = 0
        self.answered_in_full = 0
        self.over = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed: the test is over
            self.accepted += 1
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                if self.context:
                    connection = self.context.wrap_socket(connection, server_side=True)
                _read_request(connection)
                connection.sendall(self.fast)
                for byte in self.slow:
                    if self.over.wait(self.every):
                        return
                    connection.sendall(bytes([byte]))
                self.answered_in_full += 1
            except OSError:
                return  # the agent hung up

    def __enter__(self) -> TricklingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.over.set()
        self.listener.close()


@pytest.mark.parametrize("trickled", ["head", "body"])
def test_a_server_that_trickles_its_answer_is_given_the_timeout_in_all(outbox_dir, trickled):
    """The time-out bounded each socket read only: a byte every 50 ms kept
    the agent for the whole answer, however long."""
    with TricklingServer(trickled) as server:
        answer = upload.submit(server.url, TOKEN, example(), backoff=(), timeout=0.5)

    assert (answer.outcome, answer.status, answer.message) == (
        upload.UNREACHABLE,
        None,
        "timed out",
    )
    assert (server.accepted, server.answered_in_full) == (1, 0)


def test_a_trickling_server_ends_the_push_before_a_run_in_its_patience(outbox_dir):
    outbox = Outbox(outbox_dir)
    outbox.save(example())
    patience = upload.Patience(0.5, when="before a run")
    with TricklingServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=(1, 2, 4), patience=patience)

    assert [answer.describe() for _, answer in results] == [
        f"server {server.url} not reachable (no answer): timed out; no answer within the 0.5 s"
        " the agent waits before a run (in all)"
    ]
    assert (server.accepted, server.answered_in_full) == (1, 0)
    assert outbox.uuids() == [example()["uuid"]]


@pytest.fixture(scope="module")
def local_certificate(tmp_path_factory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1, made by the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = str(folder / "cert.pem"), str(folder / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def test_the_timeout_in_all_holds_over_tls_too(outbox_dir, local_certificate, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", local_certificate[0])  # trusted as a real one is
    with TricklingServer("body", tls=local_certificate) as server:
        answer = upload.submit(server.url, TOKEN, example(), backoff=(), timeout=0.5)

    assert (answer.outcome, answer.message) == (upload.UNREACHABLE, "timed out")
    assert (server.accepted, server.answered_in_full) == (1, 0)


def test_a_tls_server_that_answers_in_time_is_heard(outbox_dir, local_certificate, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", local_certificate[0])
    with TricklingServer("body", every=0, tls=local_certificate) as server:
        answer = upload.submit(server.url, TOKEN, example(), backoff=(), timeout=30)

    assert (answer.outcome, answer.status) == (upload.CREATED, 201)


def test_a_document_the_server_cannot_get_stays_in_the_outbox(outbox_dir):
    outbox = Outbox(outbox_dir)
    answer = upload.send_and_keep(dead_server(), TOKEN, example(), outbox, backoff=NO_WAIT)
    assert answer.outcome == upload.UNREACHABLE
    assert outbox.uuids() == [example()["uuid"]]
    assert outbox.load(example()["uuid"]) == example()


def test_push_delivers_the_kept_documents_once_the_server_is_up(outbox_dir):
    outbox = Outbox(outbox_dir)
    upload.send_and_keep(dead_server(), TOKEN, example(), outbox, backoff=NO_WAIT)
    with ContractServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=NO_WAIT)
        assert [(u, a.outcome) for u, a in results] == [(example()["uuid"], upload.CREATED)]
        assert list(server.stored) == [example()["uuid"]]
        assert outbox.uuids(include_rejected=True) == []


def test_a_resent_document_is_stored_once(outbox_dir):
    with ContractServer() as server:
        first = upload.submit(server.url, TOKEN, example(), backoff=NO_WAIT)
        again = upload.submit(server.url, TOKEN, example(), backoff=NO_WAIT)
        assert (first.outcome, again.outcome) == (upload.CREATED, upload.STORED)
        assert first.url == again.url
        assert len(server.stored) == 1


def test_server_errors_are_retried_with_backoff(outbox_dir):
    with ContractServer() as server:
        server.fail_next = 2
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01, 0.01, 0.01))
        assert answer.outcome == upload.CREATED
        assert server.posts == 3


def test_a_refused_document_is_kept_marked_and_not_pushed_again(outbox_dir):
    outbox = Outbox(outbox_dir)
    changed = example()
    changed["runs"][0]["measurements"][0]["value"] = 1.0
    with ContractServer() as server:
        upload.submit(server.url, TOKEN, example(), backoff=NO_WAIT)
        answer = upload.send_and_keep(server.url, TOKEN, changed, outbox, backoff=NO_WAIT)
        assert (answer.outcome, answer.status) == (upload.REJECTED, 409)
        assert "other content" in answer.message
        assert outbox.is_rejected(changed["uuid"])
        assert outbox.load(changed["uuid"]) == changed  # nothing lost
        posts = server.posts
        assert upload.push(server.url, TOKEN, outbox, backoff=NO_WAIT) == []
        assert server.posts == posts
        retried = upload.push(server.url, TOKEN, outbox, include_rejected=True, backoff=NO_WAIT)
        assert [a.status for _, a in retried] == [409]


def test_the_servers_field_errors_are_shown(outbox_dir):
    invalid = example()
    invalid["runs"][0]["measurements"][0]["value"] = "fast"
    with ContractServer() as server:
        answer = upload.submit(server.url, TOKEN, invalid, backoff=NO_WAIT)
    assert answer.status == 400
    assert answer.details[0]["path"] == "$.runs[0].measurements[0].value"
    assert "$.runs[0].measurements[0].value" in answer.describe()


def test_a_wrong_token_does_not_mark_the_document_rejected(outbox_dir):
    outbox = Outbox(outbox_dir)
    with ContractServer() as server:
        answer = upload.send_and_keep(server.url, "wrong", example(), outbox, backoff=NO_WAIT)
    assert (answer.outcome, answer.status) == (upload.UNAUTHORIZED, 401)
    assert outbox.uuids() == [example()["uuid"]]  # the document is fine: push will retry it


def test_outbox_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCHHUB_OUTBOX", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert Outbox().path == tmp_path / "benchhub" / "outbox"


@pytest.mark.parametrize("status", [413, 400])
def test_client_errors_are_rejections(status):
    answer = upload._answer(status, {"error": {"code": "x", "message": "too big"}})
    assert answer.outcome == upload.REJECTED and answer.message == "too big"


# --- found by mutation testing (docs/testing.md): each failed against a one-line
# change of upload.py that the tests above let through ------------------------------

LONG_PAGE = "<html>" + "x" * 600


@pytest.mark.parametrize(
    ("status", "payload", "expected"),
    [
        (201, {"url": "/api/s/1/", "html_url": "/s/1/"}, upload.Answer(
            upload.CREATED, 201, "/api/s/1/", html_url="/s/1/")),
        (200, {"url": "/api/s/1/", "html_url": "/s/1/"}, upload.Answer(
            upload.STORED, 200, "/api/s/1/", html_url="/s/1/")),
        (403, {"detail": "not yours"}, upload.Answer(
            upload.UNAUTHORIZED, 403, message="not yours")),
        # A 404 is a wrong address, never a verdict on the document.
        (404, {"error": {"code": "not_found", "message": ""}}, upload.Answer(
            upload.MISDIRECTED, 404, message="not_found")),
        (429, {"error": {"code": "throttled", "message": "slow down"}}, upload.Answer(
            upload.UNREACHABLE, 429, message="slow down")),
        (500, LONG_PAGE, upload.Answer(
            upload.UNREACHABLE, 500, message="an HTML page: " + "x" * 99 + "…")),
        (409, {"error": {}}, upload.Answer(
            upload.REJECTED, 409, message="this uuid is already stored with different content")),
        (400, {"error": {"message": "bad", "details": [{"path": "$.x", "message": "m"}, "?"]}},
         upload.Answer(upload.REJECTED, 400, message="bad",
                       details=[{"path": "$.x", "message": "m"}])),
    ],
)  # fmt: skip
def test_each_kind_of_answer_is_read_whole(status, payload, expected):
    assert upload._answer(status, payload) == expected


def test_a_body_that_is_not_utf8_is_read_with_replacement_characters():
    assert transport._decode(b"\xff\xfeoops") == "\ufffd\ufffdoops"


def test_an_unreachable_server_is_named_by_the_systems_reason(outbox_dir):
    answer = upload.submit(dead_server(), TOKEN, example(), backoff=())
    assert (answer.outcome, answer.status) == (upload.UNREACHABLE, None)
    assert answer.message == str(ConnectionRefusedError(111, "Connection refused"))


def test_a_server_that_does_not_answer_or_refuses_the_token_is_named(outbox_dir):
    # A typo in --server, or a config file's server forgotten: the agent
    # said "server not reachable" without saying which.
    server = dead_server()
    answer = upload.submit(server + "/", TOKEN, example(), backoff=())
    with ContractServer() as live:
        refused = upload.submit(live.url, "bh_wrong", example(), backoff=())

    assert answer.describe().startswith(f"server {server} not reachable (no answer): ")
    assert refused.describe().startswith(f"the server {live.url} refused the token (HTTP 401)")


def test_a_server_that_never_answers_times_out_and_says_so(outbox_dir):
    with socket.socket() as silent:  # accepts connections (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        answer = upload.submit(url, TOKEN, example(), backoff=(), timeout=0.3)
    assert (answer.outcome, answer.message) == (upload.UNREACHABLE, "timed out")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "BadStatusLine: SSH-2.0-OpenSSH_9.6"),
        (CREATED_HEAD + CREATED_BODY[:5], "IncompleteRead: IncompleteRead(5 bytes read, "),
    ],
)
def test_an_answer_that_is_not_http_is_no_answer_and_the_document_is_kept(
    outbox_dir, answer, reason
):
    """Something other than BenchHub on the port (--server on a wrong one), or
    an answer cut short: http.client's own errors ended the agent with a
    traceback before, the outbox push before a run included."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            _read_request(connection)
            connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    outbox = Outbox(outbox_dir)
    with listener:
        sent = upload.send_and_keep(
            f"http://127.0.0.1:{listener.getsockname()[1]}", TOKEN, example(), outbox, backoff=()
        )

    assert (sent.outcome, sent.status) == (upload.UNREACHABLE, None)
    assert sent.message.startswith(f"not an HTTP answer ({reason}")
    assert outbox.uuids() == [example()["uuid"]]


def test_a_server_address_with_a_trailing_slash_is_the_same_server(outbox_dir):
    with ContractServer() as server:
        answer = upload.submit(server.url + "/", TOKEN, example(), backoff=NO_WAIT)
        assert (answer.outcome, list(server.stored)) == (upload.CREATED, [example()["uuid"]])


def test_waits_between_attempts_are_the_backoff_in_order(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    with ContractServer() as server:
        server.fail_next = 1000
        upload.submit(server.url, TOKEN, example(), backoff=(0.01, 0.02, 0.03))
    assert waits == [0.01, 0.02, 0.03]


class Recorder(BaseHTTPRequestHandler):
    """Answers 201 to anything and keeps what it was sent."""

    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Recorder.seen.append((self.command, dict(self.headers), body))
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"url": "/api/v1/submissions/x/"}')


def test_an_upload_says_who_sends_what_and_keeps_the_text_as_written():
    Recorder.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    document = example()
    document["runs"][0]["note"] = "ünïcode"
    try:
        status, payload = transport.request_json(
            "POST", f"http://127.0.0.1:{server.server_address[1]}/x/", token="t0k", body=document
        )
    finally:
        server.shutdown()
        server.server_close()
    assert (status, payload) == (201, {"url": "/api/v1/submissions/x/"})
    ((method, headers, body),) = Recorder.seen
    assert method == "POST"
    assert headers["Authorization"] == "Token t0k"
    assert headers["Accept"] == headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == f"benchhub-agent/{__version__}"
    assert "ünïcode".encode() in body  # UTF-8, not \\u-escaped
    assert json.loads(body) == document


def test_only_http_addresses_are_spoken_to():
    with pytest.raises(ValueError, match=r"^not an http\(s\) URL: ftp://example\.org/$"):
        transport.request_json("GET", "ftp://example.org/")


@pytest.mark.parametrize(
    ("env", "expected"),
    [({}, (1.0, 2.0, 4.0)), ({"BENCHHUB_BACKOFF": "0.5, 3,"}, (0.5, 3.0))],
)
def test_the_waits_come_from_the_environment_when_set(env, expected):
    assert upload.default_backoff(env) == expected


@pytest.mark.parametrize(
    ("status", "text"),
    [
        ("pending", "stored: /s/1/ (pending: only you see it, signed in, "
                    "until a moderator approves it)"),
        ("approved", "stored: /s/1/"),  # a trusted submitter's: public at once
        ("rejected", "stored: /s/1/ (rejected)"),
        (None, "stored: /s/1/"),
    ],
)  # fmt: skip
def test_a_stored_upload_says_whether_it_waits_for_a_moderator(status, text):
    # The link of a first upload answered 404 in a browser not signed in,
    # and the agent had said only "stored".
    body = {"url": "/api/s/1/", "html_url": "/s/1/", "status": status}

    assert upload._answer(201, body).describe() == text


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (upload.Answer(upload.CREATED, 201, "/api/s/1/", html_url="/s/1/"), "stored: /s/1/"),
        (upload.Answer(upload.STORED, 200, "/api/s/1/"), "already stored: /api/s/1/"),
        (upload.Answer(upload.STORED, 200), "already stored"),
        (upload.Answer(upload.REJECTED, 413, message="too big"),
         "rejected by the server (HTTP 413): too big"),
        (upload.Answer(upload.UNAUTHORIZED, 401, message="bad token"),
         "the server refused the token (HTTP 401): bad token"),
        (upload.Answer(upload.UNREACHABLE, message="timed out"),
         "server not reachable (no answer): timed out"),
        (upload.Answer(upload.REJECTED, 400, message="invalid", details=[
            {"path": "$.a", "message": "x"}, {"message": "y"}]),
         "rejected by the server (HTTP 400): invalid\n  $.a: x\n  : y"),
    ],
)  # fmt: skip
def test_each_answer_is_described_in_one_line_and_its_details_below(answer, text):
    assert answer.describe() == text


def test_a_refused_documents_note_keeps_the_servers_whole_answer(outbox_dir):
    invalid = example()
    invalid["runs"][0]["measurements"][0]["value"] = "fast"
    outbox = Outbox(outbox_dir)
    with ContractServer() as server:
        upload.send_and_keep(server.url, TOKEN, invalid, outbox, backoff=NO_WAIT)
    note = json.loads(outbox.rejection_path(invalid["uuid"]).read_text("utf-8"))
    assert {k: note[k] for k in ("outcome", "status")} == {"outcome": "rejected", "status": 400}
    assert note["message"]
    assert note["details"][0]["path"] == "$.runs[0].measurements[0].value"


# --- the second round (docs/testing.md): the address, a late server, get_json ---------


class Scripted(BaseHTTPRequestHandler):
    """Answers each request with the next scripted (status, body); keeps what it was asked."""

    # (status, body) or (status, body, headers)
    answers: ClassVar[list[tuple]] = []
    seen: ClassVar[list[tuple[str, str, dict[str, str]]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _reply(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Scripted.seen.append((self.command, self.path, dict(self.headers)))
        status, body, *headers = Scripted.answers.pop(0)
        self.send_response(status)
        for name, value in (headers[0] if headers else {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _reply


@pytest.fixture
def scripted():
    """A started Scripted server: (its base URL, the answers to give)."""
    Scripted.answers.clear()
    Scripted.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Scripted.answers
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("slash", ["/", ""])
def test_a_server_under_a_path_gets_the_submission_at_that_path(scripted, slash):
    # A BenchHub behind a proxy under /lab-X: the document goes to
    # /lab-X/api/v1/submissions/, once the trailing slash is taken off, and
    # nothing else of the address is stripped (not the X, not the scheme's //).
    base, answers = scripted
    answers.append((201, b'{"url": "/lab-X/api/v1/submissions/1/"}'))

    answer = upload.submit(f"{base}/lab-X{slash}", TOKEN, example(), backoff=())

    assert answer.outcome == upload.CREATED
    assert [(method, path) for method, path, _ in Scripted.seen] == [
        ("POST", "/lab-X/api/v1/submissions/")
    ]


def test_a_server_that_refuses_the_first_connection_and_answers_the_next_gets_the_document(
    monkeypatch,
):
    # Bound but not yet listening: the first attempt is refused; the server
    # starts listening during the wait before the second attempt.
    Scripted.answers[:] = [(201, b'{"url": "/api/v1/submissions/1/"}')]
    Scripted.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted, bind_and_activate=False)
    server.server_bind()
    waits: list[float] = []

    def start_during_the_wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:
            server.server_activate()
            threading.Thread(target=server.serve_forever, daemon=True).start()

    monkeypatch.setattr(upload.time, "sleep", start_during_the_wait)
    try:
        answer = upload.submit(
            f"http://127.0.0.1:{server.server_address[1]}", TOKEN, example(), backoff=(0.5, 0.5)
        )
    finally:
        if waits:
            server.shutdown()
        server.server_close()

    assert (answer.outcome, answer.status, answer.url) == (
        upload.CREATED,
        201,
        "/api/v1/submissions/1/",
    )
    assert waits == [0.5]
    assert len(Scripted.seen) == 1


def test_get_json_returns_the_payload_and_sends_the_token_without_a_body(scripted):
    base, answers = scripted
    answers.append((200, b'{"results": [{"n": 3}]}'))

    assert upload.get_json(f"{base}/api/v1/baselines/?x=1", token="t0k") == {"results": [{"n": 3}]}
    ((method, path, headers),) = Scripted.seen
    assert (method, path) == ("GET", "/api/v1/baselines/?x=1")
    assert headers["Authorization"] == "Token t0k"
    assert headers["Accept"] == "application/json"
    assert "Content-Type" not in headers and "Content-Length" not in headers


def test_get_json_without_a_token_sends_no_authorization(scripted):
    base, answers = scripted
    answers.append((200, b"[]"))
    assert upload.get_json(f"{base}/r/") == []
    assert "Authorization" not in Scripted.seen[0][2]


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (404, b'{"error": {"code": "not_found", "message": "no such run"}}', "no such run"),
        (201, b'{"url": "/x/"}', "{'url': '/x/'}"),  # only 200 is an answer to a GET
        (502, b"<p>no detail here</p>", "an HTML page: no detail here"),
    ],
)
def test_get_json_raises_the_status_and_the_servers_message(scripted, status, body, message):
    base, answers = scripted
    answers.append((status, body))

    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(f"{base}/api/v1/runs/5/")

    assert raised.value.status == status
    assert str(raised.value) == f"GET {base}/api/v1/runs/5/: HTTP {status}: {message}"


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        (b"<!doctype html><title>Run 5</title>", "'<!doctype html><title>Run 5</title>'"),
        (b"[" * 100_000, repr("[" * 100)),  # past the parser's recursion
    ],
)
def test_get_json_of_an_answer_that_is_not_json_raises_saying_so(scripted, body, shown):
    """The callers read an object's fields: an HTML page answered 200 (a
    run's page address given for its API one) ended the agent with an
    AttributeError, a deeply nested one with a RecursionError."""
    base, answers = scripted
    answers.append((200, body))

    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(f"{base}/runs/5/")

    assert str(raised.value) == f"GET {base}/runs/5/: the answer is not JSON: {shown}"


def test_an_upload_answered_with_json_nested_past_the_parser_keeps_the_document(
    scripted, outbox_dir
):
    base, answers = scripted
    answers.append((502, b"[" * 100_000))
    outbox = Outbox(outbox_dir)

    sent = upload.send_and_keep(base, TOKEN, example(), outbox, backoff=())

    assert (sent.outcome, sent.status) == (upload.UNREACHABLE, 502)
    assert outbox.uuids() == [example()["uuid"]]


def test_get_json_from_a_server_nobody_runs_raises_without_a_status():
    url = f"{dead_server()}/api/v1/runs/5/"
    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(url)
    assert raised.value.status is None
    assert str(raised.value) == f"GET {url}: {ConnectionRefusedError(111, 'Connection refused')}"


def test_get_json_gives_up_after_its_timeout():
    with socket.socket() as silent:  # accepts connections (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/r/"
        with pytest.raises(upload.HttpError) as raised:
            upload.get_json(url, timeout=0.3)
    assert (raised.value.status, str(raised.value)) == (None, f"GET {url}: timed out")


def test_a_text_answer_that_mentions_detail_is_its_own_message():
    # DRF's {"detail": …} is looked for in JSON objects only
    answer = upload._answer(502, "<h1>Bad gateway</h1><p>detail: upstream</p>")
    assert answer == upload.Answer(
        upload.UNREACHABLE, 502, message="an HTML page: Bad gateway detail: upstream"
    )


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("https://bench.example.org:8443/runs/5/?x=1#top", "https://bench.example.org:8443"),
        ("http://127.0.0.1:8000/api/v1/runs/7/", "http://127.0.0.1:8000"),
    ],
)
def test_the_server_of_a_run_address_is_its_scheme_and_host(url, server):
    assert upload.server_of(url) == server


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (upload.Answer(upload.CREATED, 201, "/api/s/1/"), "stored: /api/s/1/"),
        (upload.Answer(upload.CREATED, 201), "stored"),
        (upload.Answer(upload.STORED, 200, "/api/s/1/", html_url="/s/1/"),
         "already stored: /s/1/"),
        (upload.Answer(upload.REJECTED, 400, message="invalid", details=[{"path": "$.b"}]),
         "rejected by the server (HTTP 400): invalid\n  $.b: "),
    ],
)  # fmt: skip
def test_an_answer_without_an_address_or_a_details_message_leaves_them_empty(answer, text):
    assert answer.describe() == text


def test_an_https_address_is_spoken_to():
    # nobody listens there: the connection fails, the address is not refused
    with pytest.raises(OSError):
        transport.request_json("GET", dead_server().replace("http://", "https://") + "/")


def test_a_message_keeps_its_last_letters():
    answer = upload.Answer(upload.REJECTED, 400, message="no such engine: MAX")
    assert answer.describe() == "rejected by the server (HTTP 400): no such engine: MAX"


# --- Retry-After: the server says when to send it again -----------------------------


@pytest.mark.parametrize("status", [503, 429])
def test_a_busy_server_is_asked_again_after_the_seconds_it_asks_for(
    outbox_dir, monkeypatch, capsys, status
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    with ContractServer() as server:
        server.fail_next, server.fail_status, server.retry_after = 2, status, "5"
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01, 0.02, 0.03))
    assert (answer.outcome, server.posts) == (upload.CREATED, 3)
    assert waits == [5.0, 5.0]
    told = capsys.readouterr().err.splitlines()
    assert told[0] == (
        f"HTTP {status} from the server (later): waiting 5 s as it asks (Retry-After)"
        " before attempt 2 of 4"
    )


def test_a_server_asking_for_longer_than_the_agent_waits_is_left_for_a_later_push(
    outbox_dir, monkeypatch
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    outbox = Outbox(outbox_dir)
    with ContractServer() as server:
        server.fail_next, server.retry_after = 1, "300"  # catalog_incomplete's
        answer = upload.send_and_keep(server.url, TOKEN, example(), outbox, backoff=(0.01,))
    assert (answer.outcome, server.posts, waits) == (upload.UNREACHABLE, 1, [])
    assert answer.describe() == (
        f"server {server.url} not reachable (HTTP 503): later; the server asks to be sent it"
        " again in 300 s,"
        " longer than the agent waits (60 s at most)"
    )
    assert outbox.uuids() == [example()["uuid"]]


def test_the_last_attempts_retry_after_is_told(outbox_dir, monkeypatch):
    monkeypatch.setattr(upload.time, "sleep", lambda seconds: None)
    with ContractServer() as server:
        server.fail_next, server.retry_after = 1000, "1"
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01,))
    assert server.posts == 2
    assert answer.message == "later; the server asks to be sent it again in 1 s"


def test_an_unreadable_retry_after_leaves_the_backoff(outbox_dir, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    with ContractServer() as server:
        server.fail_next, server.retry_after = 1, "soon"
        answer = upload.submit(server.url, TOKEN, example(), backoff=(0.01,))
    assert (answer.outcome, waits) == (upload.CREATED, [0.01])


NOON = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("5", 5.0),
        (" 300 ", 300.0),
        ("Thu, 26 Nov 2026 12:00:30 GMT", 30.0),
        ("Thursday, 26-Nov-26 12:01:00 GMT", 60.0),  # the obsolete RFC 850 form
        ("Thu, 26 Nov 2026 12:00:30 -0000", 30.0),  # UTC without saying so
        ("Thu, 26 Nov 2026 11:00:00 GMT", 0.0),  # past: at once
        (None, None),
        ("", None),
        ("-5", None),
        ("1.5", None),
        ("²", None),
        ("Thu, 99 Nov 2026 12:00:30 GMT", None),
    ],
)
def test_retry_after_is_whole_seconds_or_an_http_date(value, seconds):
    assert upload.retry_after_seconds(value, now=NOON) == seconds


@pytest.mark.parametrize("status", [503, 429])
def test_a_read_of_a_busy_server_is_asked_again_after_the_seconds_it_asks_for(
    scripted, monkeypatch, capsys, status
):
    # compare asks a rank for each measurement: a throttled token's 429 made the
    # rest of its table "-", and --like stopped, where an upload would have waited.
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    base, answers = scripted
    busy = (status, b'{"error": {"code": "busy", "message": "later"}}', {"Retry-After": "5"})
    answers.extend([busy, busy, (200, b'{"n": 3}')])

    assert upload.get_json(f"{base}/api/v1/baselines/rank/", backoff=(0.01, 0.01, 0.01)) == {"n": 3}
    assert (len(Scripted.seen), waits) == (3, [5.0, 5.0])
    assert capsys.readouterr().err.splitlines()[0] == (
        f"HTTP {status} from the server (later): waiting 5 s as it asks (Retry-After)"
        " before attempt 2 of 4"
    )


def test_a_read_asked_to_wait_longer_than_the_agent_waits_fails_at_once_saying_so(
    scripted, monkeypatch
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    base, answers = scripted
    answers.append((503, b'{"error": {"message": "catalog incomplete"}}', {"Retry-After": "300"}))

    with pytest.raises(upload.HttpError) as raised:
        upload.get_json(f"{base}/api/v1/runs/5/", backoff=(0.01,))

    assert (raised.value.status, len(Scripted.seen), waits) == (503, 1, [])
    assert str(raised.value) == (
        f"GET {base}/api/v1/runs/5/: HTTP 503: catalog incomplete; the server asks to be"
        " asked again in 300 s, longer than the agent waits (60 s at most)"
    )


def test_a_read_failing_without_retry_after_is_not_asked_again(scripted, monkeypatch):
    # compare goes on without the answer ("-"): a silent backoff per row would add up
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    base, answers = scripted
    answers.append((502, b"bad gateway"))

    with pytest.raises(upload.HttpError):
        upload.get_json(f"{base}/r/", backoff=(0.01, 0.01))

    assert (len(Scripted.seen), waits) == (1, [])


# --- the outbox before a run: a bounded wait in all -----------------------------------


def test_a_throttled_token_leaves_the_outbox_before_a_run_at_once(outbox_dir, monkeypatch):
    # It waited 60 s three times for the first document before the run started.
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    outbox = Outbox(outbox_dir)
    for uuid in ("00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"):
        outbox.save(example(uuid))
    patience = upload.Patience(10, when="before a run")
    with ContractServer() as server:
        server.fail_next, server.fail_status, server.retry_after = 1000, 429, "42"
        results = upload.push(server.url, TOKEN, outbox, patience=patience)

    assert (len(results), server.posts, waits) == (1, 1, [])
    assert results[0][1].describe() == (
        f"server {server.url} not reachable (HTTP 429): later; the server asks to be sent it"
        " again in 42 s,"
        " longer than the agent waits before a run (10 s in all)"
    )
    assert len(outbox.uuids()) == 2  # neither marked: both go with the next push


def test_the_outbox_before_a_run_waits_its_patience_in_all_however_many_documents(
    outbox_dir, monkeypatch
):
    waits: list[float] = []
    monkeypatch.setattr(upload.time, "sleep", waits.append)
    outbox = Outbox(outbox_dir)
    for n in range(1, 4):
        outbox.save(example(f"00000000-0000-4000-8000-00000000000{n}"))
    patience = upload.Patience(10, when="before a run")
    with ContractServer() as server:
        # each document answered 503 twice, asking 3 s: 6 s each if waited in full
        server.retry_after = "3"
        served = server.httpd.RequestHandlerClass.do_POST

        def twice_busy_then_served(handler):
            if server.posts % 3 != 2:
                server.fail_next = 1
            served(handler)

        server.httpd.RequestHandlerClass.do_POST = twice_busy_then_served
        results = upload.push(server.url, TOKEN, outbox, backoff=(1, 1, 1), patience=patience)

    assert sum(waits) <= 10
    assert waits == [3.0, 3.0, 3.0]
    assert [answer.outcome for _, answer in results] == [upload.CREATED, upload.UNREACHABLE]
    assert len(outbox.uuids()) == 2


def test_a_server_that_accepts_and_never_answers_ends_the_push_before_a_run_in_its_patience(
    outbox_dir,
):
    # Each attempt waited the 30 s time-out, four times: two minutes before the
    # run started, against a patience of 10 s that bounded only the sleeps.
    outbox = Outbox(outbox_dir)
    for n in (1, 2):
        outbox.save(example(f"00000000-0000-4000-8000-00000000000{n}"))
    patience = upload.Patience(1, when="before a run")
    with HangingServer() as server:
        results = upload.push(server.url, TOKEN, outbox, backoff=(1, 2, 4), patience=patience)

    assert server.accepted == 1  # no attempt after the first one used the patience up
    assert [answer.outcome for _, answer in results] == [upload.UNREACHABLE]
    assert results[0][1].describe() == (
        f"server {server.url} not reachable (no answer): timed out; no answer within the 1 s"
        " the agent waits before a run (in all)"
    )
    assert len(outbox.uuids()) == 2  # neither marked: both go with the next push


def test_a_patience_already_spent_sends_nothing_and_says_so(outbox_dir):
    outbox = Outbox(outbox_dir)
    outbox.save(example())
    with ContractServer() as server:
        results = upload.push(
            server.url, TOKEN, outbox, patience=upload.Patience(0, when="before a run")
        )

    assert server.posts == 0
    assert results[0][1].describe() == (
        f"server {server.url} not reachable (no answer): not sent: the 0 s the agent waits"
        " before a run (in all) are spent"
    )
    assert outbox.uuids() == [example()["uuid"]]


class EndlessServer:
    """A real HTTP server (http.server) whose answer has no end: the body
    streams until the agent hangs up, sent with no length (the end is the
    close), chunked, or under a Content-Length of 5 GB. It counts what it sent."""

    def __init__(self, framing: str, status: int = 201) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _endless(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if framing == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                elif framing == "declared":
                    self.send_header("Content-Length", str(5 * 1024**3))
                self.send_header("Connection", "close")
                self.end_headers()
                block = b" " * 65536
                if framing == "chunked":
                    block = b"%x\r\n%s\r\n" % (len(block), block)
                try:
                    while not owner.over.is_set():
                        self.wfile.write(block)
                        owner.sent += len(block)
                except OSError:
                    return  # the agent hung up

            do_GET = do_POST = _endless

        self.sent = 0
        self.over = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> EndlessServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.over.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("framing", ["unsized", "chunked"])
@pytest.mark.parametrize("status", [201, 500])
def test_an_endless_answer_is_read_only_to_the_agents_limit_and_the_document_kept(
    outbox_dir, framing, status
):
    """A broken or hostile server streaming an answer without end: the agent
    read it all, gigabytes within its time-out on a fast link."""
    outbox = Outbox(outbox_dir)
    with EndlessServer(framing, status) as server:
        sent = upload.send_and_keep(server.url, TOKEN, example(), outbox, backoff=())

    assert (sent.outcome, sent.status) == (upload.UNREACHABLE, None)
    assert sent.message == "the answer goes on for more than the 16 MiB the agent reads"
    assert outbox.uuids() == [example()["uuid"]]


def test_an_answer_declared_too_long_is_refused_unread():
    with EndlessServer("declared", 200) as server:
        url = f"{server.url}/api/v1/runs/5/"
        with pytest.raises(upload.HttpError) as raised:
            upload.get_json(url)

    assert (raised.value.status, str(raised.value)) == (
        None,
        f"GET {url}: the answer is {5 * 1024**3} bytes long (Content-Length), "
        "more than the 16 MiB the agent reads",
    )


def test_an_answer_of_exactly_the_limit_is_read_whole(scripted):
    base, answers = scripted
    body = b'{"x": "' + b"x" * (transport.ANSWER_MAX_BYTES - 9) + b'"}'
    answers.append((200, body))
    assert upload.get_json(f"{base}/r/") == {"x": "x" * (transport.ANSWER_MAX_BYTES - 9)}


# --- what marks a document rejected: only BenchHub's own refusal -------------------

NGINX_404 = (
    b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.22.1</center>\r\n"
    b"</body>\r\n</html>\r\n" + b"<!-- a padding to disable MSIE friendly error page -->\r\n" * 6
)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, NGINX_404),
        (404, b'{"error": {"code": "not_found", "message": "no such page"}}'),
        (405, b'{"detail": "Method \\"POST\\" not allowed."}'),
        (400, b"<html><body><h1>400 Bad request</h1>Your browser sent an invalid request."),
        (413, b"<html><head><title>413 Request Entity Too Large</title></head></html>"),
        (200, b"<!doctype html><title>Welcome to our shop</title>"),
    ],
)
def test_an_answer_not_from_the_upload_endpoint_keeps_the_document_unmarked(
    scripted, outbox_dir, status, body
):
    base, answers = scripted
    answers.append((status, body))
    outbox = Outbox(outbox_dir)

    sent = upload.send_and_keep(base + "/wrong/path", TOKEN, example(), outbox, backoff=())

    assert (sent.outcome, sent.status) == (upload.MISDIRECTED, status)
    assert outbox.uuids() == [example()["uuid"]]  # a plain push sends it again
    assert not outbox.is_rejected(example()["uuid"])
    described = sent.describe()
    assert "\n" not in described and "<" not in described
    assert f"{base}/wrong/path/api/v1/submissions/ answered HTTP {status}" in described


def test_a_wrong_path_stops_the_push_and_marks_none_of_the_documents(scripted, outbox_dir):
    base, answers = scripted
    outbox = Outbox(outbox_dir)
    for index in range(3):
        document = example()
        document["uuid"] = f"0b5e6a3c-7d1f-4c2a-9e8b-{index:012d}"
        outbox.save(document)
    answers.append((404, NGINX_404))

    results = upload.push(base + "/benchhub", TOKEN, outbox, backoff=())

    assert [answer.outcome for _, answer in results] == [upload.MISDIRECTED]
    assert len(outbox.uuids()) == 3


def test_a_refusal_in_benchhubs_shape_still_marks_the_document_rejected(scripted, outbox_dir):
    base, answers = scripted
    answers.append(
        (400, b'{"error": {"code": "invalid_document", "message": "The document has 1 error.",'
              b' "details": [{"path": "$.runs", "message": "too short"}]}}')
    )  # fmt: skip
    outbox = Outbox(outbox_dir)

    sent = upload.send_and_keep(base, TOKEN, example(), outbox, backoff=())

    assert sent.outcome == upload.REJECTED
    assert outbox.is_rejected(example()["uuid"])


def test_a_409_page_from_elsewhere_does_not_pass_for_an_earlier_import(scripted, outbox_dir):
    # Only BenchHub's own 409 means "this output is stored already"; a proxy's
    # page must not get the import's document removed from the outbox.
    from benchhub_agent import commands

    base, answers = scripted
    answers.append((409, b"<html><title>409 Conflict</title><body>upstream busy</body></html>"))
    outbox = Outbox(outbox_dir)
    document = example()
    document["source"] = {"kind": "import", "tool": "pgbench"}
    args = argparse.Namespace(dry_run=False, upload=True, server=base, token=TOKEN)

    code = commands.deliver(document, args, table_shown=False)

    assert code == commands.EXIT_KEPT
    assert outbox.uuids() == [document["uuid"]]
