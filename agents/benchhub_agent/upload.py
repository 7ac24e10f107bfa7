"""Talking to a BenchHub server over its REST API, with the standard library only.

Uploads are idempotent on the server (the document's uuid), so the agent
retries freely: a resend of a stored document answers 200 and changes nothing.
Every document goes to the outbox *before* the first attempt and leaves it only
once the server has it, so an interrupted upload loses nothing.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import http.client
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .outbox import Outbox
from .output import say
from .transport import (
    TIMEOUT_S,
    HttpError,
    _error_message,
    _exchange,
    _is_benchhub_error,
    _reason,
)

SUBMISSIONS_PATH = "/api/v1/submissions/"
BACKOFF_S = (1.0, 2.0, 4.0)  # waits between the attempts after a failure
# A 429 or 503 with Retry-After is retried after the time it asks, instead of
# the backoff's. BenchHub asks 1 s (a concurrent change), 5 s (database trouble),
# up to 60 s (a throttled token, until the minute is over) and 300 s (catalog
# incomplete: until an administrator runs migrate). Beyond this the agent does
# not wait at all: asking again sooner than told is pointless, and a broken or
# hostile server must not park it (or the benchmark run waiting behind the
# outbox) for hours. The document stays in the outbox for a later push.
RETRY_AFTER_MAX_S = 60.0
# The outbox sent before a run waits this long in all, not RETRY_AFTER_MAX_S per
# attempt: a throttled token (up to 60 s asked, three times, for each document)
# held the run back minutes before it started. Enough for BenchHub's 1 s and
# 5 s asks and the backoff's 1 + 2 + 4 s on a server that is down. The time
# spent waiting for answers counts too: a server that accepts the connection
# and never answers held it TIMEOUT_S per attempt, two minutes in all.
BEFORE_RUN_WAIT_S = 10.0


def default_backoff(env: Mapping[str, str] = os.environ) -> tuple[float, ...]:
    """BENCHHUB_BACKOFF="1,2,4" changes the waits (tests and impatient users)."""
    text = env.get("BENCHHUB_BACKOFF")
    if not text:
        return BACKOFF_S
    return tuple(float(part) for part in text.split(",") if part.strip())


# Outcomes
CREATED = "created"  # 201
STORED = "already_stored"  # 200: the same uuid with the same content
REJECTED = "rejected"  # the upload endpoint itself refused the document (400, 409, 413, …)
UNAUTHORIZED = "unauthorized"  # 401/403: the token, not the document, is wrong
UNREACHABLE = "unreachable"  # connection failure, timeout, 5xx, 429 after the retries
# Something answered that is not BenchHub's upload endpoint: a 404 or 405 (a
# wrong --server path), or an answer without BenchHub's JSON shape (a proxy's
# or another site's page). It says nothing about the document, which is kept
# unmarked for the next push to the right address.
MISDIRECTED = "misdirected"


@dataclass
class Answer:
    outcome: str
    status: int | None = None
    url: str | None = None
    message: str = ""
    # The submission's page, for people; ``url`` is its API address.
    html_url: str | None = None
    details: list[dict[str, str]] = field(default_factory=list)
    # The stored submission's status as the server answered it ("pending" …).
    submission_status: str | None = None
    # The server it was sent to: a wrong one (a typo in --server, a config
    # file forgotten) was not named when it did not answer or refused the token.
    server: str | None = None
    # The address that answered, for a misdirected upload.
    endpoint: str | None = None

    @property
    def accepted(self) -> bool:
        return self.outcome in (CREATED, STORED)

    def describe(self) -> str:
        status = f"HTTP {self.status}" if self.status else "no answer"
        at = f" {self.server}" if self.server else ""
        text = {
            CREATED: f"stored: {self.html_url or self.url or ''}",
            STORED: f"already stored: {self.html_url or self.url or ''}",
            REJECTED: f"rejected by the server ({status}): {self.message}",
            UNAUTHORIZED: f"the server{at} refused the token ({status}): {self.message}",
            UNREACHABLE: f"server{at} not reachable ({status}): {self.message}",
            MISDIRECTED: (
                f"{self.endpoint or 'the server'} answered {status}, not as BenchHub's "
                f"upload endpoint does ({self.message or 'no reason given'}); the document "
                "is kept, not marked: check --server (the site's address, e.g. "
                "https://benchhub.example)"
            ),
        }[self.outcome].rstrip(": ")
        if self.accepted and self.submission_status:
            text += _STATUS_NOTES.get(self.submission_status, f" ({self.submission_status})")
        lines = [text] + [f"  {d.get('path', '')}: {d.get('message', '')}" for d in self.details]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "status": self.status,
            "message": self.message,
            "details": self.details,
        }


# A first upload's link answered 404 in a browser not signed in, with no
# word from the agent that the run waits for a moderator.
_STATUS_NOTES = {
    "pending": " (pending: only you see it, signed in, until a moderator approves it)",
    "approved": "",
}


def get_json(
    url: str,
    *,
    token: str | None = None,
    timeout: float = TIMEOUT_S,
    backoff: Sequence[float] | None = None,
) -> Any:
    """GET that must succeed: raises HttpError with the server's message otherwise.

    A 429 or 503 with Retry-After is asked again after the wait it asks for, as
    an upload is (compare's rank per measurement met a throttled token and
    showed "-" for the rest of the table). Other failures are not retried:
    the callers go on without the answer, and an unannounced backoff for each
    of compare's rows would add up in silence."""
    backoff = default_backoff() if backoff is None else backoff
    last = _exchange_retrying(
        "GET",
        url,
        token=token,
        body=None,
        timeout=timeout,
        backoff=backoff,
        again="asked again",
        retry_unasked=False,
    )
    if last.status is None:
        raise HttpError(None, f"GET {url}: {last.reason}")
    if last.status != 200:
        message, _ = _error_message(last.payload)
        raise HttpError(last.status, f"GET {url}: HTTP {last.status}: {_noted(message, last.note)}")
    if isinstance(last.payload, str):
        # An HTML page (a run's page address for its API one, a proxy's
        # login page) or JSON nested past the parser: the callers read
        # fields of what BenchHub answers, and met a str with a traceback.
        raise HttpError(200, f"GET {url}: the answer is not JSON: {last.payload[:100]!r}")
    return last.payload


def submit(
    server: str,
    token: str,
    document: dict[str, Any],
    *,
    backoff: Sequence[float] | None = None,
    timeout: float = TIMEOUT_S,
    patience: Patience | None = None,
) -> Answer:
    """POST the document, retrying transient failures with growing waits, or the
    wait the server asks for (Retry-After) up to RETRY_AFTER_MAX_S, and no wait
    beyond what ``patience`` has left."""
    url = server.rstrip("/") + SUBMISSIONS_PATH
    backoff = default_backoff() if backoff is None else backoff
    last = _exchange_retrying(
        "POST",
        url,
        token=token,
        body=document,
        timeout=timeout,
        backoff=backoff,
        again="sent it again",
        patience=patience,
    )
    if last.status is None:
        answer = Answer(UNREACHABLE, None, message=_noted(last.reason, last.note))
    else:
        answer = _answer(last.status, last.payload)
        answer.message = _noted(answer.message, last.note)
    answer.server = server.rstrip("/")
    answer.endpoint = url
    return answer


class Patience:
    """The seconds several exchanges and their retries may still take, in
    all: the outbox pushed before a run waits that long at most, however many
    documents it holds, however often the server asks to come back and
    however long it takes to answer."""

    def __init__(self, seconds: float, *, when: str) -> None:
        self.whole = seconds
        self.left = seconds
        self.when = when  # whose waits it bounds, for the note: "before a run"

    def lasts(self, wait: float) -> bool:
        """Whether ``wait`` fits in what is left; if so, it is spent."""
        if wait > self.left:
            return False
        self.left -= wait
        return True

    def spend(self, seconds: float) -> None:
        self.left = max(0.0, self.left - seconds)

    def cut(self, timeout: float) -> float:
        """An exchange's time-out, no longer than what is left."""
        return min(timeout, self.left)

    def ran_out(self) -> str:
        return f"no answer within the {self.whole:g} s the agent waits {self.when} (in all)"

    def spent(self) -> str:
        return f"not sent: the {self.whole:g} s the agent waits {self.when} (in all) are spent"


@dataclass
class _Last:
    """The last answer of an exchange tried while it failed transiently."""

    status: int | None  # None: no answer
    payload: Any = None
    reason: str = ""  # why there was no answer
    note: str = ""  # the wait the server asked for and why it was not waited


def _transient(status: int) -> bool:
    return status == 429 or status >= 500


def _exchange_retrying(
    method: str,
    url: str,
    *,
    token: str | None,
    body: dict[str, Any] | None,
    timeout: float,
    backoff: Sequence[float],
    again: str,
    retry_unasked: bool = True,
    patience: Patience | None = None,
) -> _Last:
    """Uploads' and reads' attempts: one more after each transient failure (no
    answer, 429, 5xx), as many as ``backoff`` has waits. A 429 or 503 with
    Retry-After is tried again after the wait it asks, not the backoff's; a
    failure without one only when ``retry_unasked``. ``again`` says what the
    server asks in the note: "sent it again", "asked again"."""
    attempts = len(backoff) + 1
    attempt = 0
    last: _Last | None = None
    while True:
        attempt += 1
        asked = None
        if patience is not None and patience.left <= 0:
            return last or _Last(None, reason=patience.spent())
        this_timeout = timeout if patience is None else patience.cut(timeout)
        started = time.monotonic()
        try:
            status, payload, headers = _exchange(
                method, url, token=token, body=body, timeout=this_timeout
            )
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            last = _Last(None, reason=_reason(exc))
            if patience is not None and this_timeout < timeout and last.reason == "timed out":
                last.note = patience.ran_out()
        else:
            last = _Last(status, payload)
            if not _transient(status):
                return last
            asked = retry_after_seconds(headers.get("Retry-After"))
        finally:
            if patience is not None:
                patience.spend(time.monotonic() - started)
        if asked is None:
            if attempt == attempts or not retry_unasked:
                return last
            if patience is not None and not patience.lasts(backoff[attempt - 1]):
                return last
            time.sleep(backoff[attempt - 1])
            continue
        told = f"the server asks to be {again} in {asked:g} s"
        if asked > RETRY_AFTER_MAX_S:
            last.note = f"{told}, longer than the agent waits ({RETRY_AFTER_MAX_S:g} s at most)"
            return last
        if attempt == attempts:
            last.note = told
            return last
        if patience is not None and not patience.lasts(asked):
            last.note = (
                f"{told}, longer than the agent waits {patience.when} ({patience.whole:g} s in all)"
            )
            return last
        message, _ = _error_message(payload)
        say(
            f"HTTP {status} from the server ({message or 'no reason given'}): "
            f"waiting {asked:g} s as it asks (Retry-After) before attempt "
            f"{attempt + 1} of {attempts}"
        )
        time.sleep(asked)


def _noted(message: str, note: str) -> str:
    if not note:
        return message
    return f"{message}; {note}" if message else note


def retry_after_seconds(value: str | None, now: dt.datetime | None = None) -> float | None:
    """A Retry-After header as seconds from now: whole seconds or an HTTP date
    (a past date is 0); None when absent or unreadable, and the backoff applies."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, as HTTP dates are
        when = when.replace(tzinfo=dt.UTC)
    now = now or dt.datetime.now(dt.UTC)
    return max(0.0, (when - now).total_seconds())


def _answer(status: int, payload: Any) -> Answer:
    """What an answer of the upload endpoint means for the document.

    Only BenchHub's own refusal marks a document rejected; an answer from
    anything else (a wrong path's 404, another site's page) leaves it as it
    was, and so does a 2xx that is not BenchHub's JSON: removing the document
    on a page that merely answered 200 would lose the run.
    """
    url = payload.get("url") if isinstance(payload, dict) else None
    html_url = payload.get("html_url") if isinstance(payload, dict) else None
    state = payload.get("status") if isinstance(payload, dict) else None
    state = state if isinstance(state, str) else None
    message, details = _error_message(payload)
    if status in (200, 201) and not isinstance(payload, dict):
        return Answer(MISDIRECTED, status, message=message)
    if status == 201:
        return Answer(CREATED, status, url, html_url=html_url, submission_status=state)
    if status == 200:
        return Answer(STORED, status, url, html_url=html_url, submission_status=state)
    if status in (401, 403):
        return Answer(UNAUTHORIZED, status, message=message)
    if status == 429 or status >= 500:
        return Answer(UNREACHABLE, status, message=message)
    if status in (404, 405) or not (400 <= status < 500) or not _is_benchhub_error(payload):
        return Answer(MISDIRECTED, status, message=message)
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
    patience: Patience | None = None,
) -> Answer:
    answer = submit(server, token, document, backoff=backoff, patience=patience)
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
    patience: Patience | None = None,
) -> list[tuple[str, Answer]]:
    """Send every kept document; stop early when the server is down or the token
    wrong, or asks for a wait longer than ``patience`` has left."""
    results = []
    for document_uuid in outbox.uuids(include_rejected=include_rejected):
        try:
            document = outbox.load(document_uuid)
        except (OSError, ValueError) as exc:
            results.append((document_uuid, Answer(REJECTED, message=f"unreadable: {exc}")))
            continue
        answer = _settle(server, token, document, outbox, backoff, patience)
        results.append((document_uuid, answer))
        if answer.outcome in (UNREACHABLE, UNAUTHORIZED, MISDIRECTED):
            break  # the next ones would fail the same way; they stay for later
    return results


def server_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
