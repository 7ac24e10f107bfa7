"""``?ordering=`` on API lists: each list has one order, and says which.

A list is cursor-paginated on fixed columns (``benchhub.lib.pagination``), so
no other order is offered. Clients of other DRF APIs send ``ordering=`` all
the same, and got, without a word, the list in its own order (submissions,
the dimension lists, benchmarks) or "unknown filter" (runs, measurements).
The list's own order is taken; any other is a 400 naming the value and the
one accepted. The OpenAPI document lists ``ordering`` on every list with
that one value (``FixedOrdering.get_schema_operation_parameters`` and, for
the lists django-filter filters, ``FilterWithFixedOrderingScheme``).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from rest_framework.exceptions import ValidationError
from rest_framework.filters import BaseFilterBackend
from rest_framework.request import Request
from rest_framework.settings import api_settings

from benchhub.lib.api import ApiError

ORDERING_PARAM = "ordering"


def list_ordering(view: Any) -> str:
    """The order a list answers in, as ``ordering=`` spells it: the view's
    ``ordering``, else its pagination's (the cursor's columns)."""
    ordering = getattr(view, "ordering", None)
    if ordering is None:
        ordering = view.pagination_class.ordering
    return ordering if isinstance(ordering, str) else ",".join(ordering)


def refuse_unknown_parameters(request: Request, view: Any) -> None:
    """A list without a filter set of its own (submissions, benchmarks, the
    dimension lists' plain fields) refuses a query parameter it does not
    know, as the runs' and measurements' filter sets do: a typo
    (``cpu_modle=``) must not silently answer the whole list."""
    if getattr(view, "filterset_class", None) is not None:
        return  # it refuses them itself (benchhub.results.filters)
    known = {
        ORDERING_PARAM,
        api_settings.URL_FORMAT_OVERRIDE,
        *getattr(view, "filterset_fields", ()),
    }
    pagination = getattr(view, "pagination_class", None)
    for name in ("cursor_query_param", "page_size_query_param"):
        known.add(getattr(pagination, name, None))
    unknown = [key for key in request.query_params if key not in known]
    if unknown:
        raise ValidationError(
            {key: "unknown filter; see /api/docs/ for the list" for key in unknown}
        )


def refuse_empty_parameters(request: Request, view: Any) -> None:
    """A list's parameter given empty (``submission=``, ``page_size=``) is a
    400 naming it: it was read as absent, and a script whose variable was
    unset got every row as if it had asked for them. A filter set that has
    an explicit empty value says how to ask for it (``empty_hint``)."""
    hint = getattr(getattr(view, "filterset_class", None), "empty_hint", None)
    empty = [
        key
        for key in request.query_params
        if key != api_settings.URL_FORMAT_OVERRIDE  # content negotiation, not the list's
        and any(not value.strip() for value in request.query_params.getlist(key))
    ]
    if empty:
        raise ValidationError(
            {
                key: "given empty; leave it out, or give a value" + (hint(key) if hint else "")
                for key in empty
            }
        )


class FixedOrdering(BaseFilterBackend):
    """Refuses an ``ordering`` other than the list's own, a parameter the
    list does not know, and one given empty; filters nothing."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        refuse_unknown_parameters(request, view)
        refuse_empty_parameters(request, view)
        accepted = list_ordering(view)
        for given in request.query_params.getlist(ORDERING_PARAM):
            if given != accepted:
                raise ApiError(
                    f"{ORDERING_PARAM}: {given!r} is not an order of this list; "
                    f"accepted: {accepted} (its only order)",
                    code="invalid",
                    details=[{"path": f"$.{ORDERING_PARAM}", "message": f"accepted: {accepted}"}],
                )
        return queryset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        accepted = list_ordering(view)
        return [
            {
                "name": ORDERING_PARAM,
                "required": False,
                "in": "query",
                "description": f"the list's only order, {accepted}; any other is a 400",
                "schema": {"type": "string", "enum": [accepted]},
            }
        ]


class FilterWithFixedOrdering(FixedOrdering, DjangoFilterBackend):
    """The lists' filters (django-filter), after the ordering is checked;
    ``ordering`` is no filter of theirs, so they do not see it."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        queryset = FixedOrdering.filter_queryset(self, request, queryset, view)
        return DjangoFilterBackend.filter_queryset(self, request, queryset, view)

    def get_filterset_kwargs(self, request: Request, queryset: QuerySet, view: Any) -> dict:
        kwargs = super().get_filterset_kwargs(request, queryset, view)
        data = kwargs["data"].copy()
        data.pop(ORDERING_PARAM, None)
        kwargs["data"] = data
        return kwargs


class FilterWithFixedOrderingScheme(DjangoFilterExtension):
    """drf-spectacular describes a DjangoFilterBackend subclass by its filter
    set alone, so without this the lists it filters (runs, measurements, the
    CSV export, the dimension lists) did not document ``ordering``."""

    target_class = "benchhub.lib.ordering.FilterWithFixedOrdering"
    priority = 1

    def get_schema_operation_parameters(self, auto_schema: Any, *args: Any, **kwargs: Any) -> list:
        filters = super().get_schema_operation_parameters(auto_schema, *args, **kwargs)
        return filters + self.target.get_schema_operation_parameters(auto_schema.view)
