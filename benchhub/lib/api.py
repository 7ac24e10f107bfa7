"""One error shape for the whole API.

Every error answer is::

    {"error": {"code": "invalid_document",
               "message": "The document has 2 errors.",
               "details": [{"path": "$.runs[0].measurements[3].value",
                            "message": "'x' is not of type 'number'"}]}}

``details`` is present when there is something to point at.
"""

from __future__ import annotations

import logging
import re
import sys
import uuid
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.exceptions import (
    BadRequest,
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousOperation,
)
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.template import loader
from django.urls import Resolver404, resolve
from django.views import csrf, defaults
from rest_framework import exceptions, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.settings import api_settings

logger = logging.getLogger("benchhub.api")


class FieldErrors(ValueError):
    """Input refused by a service or selector: ``errors`` maps each offending field or
    query parameter to why; the message names them all."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{key}: {message}" for key, message in errors.items()))
        self.errors = errors


class ApiError(exceptions.APIException):
    """Raise from a view or service to answer with the common error shape."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int = status.HTTP_400_BAD_REQUEST,
        code: str = "invalid",
        details: list[dict[str, str]] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.details = details or []
        # Seconds, sent as Retry-After: every 503 says when to send it again.
        self.retry_after = retry_after


def benchmark_page_error(exc: FieldErrors) -> ApiError:
    """A refusal of an endpoint of one benchmark named in its path (its leaderboard, its
    history): 404 when the path names no benchmark, else a 400 naming each parameter."""
    unknown = "benchmark" in exc.errors
    return ApiError(
        str(exc),
        status_code=404 if unknown else 400,
        code="not_found" if unknown else "invalid",
        details=[{"path": f"$.{key}", "message": message} for key, message in exc.errors.items()],
    )


class FormatNegotiation(DefaultContentNegotiation):
    """DRF's, but ``?format=`` naming a format the endpoint lacks is a 400
    naming the parameter: DRF answered 404 "Not found." to
    /api/v1/runs/?format=csv, as if the list were not there. (The
    comparisons and the OpenAPI document read their format themselves.)"""

    def filter_renderers(self, renderers, format):
        kept = [renderer for renderer in renderers if renderer.format == format]
        if not kept:
            name = api_settings.URL_FORMAT_OVERRIDE
            message = f"{format!r} is not a format of this endpoint; leave {name} out"
            details = [{"path": f"$.{name}", "message": message}]
            raise ApiError(f"{name}: {message}", details=details)
        return kept


def upload_too_large() -> ApiError:
    limit = settings.BENCHHUB_MAX_UPLOAD_BYTES
    return ApiError(
        f"The body is larger than the upload limit of {limit} bytes; "
        "split the runs over several submissions",
        status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        code="too_large",
    )


def refuse_declared_oversize(request) -> None:
    """Answer 413 from the Content-Length alone, before reading the body."""
    declared = request.META.get("CONTENT_LENGTH")
    if declared and declared.isdigit() and int(declared) > settings.BENCHHUB_MAX_UPLOAD_BYTES:
        raise upload_too_large()


def error_body(code: str, message: str, details: list[dict[str, str]] | None = None) -> dict:
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    return {"error": body}


def _flatten(detail: Any, path: str = "$") -> list[dict[str, str]]:
    """DRF's nested ValidationError detail → a flat list of (path, message)."""
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            sub = path if key == "non_field_errors" else f"{path}.{key}"
            out.extend(_flatten(value, sub))
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            return [{"path": path, "message": str(item)} for item in detail]
        out = []
        for index, item in enumerate(detail):
            out.extend(_flatten(item, f"{path}[{index}]"))
        return out
    return [{"path": path, "message": str(detail)}]


def _as_api_exception(exc: Exception) -> Exception:
    """Django's own request errors, which DRF leaves to Django's HTML pages (or,
    for PermissionDenied and Http404, answers with its own words for any of
    them): each with its own message, which says what was refused."""
    if isinstance(exc, Http404):
        return exceptions.NotFound(str(exc) or None)
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, RequestDataTooBig):
        return upload_too_large()
    if isinstance(exc, UnreadablePostError):
        return ApiError("The body could not be read to its end", code="malformed_request")
    if isinstance(exc, SuspiciousOperation | BadRequest):
        return ApiError(_refusal_reason(exc) or "Bad request", code="bad_request")
    return exc


# Django's own text for an unknown Host advises adding it to ALLOWED_HOSTS:
# advice for the operator, who finds it in the log (django.security.DisallowedHost,
# at error level) and on DEBUG's page, not for whoever sent the request.
UNKNOWN_HOST = "This site does not answer to the host name the request was sent to"


def _refusal_reason(exc: Exception) -> str:
    """What the sender of a request Django refused is told: the exception's
    own text, but no server configuration for an unknown host."""
    if isinstance(exc, DisallowedHost):
        return UNKNOWN_HOST
    return str(exc)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    # Imported here: rest_framework.views reads DEFAULT_PARSER_CLASSES, whose
    # parser (benchhub.lib.jsonbody) imports this module.
    from rest_framework.views import exception_handler as drf_exception_handler
    from rest_framework.views import set_rollback

    exc = _as_api_exception(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        set_rollback()
        trouble = database_trouble(exc)
        if trouble is not None:
            return Response(
                _logged_trouble(context["request"], exc, trouble),
                status=503,
                headers={"Retry-After": str(trouble.retry_after)},
            )
        return Response(_logged_server_error(context["request"], exc), status=500)
    if isinstance(exc, ApiError):
        response.data = error_body(exc.error_code, str(exc.detail), exc.details)
        if exc.retry_after is not None:
            response["Retry-After"] = str(exc.retry_after)
    elif isinstance(exc, exceptions.ValidationError):
        details = _flatten(exc.detail)
        message = "; ".join(
            f"{d['path'].removeprefix('$.') if d['path'] != '$' else 'request'}: {d['message']}"
            for d in details[:3]
        )
        response.data = error_body("invalid", message or "invalid request", details)
    else:
        # DRF's codes (not_found, throttled …); its parse_error is named as
        # the site's other refusals of an unreadable body are.
        parse_error = isinstance(exc, exceptions.ParseError)
        code = "malformed_request" if parse_error else exc.get_codes()
        response.data = error_body(code, str(exc.detail))
    return response


def _logged_server_error(request: HttpRequest, exc: BaseException | None) -> dict:
    """The answer to an unexpected error: an id to quote, logged with the traceback."""
    error_id = uuid.uuid4().hex[:16]
    logger.error(
        "unexpected error %s on %s %s",
        error_id,
        request.method,
        request.path,
        exc_info=(type(exc), exc, exc.__traceback__) if exc else True,
        extra={"error_id": error_id},
    )
    return error_body(
        "server_error",
        f"An unexpected error occurred; it was logged as {error_id}. Nothing was stored.",
        [{"path": "$", "message": f"error id {error_id}"}],
    )


# What a client should wait before trying again while the database is away:
# a restart or a fail-over takes seconds.
RETRY_AFTER_SECONDS = 5
# ... and after a concurrent change broke its transaction: that change has
# committed or rolled back by the time the answer is sent.
CONFLICT_RETRY_AFTER_SECONDS = 1
# ... and while the database lacks rows of the benchmark catalog: an
# administrator has to run migrate, which takes minutes to be noticed, so
# a client that sends again at once only repeats the same 503.
CATALOG_RETRY_AFTER_SECONDS = 300


@dataclass(frozen=True)
class DatabaseTrouble:
    """Why the database refused a request's work, when it is a condition
    of the moment (the answer is 503 "send it again"), not a bug (500)."""

    code: str
    reason: str  # what happened, for the message and the page
    retry_after: int


_ROLLED_BACK = {
    # SQLSTATE class 40: PostgreSQL rolled the transaction back because of
    # a concurrent one. psycopg raises both as OperationalError, which read
    # as "the database is not answering" before.
    "40P01": (
        "a concurrent change and this request each waited for rows the other held "
        "(a deadlock), and the database rolled this request back"
    ),
    "40001": (
        "a concurrent change to the same rows stopped this request's transaction "
        "(a serialization failure), and the database rolled it back"
    ),
}
FOREIGN_KEY_VIOLATION = "23503"
# psycopg's diag.message_detail of a foreign key violation: a row refers to
# one that is gone, or a deleted row is still referred to. (In English: a
# server with other lc_messages gets the general sentence.)
_KEY = r"Key \([^)]*\)=\((?P<key>[^)]*)\)"
_GONE = re.compile(_KEY + r' is not present in table "(?P<table>[^"]+)"')
_STILL_REFERRED = re.compile(_KEY + r' is still referenced from table "(?P<table>[^"]+)"')


def database_trouble(exc: BaseException | None) -> DatabaseTrouble | None:
    """What made the database refuse the request's work, when sending the
    request again is the remedy: a concurrent change broke its transaction
    (a deadlock, a serialization failure, a row it refers to deleted before
    its COMMIT checked the foreign keys), or the database refused, dropped
    or timed out the connection (a restart, a fail-over, a statement
    timeout). None for anything else: a bug."""
    cause = exc.__cause__ if isinstance(exc, DatabaseError) else None
    sqlstate = getattr(cause, "sqlstate", None)
    if isinstance(exc, OperationalError) and sqlstate in _ROLLED_BACK:
        return DatabaseTrouble(
            "concurrent_change", _ROLLED_BACK[sqlstate], CONFLICT_RETRY_AFTER_SECONDS
        )
    if isinstance(exc, IntegrityError) and sqlstate == FOREIGN_KEY_VIOLATION:
        detail = getattr(getattr(cause, "diag", None), "message_detail", None) or ""
        return DatabaseTrouble(
            "concurrent_change", _reference_lost(detail), CONFLICT_RETRY_AFTER_SECONDS
        )
    if isinstance(exc, (OperationalError, InterfaceError)):
        return DatabaseTrouble("unavailable", "the database is not answering", RETRY_AFTER_SECONDS)
    return None


def _reference_lost(detail: str) -> str:
    """The foreign key violation's detail, in the models' words. Every write
    checks what it refers to first: a row that vanished before the COMMIT
    was deleted by a concurrent change (an administrator, say)."""
    if found := _GONE.search(detail):
        return (
            f"the {_row_name(found['table'])} with id {found['key']} this request refers to "
            "was deleted by a concurrent change before the request could commit"
        )
    if found := _STILL_REFERRED.search(detail):
        return (
            f"a {_row_name(found['table'])} referring to the row this request deletes "
            "was stored by a concurrent change"
        )
    return "a row this request refers to was deleted by a concurrent change"


def _row_name(table: str) -> str:
    for model in apps.get_models():
        if model._meta.db_table == table:
            return str(model._meta.verbose_name)
    return f"row of {table}"


def _trouble_message(trouble: DatabaseTrouble) -> str:
    if trouble.code == "unavailable":
        first = f"The database is not answering; try again in {trouble.retry_after} seconds."
    else:
        seconds = "1 second" if trouble.retry_after == 1 else f"{trouble.retry_after} seconds"
        first = (
            f"{trouble.reason[0].upper()}{trouble.reason[1:]}: nothing of it was stored; "
            f"send it again in {seconds}."
        )
    return (
        f"{first} An upload that got this answer can be sent again as it is: "
        "a submission already stored is recognised by its uuid."
    )


def _logged_trouble(request: HttpRequest, exc: BaseException, trouble: DatabaseTrouble) -> dict:
    error_id = uuid.uuid4().hex[:16]
    logger.warning(
        "database %s %s on %s %s: %s",
        trouble.code.replace("_", " "),
        error_id,
        request.method,
        request.path,
        exc,
        extra={"error_id": error_id},
    )
    return error_body(
        trouble.code,
        _trouble_message(trouble),
        [{"path": "$", "message": f"error id {error_id}"}],
    )


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: scripts calling /api/ get JSON, people get the page."""
    if _is_api(request):
        message = f"No API endpoint at {request.path}"
        if not request.path.endswith("/") and _resolves(request.path + "/"):
            message += f"; did you mean {request.path}/ ?"
        return JsonResponse(error_body("not_found", message), status=404)
    # A page of BenchHub's own (header, a way back) with the view's reason
    # ("No run 42 that you may see"); Django's default page is a dead end.
    reason = ""
    if isinstance(exception, Http404) and not isinstance(exception, Resolver404):
        reason = next((arg for arg in exception.args[:1] if isinstance(arg, str)), "")
    page = loader.render_to_string(
        "404.html", {"reason": reason, "request_path": request.path}, request
    )
    return HttpResponse(page, status=404)


def _resolves(path: str) -> bool:
    try:
        match = resolve(path)
    except Http404:
        return False
    # urls.py routes the rest of /api/ here through csrf_exempt's wrapper.
    return getattr(match.func, "__wrapped__", match.func) is not not_found


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500, for what fails outside a DRF view (middleware, rendering)."""
    exc = sys.exc_info()[1]
    trouble = database_trouble(exc)
    if trouble is not None:
        body = _logged_trouble(request, exc, trouble)
        if _is_api(request):
            response = JsonResponse(body, status=503)
        else:
            # A page of its own, rendered without the request: base.html
            # asks the database who is signed in.
            page = loader.get_template("503.html").render(
                {
                    "seconds": trouble.retry_after,
                    "conflict": trouble.code == "concurrent_change",
                    "reason": trouble.reason,
                }
            )
            response = HttpResponse(page, status=503)
        response["Retry-After"] = str(trouble.retry_after)
        return response
    if _is_api(request):
        return JsonResponse(_logged_server_error(request, exc), status=500)
    return defaults.server_error(request)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler400: Django's own refusals (a bad Host header, a malformed body)."""
    if _is_api(request):
        exc = _as_api_exception(exception) if exception else None
        if isinstance(exc, ApiError):
            return JsonResponse(error_body(exc.error_code, str(exc.detail)), status=exc.status_code)
        return JsonResponse(error_body("bad_request", "Bad request"), status=400)
    # A page of BenchHub's own naming what was refused ("The number of GET/POST
    # parameters exceeded …", the Host header): Django's said "Bad Request
    # (400)" and nothing else.
    refused = isinstance(exception, SuspiciousOperation | BadRequest)
    reason = _refusal_reason(exception) if refused else ""
    try:
        page = loader.render_to_string("400.html", {"reason": reason}, request)
    except Exception:  # what was refused is the request itself: a page without it
        page = loader.render_to_string("400.html", {"reason": reason})
    return HttpResponse(page, status=400)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a session POST without its CSRF token."""
    if _is_api(request):
        message = f"CSRF check failed ({reason}); scripts authenticate with an API token"
        return JsonResponse(error_body("permission_denied", message), status=403)
    return csrf.csrf_failure(request, reason)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403, e.g. the CSRF check of a session POST outside DRF's views."""
    if _is_api(request):
        return JsonResponse(error_body("permission_denied", "Forbidden"), status=403)
    return defaults.permission_denied(request, exception)
