"""Writes of the baselines app that other apps call: marking runs and keys
dirty.

The update itself is in refresh.py (run by tasks.py); this module queues
the task and neither of those imports it back.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.db.models.signals import pre_delete
from django.dispatch import receiver
from django.utils import timezone

from benchhub.baselines.marking import mark_keys, mark_runs
from benchhub.baselines.models import CountedRun
from benchhub.baselines.refresh import baselines_refresh  # noqa: F401 -- the app's other write
from benchhub.baselines.tasks import baselines_refresh_task
from benchhub.lib.queueing import task_queue
from benchhub.results.models import Run


def baselines_mark_dirty(
    *, runs: Iterable[tuple[int, str]] = (), fingerprints: Iterable[str] = ()
) -> None:
    """Note that these runs ((id, key) pairs: their submission was uploaded
    or changed status) or keys changed; have the refresh bring their
    baselines up to date once the caller's transaction commits. Only marks:
    the caller does no other work here."""
    now = timezone.now()
    queue = mark_runs(runs, now)
    queue = mark_keys(sorted(set(fingerprints)), now) or queue
    baselines_runs_marked(queue=queue)


def baselines_runs_marked(*, queue: bool) -> None:
    """The runs of an upload were marked by the upload's own statement
    (marking.mark_inserted_runs_sql; ``queue`` from marking.queue_needed):
    queue the refresh as baselines_mark_dirty does."""
    if queue or settings.CELERY_TASK_ALWAYS_EAGER:
        # In-process (no worker), every change runs one bounded round: a
        # key re-marked while marked queues nothing on a broker, since a
        # worker's rounds re-queue themselves, but in-process nothing would.
        transaction.on_commit(_queue_refresh)


def _queue_refresh() -> None:
    """Queue the refresh task, unless the broker fails (away, full, read-only):
    the marks are committed either way, and the periodic sweep queues what is
    left once the broker takes it again. An upload must not fail after its
    data is stored."""
    task_queue(baselines_refresh_task, left_to="the sweep (the marks stay in PostgreSQL)")


@receiver(pre_delete, sender=Run, dispatch_uid="baselines-run-deleted")
def _run_deleted(sender, instance: Run, **kwargs) -> None:
    """A run deleted outright (admin, shell) takes its values with it: if
    they were counted, its key is rebuilt from what is left (marking only).
    The run is marked too, with the deletion: a round that read it before
    the deletion committed may count it after this looked, and the next
    round, finding it counted and gone, has the key rebuilt."""
    now = timezone.now()
    mark_runs([(instance.pk, instance.fingerprint)], now)
    if CountedRun.objects.filter(run_id=instance.pk).exists():
        mark_keys([instance.fingerprint], now, rebuild=True)
