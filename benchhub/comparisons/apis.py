"""The comparison endpoint, /api/v1/comparisons/: the numbers a comparison's
chart draws, as JSON or CSV."""

from __future__ import annotations

from benchhub_contract.verdicts import Verdict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.comparisons.aggregation import Comparison, Point
from benchhub.comparisons.exports import (
    comparison_csv_response,
    median_shown,
    ratio_rounded,
    relative_rounded,
    statistic_rounded,
)
from benchhub.comparisons.query import (
    AXIS_DIMENSIONS,
    PER,
    InvalidComparison,
    comparison_query_parse,
)
from benchhub.comparisons.selectors import (
    PooledParameter,
    comparison_build,
    comparison_may_pool,
    comparison_parameter_names,
    comparison_pooling,
)
from benchhub.lib.api import ApiError
from benchhub.results.apis import PARAMETER_DOCS
from benchhub.results.filters import MeasurementFilter


class ComparisonMetricOutput(serializers.Serializer):
    name = serializers.CharField(source="metric.name")
    unit = serializers.CharField(
        help_text="the values' unit: the metric's, or with per the derived one (tx/s per core)"
    )
    direction = serializers.CharField(source="metric.direction")


class RelativeField(serializers.FloatField):
    """A relative value, rounded as in the CSV and on the page (``relative_rounded``)."""

    def to_representation(self, value) -> float:
        return relative_rounded(super().to_representation(value))


class StatisticField(serializers.FloatField):
    """A sum of medians, rounded as in the CSV (``statistic_rounded``)."""

    def to_representation(self, value) -> float:
        return statistic_rounded(super().to_representation(value))


class RatioField(serializers.FloatField):
    """A ratio, rounded as in the CSV and on the page (``ratio_rounded``)."""

    def to_representation(self, value) -> float:
        return ratio_rounded(super().to_representation(value))


class ComparisonVerdictOutput(serializers.Serializer):
    verdict = serializers.ChoiceField(
        choices=[
            "better",
            "worse",
            "higher",
            "lower",
            "equivalent",
            "inconclusive",
            "insufficient data",
        ],
        help_text="against the reference series at this x: better/worse when p < 0.05 and the "
        "ratio at least minimum_effect from 1 (higher/lower for a metric without a direction); "
        "equivalent when its 95 % interval ratio_low-ratio_high lies within 1 ± minimum_effect; "
        "inconclusive when neither (the interval reaches past a bound); insufficient data when "
        "no test can tell",
    )
    test = serializers.CharField(
        allow_null=True,
        help_text="mann-whitney-u (runs), bootstrap (repetitions; a geometric mean of more "
        "than ten operations) or sign-flip (a geometric mean of up to ten operations)",
    )
    p_value = serializers.FloatField(allow_null=True)
    ratio = RatioField(
        allow_null=True,
        help_text="median of this series / median of the reference, at this x, to 12 "
        "significant digits",
    )
    ratio_low = RatioField(
        allow_null=True,
        help_text="95 % interval of the ratio; null where none is bounded "
        "(too few runs: 2 against 2 to 5, 3 against 3; a geometric mean of fewer than six "
        "operations) or a value is 0 or less",
    )
    ratio_high = RatioField(allow_null=True)
    minimum_effect = serializers.FloatField(
        help_text="the smallest |ratio - 1| that counts as a difference"
    )

    def to_representation(self, instance: Verdict) -> dict:
        # The fields above, written out: a comparison has thousands of
        # verdicts and points, and DRF calls two methods of a field object
        # per value. Serializer.to_representation's own answer, exactly
        # (tests/comparisons/test_database_aggregation.py compares the two).
        return _verdict_data(instance)


class ComparisonPointOutput(serializers.Serializer):
    x = serializers.JSONField(help_text="the x value: a number, or text")
    value = serializers.SerializerMethodField(
        help_text="median of the measurements at this point; where it is the mean of the two "
        "middle ones, without float noise (to 15 significant digits when they are within one ulp)"
    )
    n = serializers.IntegerField(help_text="number of measurements")
    min = serializers.FloatField()
    max = serializers.FloatField()
    relative = RelativeField(
        allow_null=True,
        help_text="value / the reference series' value at this x, times 100, to 6 significant "
        "digits; null without a reference, or where the reference has no value",
    )
    verdict = ComparisonVerdictOutput(
        allow_null=True,
        help_text="is the difference from the reference (or the first series) real? null for "
        "that series itself and where it has no value",
    )

    @extend_schema_field(OpenApiTypes.DOUBLE)
    def get_value(self, instance: Point) -> float | None:
        return median_shown(_float(instance.value), instance.n)

    def to_representation(self, instance: Point) -> dict:
        # written out, as ComparisonVerdictOutput's
        return {
            "x": instance.x,
            "value": self.get_value(instance),
            "n": None if instance.n is None else int(instance.n),
            "min": _float(instance.min),
            "max": _float(instance.max),
            "relative": relative_rounded(_float(instance.relative)),
            "verdict": None if instance.verdict is None else _verdict_data(instance.verdict),
        }


def _float(value) -> float | None:
    """A FloatField's representation (None stays None, as for any field)."""
    return None if value is None else float(value)


def _verdict_data(verdict: Verdict) -> dict:
    return {
        "verdict": verdict.verdict,
        "test": None if verdict.test is None else str(verdict.test),
        "p_value": _float(verdict.p_value),
        "ratio": ratio_rounded(_float(verdict.ratio)),
        "ratio_low": ratio_rounded(_float(verdict.ratio_low)),
        "ratio_high": ratio_rounded(_float(verdict.ratio_high)),
        "minimum_effect": _float(verdict.minimum_effect),
    }


class ComparisonSeriesOutput(serializers.Serializer):
    label = serializers.CharField()
    points = ComparisonPointOutput(many=True)


class ComparisonTotalsOutput(serializers.Serializer):
    value = StatisticField(
        help_text="sum of this series' medians over the common x, its float noise dropped"
    )
    reference = StatisticField(help_text="the reference's sum over the same x")
    ratio = RatioField(allow_null=True)
    verdict = ComparisonVerdictOutput(help_text="on the runs' own totals")


class ComparisonGeometricMeanOutput(serializers.Serializer):
    ratio = RatioField(allow_null=True, help_text="geometric mean of the ratios")
    ratio_low = RatioField(allow_null=True)
    ratio_high = RatioField(allow_null=True)
    verdict = ComparisonVerdictOutput()


class ComparisonSummaryOutput(serializers.Serializer):
    label = serializers.CharField(help_text="the series")
    operations = serializers.IntegerField(help_text="x values it shares with the reference")
    missing = serializers.ListField(
        child=serializers.JSONField(), help_text="x values the reference has and it lacks"
    )
    extra = serializers.ListField(
        child=serializers.JSONField(), help_text="x values it has and the reference lacks"
    )
    totals = ComparisonTotalsOutput(
        allow_null=True, help_text="for a metric in time units (seed 002's TOTALS); else null"
    )
    geometric_mean = ComparisonGeometricMeanOutput()


class ComparisonOutput(serializers.Serializer):
    benchmark = serializers.CharField(source="query.benchmark")
    metric = ComparisonMetricOutput(source="query")
    per = serializers.CharField(
        source="query.per",
        allow_null=True,
        help_text="core or ram_gib: each value divided by its run's machine's cores or GiB "
        "of RAM; null: as measured",
    )
    x = serializers.CharField(source="query.x.name")
    x_numeric = serializers.BooleanField(
        help_text="every x value is a number: drawn as lines, otherwise as grouped bars"
    )
    series_by = serializers.CharField(
        source="query.series.name",
        allow_null=True,
        default=None,
        help_text="the series query parameter",
    )
    reference = serializers.CharField(allow_null=True)
    filters = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        source="query.filters",
        help_text="the fixed filters applied, as given",
    )
    x_values = serializers.ListField(child=serializers.JSONField())
    series = ComparisonSeriesOutput(many=True)
    summary = ComparisonSummaryOutput(
        many=True,
        help_text="combined scores per series against the reference, when x is operations "
        "(text) with at least two of them; empty otherwise",
    )
    notes = serializers.ListField(child=serializers.CharField())


def comparison_as_data(comparison: Comparison) -> dict:
    """The JSON of a comparison: what the API answers and the page's chart reads."""
    return ComparisonOutput(comparison).data


def refuse_pooling(query, pooled: list[PooledParameter]) -> None:
    """A cell would pool runs that differ in a parameter no axis or filter
    names (transactions=10000 and 2000 in one median): the answer would be
    a number of neither. Refused, naming the parameter, its values and the
    two ways out, rather than split into series the caller never asked for
    (a script reading series by label would meet new labels silently)."""
    if not pooled:
        return
    errors = {}
    for parameter in pooled:
        values = parameter.values[:8]
        shown = ", ".join(values) + (" …" if len(parameter.values) > 8 else "")
        errors[parameter.filter] = (
            f"the matching results differ in {parameter.title} ({shown}), which is neither an "
            f"axis nor fixed, and would be pooled in one median: fix it "
            f"({parameter.filter}={values[0]}) or vary it (series={parameter.filter})"
        )
    raise InvalidComparison(errors)


def invalid_comparison_error(exc: InvalidComparison) -> ApiError:
    return ApiError(
        "; ".join(f"{key}: {message}" for key, message in exc.errors.items()),
        code="invalid",
        details=[{"path": f"$.{key}", "message": message} for key, message in exc.errors.items()],
    )


class _FormatIsOurs(BaseContentNegotiation):
    """DRF would treat ?format=csv as a renderer choice and answer 404; here
    the view answers CSV itself, and errors stay JSON in every case."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


_AXIS_HELP = (
    "param.<name> (a measurement parameter, e.g. param.clients), run_param.<name>, or one of: "
    + ", ".join(AXIS_DIMENSIONS)
)

COMPARISON_PARAMETERS = [
    OpenApiParameter("benchmark", str, required=True, description="benchmark name"),
    OpenApiParameter("metric", str, required=True, description="a metric of the benchmark"),
    OpenApiParameter(
        "x", str, required=True, description="what varies along the axis: " + _AXIS_HELP
    ),
    OpenApiParameter(
        "series", str, description="what separates the lines or bar groups (same choices as x)"
    ),
    OpenApiParameter(
        "reference",
        str,
        description=(
            "a series value whose value at each x is 100; every point gets its relative. "
            "(none), as the pages show an empty value, is the series of runs that gave none"
        ),
    ),
    OpenApiParameter(
        "minimum_effect",
        float,
        description="the smallest difference a verdict counts, in % (default 5)",
    ),
    OpenApiParameter(
        "verdicts",
        str,
        enum=["all", "quiet"],
        description="quiet: verdicts from runs without a noise flag only (the medians still "
        "count every run)",
    ),
    OpenApiParameter(
        "per",
        str,
        enum=list(PER),
        description="a rate where higher is better divided by each run's machine's cores or "
        "GiB of RAM (runs whose machine did not say are left out)",
    ),
    OpenApiParameter(
        "scale",
        str,
        enum=["linear", "log"],
        description="how the page draws the value axis (log: logarithmic); accepted here so "
        "that the page's address serves as an API query, and the numbers are the same",
    ),
    OpenApiParameter(
        "format", str, enum=["json", "csv"], description="csv: the same points as CSV"
    ),
    *PARAMETER_DOCS,
    *(
        OpenApiParameter(name, str, description="fixed filter, as on /api/v1/measurements/")
        for name in MeasurementFilter.base_filters
        if name not in ("benchmark", "metric")
    ),
]


class ComparisonApi(APIView):
    content_negotiation_class = _FormatIsOurs

    @extend_schema(
        operation_id="comparisons_retrieve",
        parameters=COMPARISON_PARAMETERS,
        description=(
            "One metric of one benchmark, per x value and series: median, n, min and max of "
            "the measurements you may see. Every query parameter besides the ones listed "
            "first is a fixed filter with the semantics of /api/v1/measurements/."
        ),
        responses={
            (200, "application/json"): ComparisonOutput,
            (200, "text/csv"): OpenApiTypes.STR,
            400: OpenApiResponse(description="a parameter is missing, unknown or invalid; named"),
        },
    )
    def get(self, request: Request):
        try:
            query = comparison_query_parse(dict(request.query_params.lists()))
            may_pool = comparison_may_pool(query, *comparison_parameter_names(metric=query.metric))
            comparison = comparison_build(user=request.user, query=query, check_parameters=may_pool)
            if may_pool and not comparison.is_empty and comparison.parameters_may_differ:
                refuse_pooling(query, comparison_pooling(user=request.user, query=query))
        except InvalidComparison as exc:
            raise invalid_comparison_error(exc) from None
        if request.query_params.get("format") == "csv":
            return comparison_csv_response(comparison)
        return Response(comparison_as_data(comparison))
