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
