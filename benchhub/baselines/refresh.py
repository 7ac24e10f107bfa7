"""Recomputing the baselines of dirty keys (the task's work; marking is in
services.py, which queues the task: this module imports neither).

The protocol between uploads and the refresh task, so that neither waits
for the other:

- an upload *marks* its keys: insert, or move ``marked_at`` forward; it
  queues the task only when it inserted a mark (an existing one is already
  on its way to a task);
- the task *claims* up to a batch of unclaimed marks in a short
  transaction (``claimed_at``), recomputes them with no lock held on the
  marks, then deletes each mark whose ``marked_at`` is still the one it
  read and releases the others (re-marked meanwhile) for the next round;
- a claim older than CLAIM_EXPIRY is taken as abandoned (a worker died),
  and the periodic sweep picks it up again.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.baselines.statistics import outlier_score, summarize
from benchhub.results.comparability import canonical_json
from benchhub.results.filters import parameter_canonical
from benchhub.results.models import Measurement, Submission

CLAIM_EXPIRY = dt.timedelta(minutes=10)
# Keys one task recomputes before it queues the next round.
BATCH = 100


def baselines_refresh(*, limit: int = BATCH) -> tuple[int, int]:
    """Recompute the baselines of up to ``limit`` dirty keys. Returns how
    many it recomputed and how many marks are left for a next round.
    Safe to run concurrently and to repeat."""
    claimed = _claim(limit)
    if claimed:
        with transaction.atomic():
            _recompute([mark.fingerprint for mark in claimed])
        _finish(claimed)
    return len(claimed), _claimable().count()


def _claimable():
    stale = timezone.now() - CLAIM_EXPIRY
    return DirtyKey.objects.filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale))


def _claim(limit: int) -> list[DirtyKey]:
    with transaction.atomic():
        marks = list(_claimable().select_for_update(skip_locked=True).order_by("marked_at")[:limit])
        DirtyKey.objects.filter(pk__in=[m.pk for m in marks]).update(claimed_at=timezone.now())
    return marks


def _finish(claimed: list[DirtyKey]) -> None:
    unchanged = Q(pk__in=[])
    for mark in claimed:
        unchanged |= Q(pk=mark.pk, marked_at=mark.marked_at)
    with transaction.atomic():
        DirtyKey.objects.filter(unchanged).delete()
        # What is left was marked again while we computed: release it.
        DirtyKey.objects.filter(pk__in=[m.pk for m in claimed]).update(claimed_at=None)


def baseline_point(parameters: dict) -> str:
    """The point a measurement's parameters name, as a baseline stores it:
    numbers by the one rule of the filters (20, 20.0 and "20" are one point)."""
    return canonical_json({name: parameter_canonical(v) for name, v in (parameters or {}).items()})


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
        groups[(m.run.fingerprint, m.metric.id, baseline_point(m.parameters))].append(m)

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
