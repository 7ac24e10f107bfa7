from __future__ import annotations

from django.db.models import QuerySet

from benchhub.baselines.models import Baseline
from benchhub.baselines.refresh import baseline_point


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
