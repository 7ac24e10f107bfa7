"""Writes of the baselines app that other apps call: marking keys dirty.

The recompute itself is in refresh.py (run by tasks.py); this module queues
the task and neither of those imports it back.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from benchhub.baselines.refresh import (
    baselines_refresh,  # noqa: F401 -- the app's other write
    mark_keys,
)
from benchhub.baselines.tasks import baselines_refresh_task


def baselines_mark_dirty(*, fingerprints: Iterable[str]) -> None:
    """Note that these keys changed; have a worker recompute them once the
    caller's transaction commits."""
    keys = sorted(set(fingerprints))
    if keys and mark_keys(keys, timezone.now()):
        baselines_refresh_task.delay_on_commit()
