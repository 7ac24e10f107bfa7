"""/api/v1/history/<benchmark>/: a history over server versions for scripts."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.lib.api import benchmark_page_error
from benchhub.releases.data import history_as_data
from benchhub.releases.history import BY, InvalidHistory, history_build
from benchhub.results.apis import PARAMETER_DOCS


class HistoryApi(APIView):
    @extend_schema(
        operation_id="history_retrieve",
        parameters=[
            OpenApiParameter(
                "engine", str, required=True, description="the server whose versions are drawn"
            ),
            OpenApiParameter(
                "metric",
                str,
                description="a metric of the benchmark; default: the catalog's headline metric",
            ),
            OpenApiParameter(
                "by", str, enum=list(BY), description="each release (default) or each major"
            ),
            OpenApiParameter(
                "minimum_effect",
                float,
                description="the smallest difference a verdict counts, in % (default 5)",
            ),
            *PARAMETER_DOCS,
        ],
        responses={200: OpenApiTypes.OBJECT},
        description="One metric over one server's versions, in version order (15.2 < 15.10 "
        "< 16.1): per version the median, quartiles, min, max and n of the measurements you "
        "may see, the machines they ran on, and the verdict against the previous version "
        "with its 95 % interval in the metric's unit. Every measurement filter applies; a "
        "parameter left open whose values differ within a version is set to its most "
        "measured value (named in chosen and notes). The same numbers as "
        "/compare/?x=version with the same filters.",
    )
    def get(self, request: Request, name: str) -> Response:
        try:
            history = history_build(user=request.user, benchmark_name=name, params=request.GET)
        except InvalidHistory as exc:
            raise benchmark_page_error(exc) from exc
        return Response(history_as_data(history))
