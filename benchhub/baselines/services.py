"""Writes of the baselines app that other apps call: marking keys dirty.

The recompute itself is in refresh.py (run by tasks.py); this module queues
the task and neither of those imports it back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from benchhub.baselines.refresh import (
    baselines_refresh,  # noqa: F401 -- the app's other write
    mark_keys,
)
from benchhub.baselines.tasks import baselines_refresh_task

logger = logging.getLogger(__name__)


def baselines_mark_dirty(*, fingerprints: Iterable[str]) -> None:
    """Note that these keys changed; have a worker recompute them once the
    caller's transaction commits."""
    keys = sorted(set(fingerprints))
    if keys and mark_keys(keys, timezone.now()):
        transaction.on_commit(_queue_refresh)


def _queue_refresh() -> None:
    """Queue the refresh task, unless the broker is unreachable: the marks are
    committed either way, and the periodic sweep queues what is left once the
    broker answers again. An upload must not fail after its data is stored."""
    try:
        baselines_refresh_task.delay()
    except BrokerUnreachable:
        logger.warning("baselines refresh not queued (broker unreachable); the sweep will run it")
