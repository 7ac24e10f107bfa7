"""One HTTP exchange with a BenchHub server, with the standard library only: a
deadline over the whole exchange, a bounded answer, and errors told in one
line. upload.py builds retries, the outbox and the upload's outcomes on it."""

from __future__ import annotations

import functools
import http.client
import json
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from . import __version__

# An exchange's whole time: connecting, sending, and reading the answer to its
# last byte. Not per socket read: a server that trickles a byte every few
# seconds kept a read-per-read time-out waiting for as long as it liked.
TIMEOUT_S = 30.0
# The most of an answer the agent reads. BenchHub's are small (a stored
# submission's address, a page of baselines, a run of at most the server's
# 2 MiB upload); a broken or hostile server streaming without end filled the
# agent's memory with gigabytes within TIMEOUT_S on a fast link.
ANSWER_MAX_BYTES = 16 * 1024 * 1024
USER_AGENT = f"benchhub-agent/{__version__}"


class AnswerTooLarge(http.client.HTTPException):
    """An answer longer than ANSWER_MAX_BYTES: no answer, as one cut short is."""


class HttpError(RuntimeError):
    def __init__(self, status: int | None, message: str) -> None:
        self.status = status
        super().__init__(message)


def request_json(
    method: str,
    url: str,
    *,
    token: str | None = None,
    body: dict[str, Any] | None = None,
    timeout: float = TIMEOUT_S,
) -> tuple[int, Any]:
    """One HTTP exchange; returns (status, decoded JSON or text). 4xx/5xx are returned too."""
    status, payload, _ = _exchange(method, url, token=token, body=body, timeout=timeout)
    return status, payload


class _DeadlineMixin:
    """A socket each of whose reads and writes may take only what is left
    until its exchange's deadline: the socket time-out alone bounds one read,
    and a server sending a byte just within it kept the agent indefinitely."""

    _deadline: float | None = None  # None while TLS wraps it: see connect()

    def _within_deadline(self) -> None:
        if self._deadline is None:
            return
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.settimeout(left)

    def recv(self, *args: Any, **kwargs: Any) -> Any:
        self._within_deadline()
        return super().recv(*args, **kwargs)

    def recv_into(self, *args: Any, **kwargs: Any) -> Any:
        self._within_deadline()
        return super().recv_into(*args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> Any:
        self._within_deadline()
        return super().send(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> Any:
        self._within_deadline()  # sendall's time-out covers all of it
        return super().sendall(*args, **kwargs)


class _DeadlineSocket(_DeadlineMixin, socket.socket):
    pass


class _DeadlineSSLSocket(_DeadlineMixin, ssl.SSLSocket):
    pass


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left


class _DeadlineHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline
        self._create_connection = self._connect_by_deadline

    def _connect_by_deadline(
        self, address: tuple[str, int], timeout: Any = None, source_address: Any = None
    ) -> socket.socket:
        plain = socket.create_connection(address, _time_left(self._deadline), source_address)
        # As ssl.SSLSocket takes a socket over: the same descriptor, our class.
        sock = _DeadlineSocket(plain.family, plain.type, plain.proto, plain.detach())
        sock.settimeout(_time_left(self._deadline))  # a TLS handshake's time in all
        sock._deadline = self._deadline
        return sock


class _DeadlineHTTPSConnection(_DeadlineHTTPConnection, http.client.HTTPSConnection):
    def __init__(self, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(*args, deadline=deadline, **kwargs)
        self._context.sslsocket_class = _DeadlineSSLSocket  # this connection's own context

    def connect(self) -> None:
        super().connect()
        self.sock._deadline = self._deadline


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = functools.partial(_DeadlineHTTPConnection, deadline=self._deadline)
        return self.do_open(connection, req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = functools.partial(_DeadlineHTTPSConnection, deadline=self._deadline)
        return self.do_open(connection, req, context=self._context)


def _exchange(
    method: str,
    url: str,
    *,
    token: str | None,
    body: dict[str, Any] | None,
    timeout: float,
) -> tuple[int, Any, Mapping[str, str]]:
    """One request and its answer within ``timeout`` seconds in all (TIMEOUT_S)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {url}")
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    data = None
    if body is not None:
        data = json.dumps(body, ensure_ascii=False).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Token {token}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(
        _DeadlineHTTPHandler(deadline), _DeadlineHTTPSHandler(deadline)
    )
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, _decode(_read_bounded(response)), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, _decode(_read_bounded(exc)), exc.headers


def _read_bounded(response: Any) -> bytes:
    """The answer's body, or AnswerTooLarge past ANSWER_MAX_BYTES: refused
    unread when its Content-Length says so, else read that far and no further."""
    limit = f"more than the {ANSWER_MAX_BYTES // (1024 * 1024)} MiB the agent reads"
    declared = (response.headers.get("Content-Length") or "").strip()
    if declared.isascii() and declared.isdigit():
        if int(declared) > ANSWER_MAX_BYTES:
            raise AnswerTooLarge(
                f"the answer is {int(declared)} bytes long (Content-Length), {limit}"
            )
        # Read whole: only a read without a size tells an answer cut short (IncompleteRead).
        return response.read()
    chunks = []
    size = 0
    while chunk := response.read(min(65536, ANSWER_MAX_BYTES + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > ANSWER_MAX_BYTES:
            raise AnswerTooLarge(f"the answer goes on for {limit}")
    return b"".join(chunks)


def _decode(raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser
        return text


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    if isinstance(reason, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(reason, AnswerTooLarge):
        return str(reason)
    if isinstance(reason, http.client.HTTPException) and not isinstance(reason, OSError):
        # Something else listens there (--server on a wrong port), or the answer broke off.
        return f"not an HTTP answer ({type(reason).__name__}: {str(reason)[:100]})"
    return str(reason)


def _error_message(payload: Any) -> tuple[str, list[dict[str, str]]]:
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = payload["error"]
        details = [d for d in error.get("details") or [] if isinstance(d, dict)]
        return str(error.get("message") or error.get("code") or ""), details
    if isinstance(payload, dict) and "detail" in payload:  # DRF's default shape
        return str(payload["detail"]), []
    if isinstance(payload, str):
        return _text_summary(payload), []
    return _one_line(str(payload), 300), []


_HTML = re.compile(r"<\s*(?:!doctype|html|head|body|title|h[1-6]|p|div|center)\b", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _text_summary(text: str) -> str:
    """An answer that is not JSON, in one line: a proxy's or another site's
    HTML page printed whole would fill the terminal with its markup."""
    if _HTML.search(text[:2000]):
        words = _one_line(_TAG.sub(" ", text[:20000]), 100)
        return f"an HTML page: {words}" if words else "an HTML page"
    return _one_line(text, 300)


def _is_benchhub_error(payload: Any) -> bool:
    """BenchHub's one error shape: {"error": {"code": …, "message": …, "details": …}}."""
    return isinstance(payload, dict) and isinstance(payload.get("error"), dict)
