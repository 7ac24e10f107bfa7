"""gunicorn's answers to the requests it cannot parse, as the site answers
bad input: a 4xx in the API's JSON error shape, never a 5xx.

gunicorn refuses such a request before Django sees it (a request line over
``limit_request_line``, too many or too large headers, a malformed line or
header) with a page of HTML of its own: an API client got ``<html>…`` where
it reads ``{"error": …}``. Two of them came as a 5xx: a Transfer-Encoding
gunicorn does not know (501) and a SCRIPT_NAME header from a proxy's address
that the path does not start with (500): the client's request, not the
server, is wrong (a SCRIPT_NAME the operator set wrongly in the environment
now says so with a 400 to every request, still naming the problem). The
limits themselves stay gunicorn's: a request line of 4094 bytes holds any
comparison URL (the seed comparisons' are under 150), and raising it only
lets more through to Django.

gunicorn has no setting for its error answers: ``Worker.handle_error``
writes them with ``gunicorn.util.write_error``. gunicorn.conf.py's
``post_worker_init`` hook calls :func:`answer_in_json` in each worker process,
after the fork: the worker class stays gthread, as measured.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util
from gunicorn.http import errors

# Each status gunicorn answers a request it cannot parse with, as the API's code.
_CODES = {
    400: "bad_request",
    403: "permission_denied",
    414: "too_large",
    417: "expectation_failed",
    431: "too_large",
}


class _ClientRequestError(errors.InvalidSchemeHeaders):
    """A 400 in gunicorn's handle_error (one of its client errors whose
    message is its own text), carrying the reason gunicorn gave."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def write_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's error answer in the API's shape: {"error": {"code", "message"}}."""
    code = _CODES.get(status_int, "server_error" if status_int >= 500 else "bad_request")
    body = json.dumps({"error": {"code": code, "message": mesg or reason}}).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


def answer_in_json(worker: Any) -> None:
    """Make ``worker`` (this process's) answer what it cannot parse in JSON, with a 4xx."""
    util.write_error = write_error
    handle_error = worker.handle_error

    def handle_client_error(req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if isinstance(exc, errors.UnsupportedTransferCoding | errors.ConfigurationProblem):
            exc = _ClientRequestError(str(exc))
        handle_error(req, client, addr, exc)

    worker.handle_error = handle_client_error
