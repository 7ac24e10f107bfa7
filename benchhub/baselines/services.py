"""Writes of the baselines app: marking keys dirty and recomputing them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.baselines.statistics import outlier_score, summarize
from benchhub.results.comparability import canonical_json
from benchhub.results.models import Measurement, Submission


def baselines_mark_dirty(*, fingerprints: Iterable[str]) -> None:
    """Note that these keys changed, and have a worker recompute them once
    the caller's transaction commits."""
    now = timezone.now()
    rows = [DirtyKey(fingerprint=f, marked_at=now) for f in sorted(set(fingerprints))]
    if not rows:
        return
    # Re-marking a key already waiting moves its mark forward, so that a
    # refresh that read the old mark does not clear the new one.
    DirtyKey.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["fingerprint"], update_fields=["marked_at"]
    )
    from benchhub.baselines.tasks import baselines_refresh_task

    baselines_refresh_task.delay_on_commit()


def baselines_refresh(*, limit: int = 100) -> tuple[int, int]:
    """Recompute the baselines of up to ``limit`` dirty keys; returns how
    many it recomputed and how many dirty keys remain. Safe to run
    concurrently (each worker takes keys no other holds) and to repeat."""
    with transaction.atomic():
        dirty = list(
            DirtyKey.objects.select_for_update(skip_locked=True).order_by("marked_at")[:limit]
        )
        if dirty:
            _recompute([d.fingerprint for d in dirty])
            for key in dirty:
                DirtyKey.objects.filter(pk=key.pk, marked_at=key.marked_at).delete()
    return len(dirty), DirtyKey.objects.count()


def _recompute(fingerprints: list[str]) -> None:
    measurements = list(
        Measurement.objects.filter(run__fingerprint__in=fingerprints, approximate=False)
        .select_related("metric", "run__submission")
        .only(
            "id",
            "value",
            "parameters",
            "metric__id",
            "metric__direction",
            "run__fingerprint",
            "run__submission__status",
            "outlier_score",
        )
    )
    groups: dict[tuple[str, int, str], list[Measurement]] = defaultdict(list)
    for m in measurements:
        groups[(m.run.fingerprint, m.metric.id, canonical_json(m.parameters))].append(m)

    baselines = []
    scored = []
    for (fingerprint, metric_id, point), members in groups.items():
        approved = [m for m in members if m.run.submission.status == Submission.Status.APPROVED]
        if not approved:
            continue
        values = sorted(m.value for m in approved)
        summary = summarize(values)
        baselines.append(
            Baseline(
                fingerprint=fingerprint,
                metric_id=metric_id,
                point=point,
                parameters=approved[0].parameters,
                n=summary.n,
                median=summary.median,
                q1=summary.q1,
                q3=summary.q3,
                minimum=summary.minimum,
                maximum=summary.maximum,
                mad=summary.mad,
                values=values,
            )
        )
        for m in members:
            m.outlier_score = outlier_score(m.value, summary)
            scored.append(m)

    Baseline.objects.filter(fingerprint__in=fingerprints).delete()
    Baseline.objects.bulk_create(baselines, batch_size=500)
    Measurement.objects.bulk_update(scored, ["outlier_score"], batch_size=500)
