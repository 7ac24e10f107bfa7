"""Servers that keep the agent: one that trickles its answer a byte at a time
(over TLS too), one that never answers, one whose answer has no end. The
time-out bounds the answer in all, the agent reads 16 MiB at most, and the
document stays in the outbox."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from _upload_servers import TricklingServer, example
from benchhub_agent import transport, upload
from benchhub_agent.outbox import Outbox
from contract_server import TOKEN


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


def test_a_server_that_never_answers_times_out_and_says_so(outbox_dir):
    with socket.socket() as silent:  # accepts connections (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        answer = upload.submit(url, TOKEN, example(), backoff=(), timeout=0.3)
    assert (answer.outcome, answer.message) == (upload.UNREACHABLE, "timed out")


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
