from __future__ import annotations

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet

from benchhub.baselines.models import Baseline
from benchhub.results.comparability import canonical_json
from benchhub.results.filters import parameter_canonical
from benchhub.results.models import Measurement
from benchhub.results.selectors import public_submissions_q


def baseline_point(parameters: dict) -> str:
    """The point a measurement's parameters name, as a baseline stores it:
    numbers by the one rule of the filters (20, 20.0 and "20" are one point)."""
    return canonical_json({name: parameter_canonical(v) for name, v in (parameters or {}).items()})


def baseline_list(*, fingerprint: str) -> QuerySet[Baseline]:
    return (
        Baseline.objects.filter(fingerprint=fingerprint)
        .select_related("metric")
        .order_by("metric__name", "point")
    )


def baseline_get(*, fingerprint: str, metric: str, parameters: dict) -> Baseline | None:
    return (
        Baseline.objects.filter(
            fingerprint=fingerprint, metric__name=metric, point=baseline_point(parameters)
        )
        .select_related("metric")
        .first()
    )


def baseline_pooled_q():
    """The one rule for which measurements a baseline pools: measured (not
    approximate) values of public submissions, the set the public sees
    (results.selectors.public_submissions_q: approved, and not hidden or
    deleted). Change visibility there, and baselines follow."""
    return public_submissions_q("run__submission__") & ~Q(approximate=True)


def baseline_measurements(*, fingerprints: list[str]) -> QuerySet:
    """Every measured value of these keys, as values-only rows (id, key,
    metric, parameters, value, stored score, pooled?): the pooled ones make
    the baseline, every one is scored against it."""
    return (
        Measurement.objects.filter(run__fingerprint__in=fingerprints, approximate=False)
        .annotate(pooled=ExpressionWrapper(baseline_pooled_q(), output_field=BooleanField()))
        .order_by()
        .values_list(
            "id", "run__fingerprint", "metric_id", "parameters", "value", "outlier_score", "pooled"
        )
    )
