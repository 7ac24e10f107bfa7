"""What the upload tests send and the servers they send it to: the example
document, a port nobody listens on, one that never answers, one that
trickles its answer, and one that answers as scripted."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

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
