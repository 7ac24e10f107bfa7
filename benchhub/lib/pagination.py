import re
from base64 import b64encode
from urllib import parse

from django.core.exceptions import ValidationError
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.utils.urls import replace_query_param

from benchhub.lib.api import ApiError
from benchhub.lib.collector import cyclic_gc_paused


def invalid_cursor(reason: str) -> ApiError:
    return ApiError(
        f"cursor: {reason}; use the next or previous URL of a list answer as it is",
        code="invalid",
        details=[{"path": "$.cursor", "message": reason}],
    )


class IdCursorPagination(CursorPagination):
    """Cursor pagination: stable under concurrent inserts and cheap on deep
    pages, where offsets would rescan.

    A cursor is opaque to clients but decodes to a position that is compared
    with the ordering column: a made-up one (``cD1hYmM=`` is "p=abc" against
    an integer id) is a 400 here, not a database error.

    Only the exact text the API wrote is taken. DRF's base64 decoding skips
    characters outside the alphabet, so ``%00`` decoded to nothing (the first
    page) and a real cursor with junk appended to that cursor's page: a
    client's mangled URL was answered as if it were right."""

    ordering = "-id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request) -> int:
        """``page_size`` when given: a whole number from 1 to max_page_size,
        else a 400 naming the range. DRF took any it could not read (1e9, 0,
        -5) for the default, silently, and put it in the next URL again."""
        given = request.query_params.get(self.page_size_query_param, "")
        if given == "":  # an empty form field means the default
            return self.page_size
        if re.fullmatch(r"[0-9]+", given) and 1 <= int(given) <= self.max_page_size:
            return int(given)
        expected = f"expected a whole number from 1 to {self.max_page_size}"
        raise ApiError(
            f"{self.page_size_query_param}: {expected}, not {given!r}",
            code="invalid",
            details=[{"path": f"$.{self.page_size_query_param}", "message": expected}],
        )

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
        return parameters

    def paginate_queryset(self, queryset, request, view=None):
        self._model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    @staticmethod
    def cursor_text(cursor: Cursor) -> str:
        """The one spelling of a cursor: what ``next``/``previous`` carry, and
        what ``decode_cursor`` compares a given cursor with."""
        tokens = {}
        if cursor.offset != 0:
            tokens["o"] = str(cursor.offset)
        if cursor.reverse:
            tokens["r"] = "1"
        if cursor.position is not None:
            tokens["p"] = cursor.position
        return b64encode(parse.urlencode(tokens).encode("ascii")).decode("ascii")

    def encode_cursor(self, cursor: Cursor) -> str:
        return replace_query_param(self.base_url, self.cursor_query_param, self.cursor_text(cursor))

    def decode_cursor(self, request) -> Cursor | None:
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise invalid_cursor("not a cursor this API wrote") from None
        if cursor is None:
            return cursor
        given = request.query_params[self.cursor_query_param]
        if given != "" and given != self.cursor_text(cursor):  # empty: the first page
            raise invalid_cursor("not a cursor this API wrote")
        if cursor.position is None:
            return cursor
        field = self._model._meta.get_field(self.ordering[0].lstrip("-"))
        try:
            if "\x00" in cursor.position:
                raise ValidationError("NUL")
            field.to_python(cursor.position)
        except ValidationError:
            raise invalid_cursor(f"its position is not a valid {field.name}") from None
        return cursor


# A list view whose page (up to max_page_size rows, each several model instances
# and a dict per nested object) is read and serialized with the cyclic collector
# paused (benchhub.lib.collector), and left to reference counting once answered.
# (Comments, not a docstring: drf-spectacular would publish a docstring as the
# description of every view that inherits it.)
#
# DRF's request and view reference each other, and through the view the
# paginator's page and the serializer hung on that cycle: a page of 1,000
# measurements left 34,000 objects (ten model instances a row) for the collector
# to find, whose passes also walked them over and over while the page was built.
# Here the rows are the serializer's plain list (its ``data`` would keep the
# serializer, and so the page, through ``ReturnList.serializer``); once the
# answer is rendered the paginator lets go of the page and the view of its
# request and response. A page of 1,000 measurements had swung between ~160 and
# ~440 ms by whether a full pass fell in it (docs/performance.md, Lists).
#
# The pause covers the query too, where the page's instances are made; other
# threads of the process allocate with the collector off meanwhile, and the
# first allocation after the last overlapping page sweeps what they left.
# Rendered as JSON only (settings: the browsable API, which would read the page
# and ReturnList.serializer again, is off); without a paginator, DRF's own list.
class PageBuiltWithCollectorPaused:
    def list(self, request, *args, **kwargs):
        if self.paginator is None:
            return super().list(request, *args, **kwargs)
        with cyclic_gc_paused():
            queryset = self.filter_queryset(self.get_queryset())
            page = self.paginate_queryset(queryset)
            if page is None:
                return super().list(request, *args, **kwargs)
            rows = self.get_serializer(many=True).to_representation(page)
            response = self.get_paginated_response(rows)
            response.add_post_render_callback(self._let_go)
            return response

    def _let_go(self, response) -> None:
        # The rows are written out: the cycles between the view, the request and
        # the response (its rendering context names all three) are cut, and
        # reference counting frees the page when the response is sent.
        self.paginator.page = None
        self.request = self.response = response.renderer_context = None
