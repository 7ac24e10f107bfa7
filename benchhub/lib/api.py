"""One error shape for the whole API.

Every error answer is::

    {"error": {"code": "invalid_document",
               "message": "The document has 2 errors.",
               "details": [{"path": "$.runs[0].measurements[3].value",
                            "message": "'x' is not of type 'number'"}]}}

``details`` is present when there is something to point at.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApiError(exceptions.APIException):
    """Raise from a view or service to answer with the common error shape."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int = status.HTTP_400_BAD_REQUEST,
        code: str = "invalid",
        details: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.details = details or []


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


_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
    exceptions.ParseError: "malformed_request",
}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: let Django report it as a 500
    if isinstance(exc, ApiError):
        response.data = error_body(exc.error_code, str(exc.detail), exc.details)
    elif isinstance(exc, exceptions.ValidationError):
        details = _flatten(exc.detail)
        message = "; ".join(
            f"{d['path'].removeprefix('$.') if d['path'] != '$' else 'request'}: {d['message']}"
            for d in details[:3]
        )
        response.data = error_body("invalid", message or "invalid request", details)
    else:
        code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), "error")
        response.data = error_body(code, str(exc.detail))
    return response


def not_found(request, exception=None) -> HttpResponse:
    """handler404: scripts calling /api/ get JSON, people get the page."""
    if request.path.startswith("/api/"):
        body = error_body("not_found", f"No API endpoint at {request.path}")
        return JsonResponse(body, status=404)
    return page_not_found(request, exception)
