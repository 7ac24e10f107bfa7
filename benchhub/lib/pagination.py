import re

from django.core.exceptions import ValidationError
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination

from benchhub.lib.api import ApiError


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
    an integer id) is a 400 here, not a database error."""

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

    def decode_cursor(self, request) -> Cursor | None:
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise invalid_cursor("not a cursor this API wrote") from None
        if cursor is None or cursor.position is None:
            return cursor
        field = self._model._meta.get_field(self.ordering[0].lstrip("-"))
        try:
            if "\x00" in cursor.position:
                raise ValidationError("NUL")
            field.to_python(cursor.position)
        except ValidationError:
            raise invalid_cursor(f"its position is not a valid {field.name}") from None
        return cursor
