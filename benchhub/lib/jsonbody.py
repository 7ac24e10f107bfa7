"""Request bodies as RFC 8259 and RFC 9110 say: JSON is UTF-8 text, media
types compare case-insensitively, and a body may come chunked.

Every JSON body the API reads goes through :func:`parse_json`: bytes that
are not UTF-8 JSON are a 400, and a number, text or nesting that PostgreSQL
or the code behind cannot hold is a 400 naming its JSON path (the bounds of
``benchhub_contract.schema.bounds_errors``, shared with the agent).
"""

from __future__ import annotations

import codecs
import io
import json
from collections.abc import Callable
from typing import Any

from benchhub_contract.schema import JSONTooDeep, bounds_errors, loads
from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.http import parse_header_parameters
from rest_framework import status
from rest_framework.parsers import BaseParser

from benchhub.lib.api import ApiError, error_body, refuse_declared_oversize, upload_too_large

JSON_MEDIA_TYPE = "application/json"
_UTF8 = {"utf-8", "utf8"}


def require_json_media_type(content_type_header: str | None) -> None:
    """415 unless the Content-Type is application/json, in any letter case,
    with no charset or charset=utf-8 (RFC 8259 allows no other)."""
    try:
        media_type, params = parse_header_parameters(content_type_header or "")
    except ValueError:  # an RFC 2231 parameter with an unknown charset
        media_type, params = "", {}
    if media_type != JSON_MEDIA_TYPE:
        given = f"not {content_type_header!r}" if content_type_header else "and none was given"
        raise ApiError(
            f"Content-Type must be {JSON_MEDIA_TYPE}, {given}",
            status_code=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            code="unsupported_media_type",
        )
    charset = params.get("charset")
    if charset is not None and charset.strip().lower() not in _UTF8:
        raise ApiError(
            f"JSON is UTF-8 text; charset={charset} is not accepted",
            status_code=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            code="unsupported_media_type",
        )


# Longest first: UTF-32 LE's mark begins with UTF-16 LE's.
_BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF8, "UTF-8"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def _byte_order_mark_problem(body: bytes) -> str | None:
    """What a body starting with a byte order mark gets told (Windows editors
    save one), instead of json's "Unexpected UTF-8 BOM (decode using
    utf-8-sig)" or "not UTF-8 text (byte 0)"."""
    for mark, encoding in _BYTE_ORDER_MARKS:
        if body.startswith(mark):
            shown = mark.hex(" ").upper()
            if encoding == "UTF-8":
                return (
                    f"The body starts with a byte order mark ({shown}), which JSON text must "
                    "not have: send it without those 3 bytes (save the file as UTF-8 without BOM)"
                )
            return (
                f"The body is {encoding} text (it starts with the byte order mark {shown}); "
                "JSON is sent as UTF-8, without a byte order mark"
            )
    return None


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body``, or a 400 in the error shape. Values out of
    bounds are kept so that the caller can report them with their paths."""
    problem = _byte_order_mark_problem(body)
    if problem:
        raise ApiError(problem, code="malformed_json")
    try:
        return loads(body)
    except UnicodeDecodeError as exc:
        raise ApiError(
            f"The body is not UTF-8 text (byte {exc.start}); JSON is sent as UTF-8",
            code="malformed_json",
        ) from None
    except JSONTooDeep:
        raise ApiError("The body nests JSON too deeply to read", code="malformed_json") from None
    except json.JSONDecodeError as exc:
        raise ApiError(
            f"The body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            code="malformed_json",
        ) from None


def read_json_body(request: HttpRequest) -> Any:
    """The body of an upload: 413 over the limit, 415 if not JSON, 400 if
    unreadable. Bounds are left to the document's validation."""
    refuse_declared_oversize(request)
    require_json_media_type(request.META.get("CONTENT_TYPE"))
    body = request.body
    if len(body) > settings.BENCHHUB_MAX_UPLOAD_BYTES:
        raise upload_too_large()
    return parse_json(body)


class JsonParser(BaseParser):
    """DRF's parser for every other JSON endpoint, by the same rules; values
    out of bounds are refused here, since no document validation follows.
    DRF's JSONParser answered deep nesting with a 500 and decoded by any
    charset given (tests/lib/test_json_parser.py)."""

    media_type = JSON_MEDIA_TYPE

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        require_json_media_type(media_type)
        data = parse_json(stream.read() if stream is not None else b"")
        errors = bounds_errors(data)
        if errors:
            raise ApiError(
                f"{errors[0].path}: {errors[0].message}",
                code="invalid",
                details=[error.as_dict() for error in errors],
            )
        return data


class ContentCodingMiddleware:
    """415 for an API request whose body comes with a content coding
    (Content-Encoding: gzip, br …). Bodies are read as sent, never
    decompressed: a gzipped upload was refused as "not UTF-8 text", and a
    plain one under a wrong header was stored as if the header were not
    there. RFC 9110 (15.5.16) answers a coding the server does not take
    with 415 and, in Accept-Encoding, the codings it does."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        coding = request.META.get("HTTP_CONTENT_ENCODING", "")
        codings = {c.strip().lower() for c in coding.split(",")} - {"", "identity"}
        if codings and request.path.startswith("/api/"):
            message = f"Content-Encoding {coding!r} is not accepted; send the body uncompressed"
            response = JsonResponse(
                error_body("unsupported_media_type", message),
                status=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            )
            response["Accept-Encoding"] = "identity"
            return response
        return self.get_response(request)


try:  # what gunicorn raises reading a request body whose framing is broken
    from gunicorn.http.errors import ParseException as _GunicornParseError
except ImportError:  # another server (runserver, the embedded default)
    _GunicornParseError = ValueError
_BROKEN_BODY = (OSError, ValueError, _GunicornParseError)


class ChunkedBodyMiddleware:
    """Reads a chunked request body (Transfer-Encoding: chunked, no
    Content-Length) so that Django sees it: Django reads CONTENT_LENGTH bytes
    of wsgi.input, which for such a request is none, and an upload arrived
    empty. gunicorn removes the chunk framing; at most
    DATA_UPLOAD_MAX_MEMORY_SIZE bytes are read, more is a 413."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        meta = request.META
        chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not meta.get("CONTENT_LENGTH") and "wsgi.input" in meta:
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            try:
                body = _read_at_most(meta["wsgi.input"], limit + 1)
            except _BROKEN_BODY as exc:
                # The server's own parse of the framing: a chunk size that is
                # not hex, a chunk without its CRLF, the body cut short. It
                # reached the site as an exception, answered 500.
                message = f"the chunked request body is broken ({exc}); nothing was read"
                return JsonResponse(error_body("malformed_request", message), status=400)
            if len(body) > limit:
                error = upload_too_large()
                return JsonResponse(
                    error_body(error.error_code, str(error.detail)), status=error.status_code
                )
            meta["CONTENT_LENGTH"] = str(len(body))
            request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[attr-defined]
        return self.get_response(request)


def _read_at_most(stream: Any, size: int) -> bytes:
    parts, remaining = [], size
    while remaining > 0:
        part = stream.read(min(remaining, 64 * 1024))
        if not part:
            break
        parts.append(part)
        remaining -= len(part)
    return b"".join(parts)
