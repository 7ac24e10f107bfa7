"""Writes of the baselines app that other apps call: marking keys dirty.

The recompute itself is in refresh.py (run by tasks.py); this module queues
the task and neither of those imports it back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.db import connection
from django.utils import timezone

from benchhub.baselines.models import DirtyKey
from benchhub.baselines.refresh import baselines_refresh  # noqa: F401 -- the app's other write
from benchhub.baselines.tasks import baselines_refresh_task


def baselines_mark_dirty(*, fingerprints: Iterable[str]) -> None:
    """Note that these keys changed; have a worker recompute them once the
    caller's transaction commits."""
    keys = sorted(set(fingerprints))
    if keys and _mark(keys, timezone.now()):
        baselines_refresh_task.delay_on_commit()


def _mark(keys: list[str], now: dt.datetime) -> bool:
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
