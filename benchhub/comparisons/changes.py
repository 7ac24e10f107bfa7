"""What makes kept comparison answers stale (kept.py): every write of what a
public comparison reads bumps the versions of the metrics it touched, once
its transaction commits.

Two sources, both connected in ComparisonsConfig.ready():

- results' event ``public_data_changed`` (results/events.py), which the
  services send for what they write in bulk: an approved result stored, a
  status to or from approved, an alias rule that renamed stored values. It
  names the metrics touched, or None for what every metric reads;
- Django's own model signals for a row saved or deleted one at a time (the
  admin, a shell, a cascade): measurements (their metric), runs and
  submissions (their measurements' metrics), dimension rows, the catalog,
  user names and alias rules (every metric), and ``migrate`` (the catalog is
  synced by it; a restored dump is followed by it).

A write that bypasses both (``QuerySet.update()``, raw SQL) must send
``public_data_changed`` itself; tests/comparisons/test_kept_answers_served.py
checks that every table a comparison reads is watched here.

Bumps are gathered per thread and made by the first on_commit callback
after them; a transaction rolled back leaves its metrics gathered, bumped
with the next commit (one bump too many, never one too few).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.signals import post_delete, post_migrate, post_save

from benchhub.comparisons.kept import EVERY, versions_bump
from benchhub.moderation.models import AliasRule
from benchhub.results import events
from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Hardware,
    Measurement,
    Metric,
    OperatingSystem,
    Run,
    Storage,
    Submission,
)

# What every metric's answers read besides measurements, runs and submissions.
SHARED_MODELS = (
    Hardware,
    Storage,
    OperatingSystem,
    DatabaseServer,
    Client,
    Benchmark,
    Metric,
    AliasRule,
    User,
)
WATCHED_MODELS = (Measurement, Run, Submission, *SHARED_MODELS)

_gathered = threading.local()


def changed_on_commit(metrics: Iterable[int] | None) -> None:
    """Bump ``metrics`` (None: every metric) when the current transaction
    commits; at once outside one."""
    pending = getattr(_gathered, "metrics", None)
    if pending is None:
        pending = _gathered.metrics = set()
    pending.update((EVERY,) if metrics is None else metrics)
    transaction.on_commit(_bump_gathered)


def _bump_gathered() -> None:
    pending = getattr(_gathered, "metrics", None)
    if not pending:
        return
    _gathered.metrics = None
    versions_bump(pending)


def _metrics_of(runs: Any) -> set[int]:
    return set(
        Measurement.objects.filter(run__in=runs).values_list("metric_id", flat=True).distinct()
    )


def _public_data_changed(sender: Any, metrics: Iterable[int] | None = None, **kwargs: Any) -> None:
    changed_on_commit(metrics)


def _measurement_written(sender: Any, instance: Measurement, **kwargs: Any) -> None:
    changed_on_commit([instance.metric_id])


def _run_saved(sender: Any, instance: Run, created: bool, **kwargs: Any) -> None:
    # A run's deletion deletes its measurements first, each signalled.
    if not created:
        changed_on_commit(_metrics_of([instance.pk]))


# What moderation saves of a submission: it sends public_data_changed itself
# when the status moves to or from approved, and only then (a flag on
# arrival leaves the answers kept).
_STATUS_FIELDS = frozenset({"status", "status_reason", "status_before_hidden"})


def _submission_saved(
    sender: Any, instance: Submission, created: bool, update_fields=None, **kwargs: Any
) -> None:
    if created or (update_fields is not None and set(update_fields) <= _STATUS_FIELDS):
        return
    changed_on_commit(_metrics_of(Run.objects.filter(submission=instance)))


def _shared_saved(sender: Any, instance: Any, created: bool, update_fields=None, **kwargs) -> None:
    """A new row is read by no answer until an approved run names it (that
    run bumps), but a new alias rule rewrites filters; a user saved for
    their last sign-in changes no answer."""
    if created and sender is not AliasRule:
        return
    if sender is User and update_fields is not None and "username" not in update_fields:
        return
    changed_on_commit(None)


def _shared_deleted(sender: Any, **kwargs: Any) -> None:
    changed_on_commit(None)


def _migrated(sender: Any, **kwargs: Any) -> None:
    if sender.name == "benchhub.comparisons":  # sent once per app
        versions_bump(None)


def connect() -> None:
    events.public_data_changed.connect(
        _public_data_changed, weak=False, dispatch_uid="comparisons-kept"
    )
    uid = "comparisons-kept"
    post_save.connect(_measurement_written, sender=Measurement, dispatch_uid=uid)
    post_delete.connect(_measurement_written, sender=Measurement, dispatch_uid=uid)
    post_save.connect(_run_saved, sender=Run, dispatch_uid=uid)
    post_save.connect(_submission_saved, sender=Submission, dispatch_uid=uid)
    for model in SHARED_MODELS:
        post_save.connect(_shared_saved, sender=model, dispatch_uid=uid)
        post_delete.connect(_shared_deleted, sender=model, dispatch_uid=uid)
    post_migrate.connect(_migrated, dispatch_uid=uid)
