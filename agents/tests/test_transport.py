"""What the agent's requests carry (its name, the token, the text as written)
and which addresses it speaks to."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from _upload_servers import dead_server, example
from benchhub_agent import __version__, transport


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


def test_an_https_address_is_spoken_to():
    # nobody listens there: the connection fails, the address is not refused
    with pytest.raises(OSError):
        transport.request_json("GET", dead_server().replace("http://", "https://") + "/")


def test_a_body_that_is_not_utf8_is_read_with_replacement_characters():
    assert transport._decode(b"\xff\xfeoops") == "\ufffd\ufffdoops"
