"""/api/v1/leaderboards/<benchmark>/: the leaderboard's rows for scripts."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.leaderboards.data import leaderboard_as_data
from benchhub.leaderboards.selectors import InvalidLeaderboard, leaderboard_build
from benchhub.lib.api import benchmark_page_error
from benchhub.results.apis import PARAMETER_DOCS


class LeaderboardApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "metric",
                str,
                description="a metric of the benchmark with a better direction; default: the "
                "catalog's headline metric",
            ),
            *PARAMETER_DOCS,
        ],
        responses={200: OpenApiTypes.OBJECT},
        description="One row per environment (hardware, storage, OS, server and settings "
        "profile), best first: the median of its runs' values (each run at its best point, or "
        "at the point param.<name> fixes), n runs, % of the best and the verdict against it. "
        "Every measurement filter applies.",
    )
    def get(self, request: Request, name: str) -> Response:
        try:
            board = leaderboard_build(user=request.user, benchmark_name=name, params=request.GET)
        except InvalidLeaderboard as exc:
            raise benchmark_page_error(exc) from exc
        return Response(leaderboard_as_data(board))
