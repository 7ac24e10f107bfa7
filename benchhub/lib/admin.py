from collections.abc import Callable

from django.contrib import admin
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse

ADMIN_PREFIX = "/admin/"  # benchhub/urls.py


class ReadOnlyAdmin(admin.ModelAdmin):
    """Listed and shown only: the rows are written elsewhere (a service, a
    file mirrored by migrate), which the subclass's docstring names."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class AdminQueryMiddleware:
    """A 400 naming the parameter for an admin query that holds a NUL: the
    changelists filter on what their query names (?status__exact=…,
    ?username=…, Django's own UserAdmin too), and PostgreSQL text cannot hold
    a NUL: the query's DataError was a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(ADMIN_PREFIX):
            for name, values in request.GET.lists():
                if "\x00" in name or any("\x00" in value for value in values):
                    raise BadRequest(f"{name!r}: a null character is not allowed in a query")
        return self.get_response(request)
