"""Community baselines over REST: what ``benchhub-agent run --like`` prints
beside your figures."""

from __future__ import annotations

import math
import re
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from benchhub.baselines import selectors
from benchhub.baselines.models import Baseline
from benchhub.lib.api import ApiError
from benchhub.results.filters import parameter_query_value

_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


class BaselineOutput(serializers.ModelSerializer):
    metric = serializers.CharField(source="metric.name")
    unit = serializers.CharField(source="metric.unit")
    direction = serializers.CharField(source="metric.direction")
    min = serializers.FloatField(source="minimum")
    max = serializers.FloatField(source="maximum")

    class Meta:
        model = Baseline
        fields = (
            "fingerprint",
            "metric",
            "unit",
            "direction",
            "parameters",
            "n",
            "median",
            "q1",
            "q3",
            "min",
            "max",
            "mad",
            "computed_at",
        )


_FINGERPRINT_LOOKS = (
    "64 hex digits (0-9, a-f), a run's comparability key: the 'fingerprint' of /api/v1/runs/<id>/"
)


def _fingerprint(request: Request) -> str:
    """The key, in lower case as the filters take it. A value that is there
    but not a key is called malformed, not missing: "required" sent a client
    that had given one looking for a parameter it had not left out."""
    given = request.query_params.get("fingerprint", "")
    value = given.strip().lower()
    if _FINGERPRINT.fullmatch(value):
        return value
    raise _parameter_error("fingerprint", given, f"a fingerprint is {_FINGERPRINT_LOOKS}")


def _metric(request: Request) -> str:
    """The metric's name, required: without it the rank answered 404 "No
    baseline yet for metric ''", as if a metric had been asked for. A name
    the catalog lacks is left to that 404."""
    given = request.query_params.get("metric", "")
    if given.strip():
        return given
    raise _parameter_error(
        "metric",
        given,
        "a metric is named as the catalog names it, e.g. tps (/api/v1/benchmarks/)",
    )


def _value(request: Request) -> float:
    """The value to rank: a finite number; malformed, not missing, when
    there but not one, as for the fingerprint."""
    given = request.query_params.get("value", "")
    try:
        value = float(given)
    except ValueError:
        value = math.nan
    if math.isfinite(value):
        return value
    raise _parameter_error("value", given, "a value is a finite number, e.g. 1250 or 1.25e3")


def _parameter_error(name: str, given: str, looks: str) -> ApiError:
    if not given.strip():
        return ApiError(
            f"{name}: required; {looks}",
            details=[{"path": f"$.{name}", "message": f"required; {looks}"}],
        )
    shown = given if len(given) <= 80 else f"{given[:80]}…"
    return ApiError(
        f"{name}: malformed, {shown!r} ({len(given)} characters) is not one; {looks}",
        details=[{"path": f"$.{name}", "message": f"malformed; {looks}"}],
    )


def _refuse_unknown_parameters(request: Request, known: set[str], *, points: bool) -> None:
    """A parameter the endpoint does not take is a 400 naming it: the list
    answered every metric and point of the key whatever ``metric=`` or
    ``param.clients=`` asked for, and the rank looked up ``clients=20``
    (without ``param.``) at no parameters at all. The format override
    (``?format=json``, DRF's URL_FORMAT_OVERRIDE, as benchhub.lib.ordering
    reads it) is taken everywhere and goes unsaid. Not that function itself:
    these endpoints say what they take, where a list points to its docs."""
    format_override = api_settings.URL_FORMAT_OVERRIDE
    unknown = [
        key
        for key in request.query_params
        if key not in known and key != format_override and not (points and key.startswith("param."))
    ]
    if unknown:
        takes = ", ".join(sorted(known)) + (", param.<name>" if points else "")
        raise ApiError(
            f"unknown parameter{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}; "
            f"this endpoint takes {takes}",
            details=[{"path": f"$.{key}", "message": "unknown parameter"} for key in unknown],
        )


def _refuse_null_characters(request: Request) -> None:
    """A NUL in a parameter's name or value is a 400 naming it, as in the
    other lists: PostgreSQL's text cannot hold one, and ``metric=%00`` failed
    in the database (500)."""
    found = [
        key
        for key, values in request.query_params.lists()
        if "\x00" in key or any("\x00" in value for value in values)
    ]
    if found:
        raise ApiError(
            f"{found[0]}: a null character is not allowed",
            details=[
                {"path": f"$.{key}", "message": "a null character is not allowed"} for key in found
            ],
        )


def _point(request: Request) -> dict[str, Any]:
    """param.clients=20 (or 20.0, 2e1) → {"clients": 20}: the filters' rule."""
    return {
        key.removeprefix("param."): parameter_query_value(value)
        for key, value in request.query_params.items()
        if key.startswith("param.")
    }


class BaselineListApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("fingerprint", str, required=True)],
        responses=inline_serializer("BaselineList", fields={"results": BaselineOutput(many=True)}),
        description="Every baseline (per metric and point) of one comparability key.",
    )
    def get(self, request: Request) -> Response:
        # every metric and point of the key: /rank/ takes a metric and a point
        _refuse_unknown_parameters(request, {"fingerprint"}, points=False)
        _refuse_null_characters(request)
        baselines = selectors.baseline_list(fingerprint=_fingerprint(request))
        return Response({"results": BaselineOutput(baselines, many=True).data})


class BaselineRankApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("fingerprint", str, required=True),
            OpenApiParameter("metric", str, required=True),
            OpenApiParameter("value", float, required=True),
            OpenApiParameter("param.<name>", str, description="the point, e.g. param.clients=20"),
        ],
        description=(
            "Where a value stands among the approved results of a key, metric and point: "
            "'percentile' is the share (in %) of results it does better than, by the metric's "
            "direction, ties counting half. Computed from the baseline's histogram "
            "(values counted at 4 significant digits): exact but for the results within "
            "0.05 % of the value, which count half like ties, so it is within 50 times their "
            "share of the exact rank. 'percentile' is null, and 'unranked' says why, where a rank "
            "means nothing: fewer than RANK_MIN_RESULTS (default 10) results, or all of them "
            "equal. 'n' is always the number of results."
        ),
        responses=inline_serializer(
            "BaselineRank",
            fields={
                "n": serializers.IntegerField(),
                "percentile": serializers.FloatField(allow_null=True),
                "unranked": serializers.CharField(),
                "direction": serializers.CharField(),
                "median": serializers.FloatField(),
                "value": serializers.FloatField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        _refuse_unknown_parameters(request, {"fingerprint", "metric", "value"}, points=True)
        _refuse_null_characters(request)
        fingerprint = _fingerprint(request)
        metric = _metric(request)
        value = _value(request)
        point = _point(request)
        baseline = selectors.baseline_get(fingerprint=fingerprint, metric=metric, parameters=point)
        if baseline is None:
            raise ApiError(
                f"No baseline yet for metric {metric!r} at {point or 'no parameters'} "
                "under this key",
                status_code=404,
                code="not_found",
            )
        unranked = selectors.rank_refusal(baseline, baseline.n)
        return Response(
            {
                "n": baseline.n,
                "percentile": None if unranked else selectors.baseline_percentile(baseline, value),
                "unranked": unranked,
                "direction": baseline.metric.direction,
                "median": baseline.median,
                "value": value,
            }
        )
