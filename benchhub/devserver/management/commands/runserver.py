"""runserver (with static files, as django.contrib.staticfiles serves them)
whose connections send each write at once (TCP_NODELAY) and read chunked
request bodies.

Django's development server writes an answer's status and headers, then its
body, in two sends. With Nagle's algorithm on (the socket default) the body
waits for the client to acknowledge the headers, and a client delays that
acknowledgement by up to 40 ms on Linux: every answer of the embedded default
took at least 40 ms, whatever its work (one uploader: 48 ms a request for 8
ms of CPU; docs/performance.md). gunicorn, the deployed server, sets the
option itself.

Django's development server reads Content-Length bytes of a body and nothing
else: a chunked upload (Transfer-Encoding: chunked) reached the site empty,
a 400 "not valid JSON" whatever its size, and on a kept-alive connection its
unread chunks were parsed as the next request. Here the chunk framing is
removed as gunicorn removes it, so that benchhub.lib.jsonbody's
ChunkedBodyMiddleware reads the body (at most its limit, a 413 above), and a
connection whose body was not read to its end is closed after the answer.
"""

from __future__ import annotations

import socket
import time
from typing import Any

from django.contrib.staticfiles.management.commands.runserver import (
    Command as StaticFilesRunserverCommand,
)
from django.core.servers.basehttp import ServerHandler, WSGIRequestHandler, WSGIServer

# A chunk-size line or trailer longer than this is not HTTP but an attack.
MAX_LINE = 8 * 1024
# What is read and thrown away of a body the site did not read (over the
# upload limit) before the connection closes: closing with unread data sends
# a reset, and a client still sending then fails without reading the answer.
LINGER_BYTES = 64 * 1024 * 1024
LINGER_SECONDS = 5.0


class ChunkedBody:
    """wsgi.input of a chunked request: the body without its framing
    (RFC 9112, 7.1). Broken framing raises ValueError with what is wrong,
    which ChunkedBodyMiddleware answers with a 400."""

    def __init__(self, rfile: Any) -> None:
        self._rfile = rfile
        self._left = 0  # bytes of the current chunk not yet read
        self._in_chunk = False
        self.finished = False  # the last chunk and the trailers were read

    def read(self, size: int | None = -1) -> bytes:
        parts, total = [], 0
        while not self.finished and (size is None or size < 0 or total < size):
            if not self._in_chunk:
                self._start_chunk()
                continue
            want = self._left if size is None or size < 0 else min(self._left, size - total)
            data = self._rfile.read(want)
            if not data:
                raise ValueError("the body ended inside a chunk")
            parts.append(data)
            total += len(data)
            self._left -= len(data)
            if self._left == 0:
                if self._rfile.read(2) != b"\r\n":
                    raise ValueError("a chunk's data is not followed by CRLF")
                self._in_chunk = False
        return b"".join(parts)

    def readline(self, size: int | None = -1) -> bytes:
        line = bytearray()
        while not line.endswith(b"\n") and (size is None or size < 0 or len(line) < size):
            byte = self.read(1)
            if not byte:
                break
            line += byte
        return bytes(line)

    def readlines(self, hint: int | None = -1) -> list[bytes]:
        return list(iter(self.readline, b""))

    def __iter__(self):
        return iter(self.readline, b"")

    def _start_chunk(self) -> None:
        line = self._line()
        size = line.split(b";", 1)[0].strip()  # chunk extensions are ignored
        if not size or size.strip(b"0123456789abcdefABCDEF"):
            raise ValueError(f"invalid chunk size {size[:20]!r}")
        self._left = int(size, 16)
        if self._left:
            self._in_chunk = True
            return
        while self._line().strip():  # trailer fields, unused
            pass
        self.finished = True

    def _line(self) -> bytes:
        line = self._rfile.readline(MAX_LINE + 1)
        if not line.endswith(b"\n"):
            raise ValueError(
                "a chunk-size line is longer than 8 KiB"
                if len(line) > MAX_LINE
                else "the body ended before its last chunk"
            )
        return line

    def drain(self, limit: int, deadline: float) -> None:
        """Throw away the rest of the body, within a size and a time."""
        while not self.finished and limit > 0 and time.monotonic() < deadline:
            limit -= len(self.read(64 * 1024)) or 1


class ChunkedServerHandler(ServerHandler):
    """Django's handler with a chunked body as its input: Django's wraps its
    input in a stream of Content-Length (none: 0) bytes."""

    def __init__(self, body: ChunkedBody, stdout, stderr, environ, **kwargs) -> None:
        super(ServerHandler, self).__init__(body, stdout, stderr, environ, **kwargs)
        self.body = body

    def cleanup_headers(self) -> None:
        super().cleanup_headers()
        if not self.body.finished:
            # What is left of the body must not be read as the next request.
            self.headers["Connection"] = "close"
            self.request_handler.close_connection = True

    def close(self) -> None:
        try:
            if not self.body.finished:
                self.request_handler.connection.settimeout(1.0)
                self.body.drain(LINGER_BYTES, time.monotonic() + LINGER_SECONDS)
        except (OSError, ValueError):
            pass  # the client went away or broke the framing: it is closed anyway
        finally:
            super(ServerHandler, self).close()


class ChunkedRequestHandler(WSGIRequestHandler):
    def handle_one_request(self) -> None:
        """Django's, with a chunked body read through ChunkedBody."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.requestline = ""
            self.request_version = ""
            self.command = ""
            self.send_error(414)
            return
        if not self.parse_request():  # an error was sent
            return
        codings = ",".join(self.headers.get_all("Transfer-Encoding", []))
        if not codings:
            handler = ServerHandler(self.rfile, self.wfile, self.get_stderr(), self.get_environ())
        elif codings.strip().lower() != "chunked":
            self.send_error(
                501, explain=f"Transfer-Encoding {codings[:60]!r} is not supported; send chunked"
            )
            return
        elif "Content-Length" in self.headers:
            # Two framings: which one ends the body is the ambiguity that
            # request smuggling exploits (RFC 9112, 6.1).
            self.send_error(
                400, explain="Content-Length and Transfer-Encoding both given; send one"
            )
            return
        else:
            handler = ChunkedServerHandler(
                ChunkedBody(self.rfile), self.wfile, self.get_stderr(), self.get_environ()
            )
        handler.request_handler = self
        handler.run(self.server.get_app())


class DevWSGIServer(WSGIServer):
    """Its connections send at once and read chunked bodies. Django's run()
    builds the server with its own request handler; this one replaces it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.RequestHandlerClass = ChunkedRequestHandler

    def get_request(self) -> tuple[socket.socket, object]:
        connection, address = super().get_request()
        if connection.family in (socket.AF_INET, socket.AF_INET6):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address


class Command(StaticFilesRunserverCommand):
    server_cls = DevWSGIServer

    def inner_run(self, *args, **options):
        # The serving process (the autoreloader's child): baselines marked
        # and left by an earlier process are refreshed now, not at the next
        # change (tasks run in-process here; a worker does this on a broker).
        from benchhub.baselines.tasks import catch_up_in_process

        catch_up_in_process()
        return super().inner_run(*args, **options)
