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
import logging
import time
from collections import defaultdict

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.baselines.selectors import baseline_measurements, baseline_point
from benchhub.baselines.statistics import outlier_score, summarize
from benchhub.results.models import Measurement, Run

CLAIM_EXPIRY = dt.timedelta(minutes=10)
# Keys one task recomputes before it queues the next round.
BATCH = 100

logger = logging.getLogger(__name__)


def mark_keys(keys: list[str], now: dt.datetime) -> bool:
    """Upsert the marks; True when at least one was new."""
    if connection.vendor != "postgresql":
        DirtyKey.objects.bulk_create(
            [DirtyKey(fingerprint=k, marked_at=now) for k in keys],
            update_conflicts=True,
            unique_fields=["fingerprint"],
            update_fields=["marked_at"],
        )
        return True  # cannot tell inserted from updated: queue anyway
    table = connection.ops.quote_name(DirtyKey._meta.db_table)
    values = ", ".join(["(%s, %s)"] * len(keys))
    with connection.cursor() as cursor:
        # xmax = 0 marks a row this statement inserted rather than updated.
        cursor.execute(
            f"INSERT INTO {table} (fingerprint, marked_at) VALUES {values} "  # noqa: S608 -- only the table name is interpolated
            "ON CONFLICT (fingerprint) DO UPDATE SET marked_at = EXCLUDED.marked_at "
            "RETURNING (xmax = 0)",
            [item for key in keys for item in (key, now)],
        )
        return any(inserted for (inserted,) in cursor.fetchall())


def baselines_mark_all() -> int:
    """The nightly full recompute: every key with a run is marked, and the
    refresh task's batches recompute them (from the data, as after any
    upload or approval, so the numbers are the same). Returns how many."""
    keys = sorted(set(Run.objects.order_by().values_list("fingerprint", flat=True).distinct()))
    for start in range(0, len(keys), 1000):
        mark_keys(keys[start : start + 1000], timezone.now())
    return len(keys)


def baselines_refresh(*, limit: int = BATCH) -> tuple[int, int]:
    """Recompute the baselines of up to ``limit`` dirty keys. Returns how
    many it recomputed and how many marks are left for a next round.
    Safe to run concurrently and to repeat."""
    claimed = _claim(limit)
    if claimed:
        keys = [mark.fingerprint for mark in claimed]
        for key in keys:
            logger.info("baselines: start %s at %.6f", key, time.time())
        with transaction.atomic():
            _recompute(keys)
        for key in keys:
            logger.info("baselines: done %s at %.6f", key, time.time())
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


def _recompute(fingerprints: list[str]) -> None:
    """Values-only rows streamed from the database (no model instance per
    measurement), one pass: the pooled values per point make its baseline,
    every measurement is scored against it, and only scores that changed
    are written."""
    values: dict[tuple[str, int, str], list[float]] = defaultdict(list)
    parameters: dict[tuple[str, int, str], dict] = {}
    members: dict[tuple[str, int, str], list[tuple[int, float, float | None]]] = defaultdict(list)
    rows = baseline_measurements(fingerprints=fingerprints).iterator(chunk_size=5000)
    for pk, fingerprint, metric_id, point_parameters, value, stored, pooled in rows:
        key = (fingerprint, metric_id, baseline_point(point_parameters))
        members[key].append((pk, value, stored))
        if pooled:
            values[key].append(value)
            parameters.setdefault(key, point_parameters)

    baselines = []
    changed: list[tuple[int, float | None]] = []
    for key, scored in members.items():
        pooled_values = values.get(key)
        summary = summarize(pooled_values) if pooled_values else None
        if summary is not None:
            fingerprint, metric_id, point = key
            baselines.append(
                Baseline(
                    fingerprint=fingerprint,
                    metric_id=metric_id,
                    point=point,
                    parameters=parameters[key],
                    n=summary.n,
                    median=summary.median,
                    q1=summary.q1,
                    q3=summary.q3,
                    minimum=summary.minimum,
                    maximum=summary.maximum,
                    mad=summary.mad,
                    values=sorted(pooled_values),
                )
            )
        for pk, value, stored in scored:
            score = outlier_score(value, summary) if summary is not None else None
            if score != stored:
                changed.append((pk, score))

    Baseline.objects.filter(fingerprint__in=fingerprints).delete()
    Baseline.objects.bulk_create(baselines, batch_size=500)
    _write_scores(changed)


def _write_scores(changed: list[tuple[int, float | None]]) -> None:
    """One UPDATE per 10,000 changed scores (PostgreSQL joins arrays; other
    databases take Django's bulk_update)."""
    for start in range(0, len(changed), 10_000):
        batch = changed[start : start + 10_000]
        if connection.vendor == "postgresql":
            table = connection.ops.quote_name(Measurement._meta.db_table)
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} AS m SET outlier_score = u.score "  # noqa: S608 -- the table name only
                    "FROM unnest(%s::bigint[], %s::double precision[]) AS u(id, score) "
                    "WHERE m.id = u.id",
                    [[pk for pk, _ in batch], [score for _, score in batch]],
                )
        else:
            Measurement.objects.bulk_update(
                [Measurement(pk=pk, outlier_score=score) for pk, score in batch],
                ["outlier_score"],
            )
