from collections.abc import Callable

from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import BadRequest, ValidationError
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

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
    """A 400 naming the parameter for an admin request a changelist would
    turn into a 500:

    - a query holding a NUL: the changelists filter on what their query
      names (?status__exact=…, Django's own UserAdmin's ?username=…), and
      PostgreSQL text cannot hold one (a DataError);
    - an action's selected rows that are not ids (_selected_action=abc):
      Django filters the changelist with them as they came (a ValueError)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(ADMIN_PREFIX):
            for name, values in request.GET.lists():
                if "\x00" in name or any("\x00" in value for value in values):
                    raise BadRequest(f"{name!r}: a null character is not allowed in a query")
            if request.method == "POST" and ACTION_CHECKBOX_NAME in request.POST:
                _selected_rows_checked(request)
        return self.get_response(request)


def _selected_rows_checked(request: HttpRequest) -> None:
    try:
        model_admin = getattr(resolve(request.path_info).func, "model_admin", None)
    except Resolver404:
        return
    if model_admin is None:
        return
    key = model_admin.model._meta.pk
    for value in request.POST.getlist(ACTION_CHECKBOX_NAME):
        try:
            key.to_python(value)
        except ValidationError:
            raise BadRequest(
                f"{ACTION_CHECKBOX_NAME}: {value[:40]!r} is not the id of a row"
            ) from None
