"""Talking to a BenchHub server over its REST API, with the standard library only.

Uploads are idempotent on the server (the document's uuid), so the agent
retries freely: a resend of a stored document answers 200 and changes nothing.
Every document goes to the outbox *before* the first attempt and leaves it only
once the server has it, so an interrupted upload loses nothing.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import __version__
from .outbox import Outbox

SUBMISSIONS_PATH = "/api/v1/submissions/"
TIMEOUT_S = 30.0
BACKOFF_S = (1.0, 2.0, 4.0)  # waits between the attempts after a failure


def default_backoff(env: Mapping[str, str] = os.environ) -> tuple[float, ...]:
    """BENCHHUB_BACKOFF="1,2,4" changes the waits (tests and impatient users)."""
    text = env.get("BENCHHUB_BACKOFF")
    if not text:
        return BACKOFF_S
    return tuple(float(part) for part in text.split(",") if part.strip())


USER_AGENT = f"benchhub-agent/{__version__}"

# Outcomes
CREATED = "created"  # 201
STORED = "already_stored"  # 200: the same uuid with the same content
REJECTED = "rejected"  # the document itself was refused (400, 409, 413, …)
UNAUTHORIZED = "unauthorized"  # 401/403: the token, not the document, is wrong
UNREACHABLE = "unreachable"  # connection failure, timeout, 5xx, 429 after the retries


@dataclass
class Answer:
    outcome: str
    status: int | None = None
    url: str | None = None
    message: str = ""
    # The submission's page, for people; ``url`` is its API address.
    html_url: str | None = None
    details: list[dict[str, str]] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.outcome in (CREATED, STORED)

    def describe(self) -> str:
        status = f"HTTP {self.status}" if self.status else "no answer"
        text = {
            CREATED: f"stored: {self.html_url or self.url or ''}",
            STORED: f"already stored: {self.html_url or self.url or ''}",
            REJECTED: f"rejected by the server ({status}): {self.message}",
            UNAUTHORIZED: f"the server refused the token ({status}): {self.message}",
            UNREACHABLE: f"server not reachable ({status}): {self.message}",
        }[self.outcome].rstrip(": ")
        lines = [text] + [f"  {d.get('path', '')}: {d.get('message', '')}" for d in self.details]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "status": self.status,
            "message": self.message,
            "details": self.details,
        }


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
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.status, _decode(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, _decode(exc.read())


def get_json(url: str, *, token: str | None = None, timeout: float = TIMEOUT_S) -> Any:
    """GET that must succeed: raises HttpError with the server's message otherwise."""
    try:
        status, payload = request_json("GET", url, token=token, timeout=timeout)
    except (urllib.error.URLError, OSError) as exc:
        raise HttpError(None, f"GET {url}: {_reason(exc)}") from exc
    if status != 200:
        message, _ = _error_message(payload)
        raise HttpError(status, f"GET {url}: HTTP {status}: {message}")
    return payload


def _decode(raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    if isinstance(reason, socket.timeout | TimeoutError):
        return "timed out"
    return str(reason)


def _error_message(payload: Any) -> tuple[str, list[dict[str, str]]]:
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        error = payload["error"]
        details = [d for d in error.get("details") or [] if isinstance(d, dict)]
        return str(error.get("message") or error.get("code") or ""), details
    if isinstance(payload, dict) and "detail" in payload:  # DRF's default shape
        return str(payload["detail"]), []
    return str(payload)[:500], []


def submit(
    server: str,
    token: str,
    document: dict[str, Any],
    *,
    backoff: Sequence[float] | None = None,
    timeout: float = TIMEOUT_S,
) -> Answer:
    """POST the document, retrying transient failures with growing waits."""
    url = server.rstrip("/") + SUBMISSIONS_PATH
    backoff = default_backoff() if backoff is None else backoff
    answer = Answer(UNREACHABLE)
    for attempt in range(len(backoff) + 1):
        if attempt:
            time.sleep(backoff[attempt - 1])
        try:
            status, payload = request_json("POST", url, token=token, body=document, timeout=timeout)
        except (urllib.error.URLError, OSError) as exc:
            answer = Answer(UNREACHABLE, None, message=_reason(exc))
            continue
        answer = _answer(status, payload)
        if answer.outcome != UNREACHABLE:
            return answer
    return answer


def _answer(status: int, payload: Any) -> Answer:
    url = payload.get("url") if isinstance(payload, dict) else None
    html_url = payload.get("html_url") if isinstance(payload, dict) else None
    if status == 201:
        return Answer(CREATED, status, url, html_url=html_url)
    if status == 200:
        return Answer(STORED, status, url, html_url=html_url)
    message, details = _error_message(payload)
    if status in (401, 403):
        return Answer(UNAUTHORIZED, status, message=message)
    if status == 429 or status >= 500:
        return Answer(UNREACHABLE, status, message=message)
    if status == 409 and not message:
        message = "this uuid is already stored with different content"
    return Answer(REJECTED, status, message=message, details=details)


def send_and_keep(
    server: str,
    token: str,
    document: dict[str, Any],
    outbox: Outbox,
    *,
    backoff: Sequence[float] | None = None,
) -> Answer:
    """Keep the document in the outbox until a server has it; mark it if refused."""
    outbox.save(document)
    return _settle(server, token, document, outbox, backoff)


def _settle(
    server: str,
    token: str,
    document: dict[str, Any],
    outbox: Outbox,
    backoff: Sequence[float] | None,
) -> Answer:
    answer = submit(server, token, document, backoff=backoff)
    if answer.accepted:
        outbox.remove(document["uuid"])
    elif answer.outcome == REJECTED:
        outbox.mark_rejected(document["uuid"], answer.as_dict())
    return answer


def push(
    server: str,
    token: str,
    outbox: Outbox,
    *,
    include_rejected: bool = False,
    backoff: Sequence[float] | None = None,
) -> list[tuple[str, Answer]]:
    """Send every kept document; stop early when the server is down or the token wrong."""
    results = []
    for document_uuid in outbox.uuids(include_rejected=include_rejected):
        try:
            document = outbox.load(document_uuid)
        except (OSError, ValueError) as exc:
            results.append((document_uuid, Answer(REJECTED, message=f"unreadable: {exc}")))
            continue
        answer = _settle(server, token, document, outbox, backoff)
        results.append((document_uuid, answer))
        if answer.outcome in (UNREACHABLE, UNAUTHORIZED):
            break  # the next ones would fail the same way; they stay for later
    return results


def server_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
