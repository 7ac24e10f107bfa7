"""Writes of the comparisons app that other apps call.

After a change of what public comparisons read (a moderator approves,
hides or deletes a result, an alias rule renames stored values), the kept
answers people ask for of the metrics it touched (of every metric, for a
renaming) are stale (kept.py): the worker computes them again
soon after (tasks.py), so that the next visitor is served, not the one who
waits. Beat's schedule does the same every minute; this is sooner.
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from benchhub.lib.queueing import task_queue

# A burst of changes (a bulk moderation) queues one refresh, which runs this
# many seconds after the first of them, when the burst's changes have committed.
REFRESH_AFTER_SECONDS = 2
_QUEUED = "comparisons:refresh-queued"


def comparisons_data_changed() -> None:
    """Have the worker refresh the kept answers once the caller's
    transaction commits. Nothing when no answer is kept or tasks run
    in-process (the embedded default: the refresh would run in the request)."""
    if not settings.BENCHHUB_COMPARISON_KEEP_SECONDS or settings.CELERY_TASK_ALWAYS_EAGER:
        return
    transaction.on_commit(_queue_refresh)


def _queue_refresh() -> None:
    from benchhub.comparisons.tasks import comparisons_refresh_task

    # Redis away: add() says True and the refresh is queued (and fails to be,
    # with a warning): beat's schedule refreshes within the minute.
    if cache.add(_QUEUED, True, timeout=REFRESH_AFTER_SECONDS):
        task_queue(
            comparisons_refresh_task,
            left_to="beat's refresh (a minute)",
            options={"countdown": REFRESH_AFTER_SECONDS},
        )
