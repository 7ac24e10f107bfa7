"""Measurement packs: what a pack keeps apart, built, checked current, and
asked for (the tables: models.py; cells read from them: from_packs.py; the
worker's task: tasks.py).

A comparison at ten million measurements read 1.5 million rows for one
answer, about 1.4 CPU-seconds of PostgreSQL on two cores
(docs/performance.md); its answer needs each cell's values, runs and ids,
not each row. A pack (models.py) is the approved measurements of one
metric that no public comparison can tell apart, their values, run ids
and ids packed as bytes: a comparison reads a pack per ~14 measurements
(select-update's throughput at 10 M, docs/performance.md) and PostgreSQL
concatenates bytes per cell instead of building arrays row by row.

Exact: a metric's packs are built from one snapshot, stamped with the
versions of its data (kept.py's, bumped on commit of every change a
comparison could see: changes.py) read before it began. A comparison uses
the packs only while those versions are still current and the build is
less than ``MAX_AGE_SECONDS`` old, checked in the same statement that
reads the packs (one snapshot). Otherwise it reads the rows and asks the
worker for one build (``packs_build_ask``), which starts no sooner than
``BUILD_SPACING`` times the last build's duration after that build ended
(``build_wait``). A change committed while packs are built bumps the
versions after they were read: those packs are out of date at once and
never used. Between a change's commit and its bump (the next statement of
the same thread) a comparison may still read the packs from before it, as
a kept answer may still be served: as if it had been asked a moment
earlier.

PostgreSQL only: the embedded default aggregates in Python.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.core.cache import caches
from django.db import connection, transaction
from django.utils import timezone

from benchhub.comparisons import kept
from benchhub.comparisons.in_database import WORK_MEM
from benchhub.comparisons.models import PackedMetric
from benchhub.lib.queueing import task_queue
from benchhub.results.models import Submission

log = logging.getLogger(__name__)

# What a pack's measurements share, each column and the pack's field that
# keeps its copy: everything a comparison filters or groups on
# (benchhub.results.filters.MeasurementFilter, query.AXIS_DIMENSIONS) but
# what NOT_IN_PACKS names. JSON as text: two measurements whose parameters
# differ only in spelling (20 and 20.0, equal as jsonb) are not in one pack,
# so that any expression over the pack's copy gives what it gives over each.
_COPIES = {
    "m.metric_id": "metric_id",
    "m.approximate": "approximate",
    "m.parameters::text": "parameters",
    "m.parameter_keys::text": "parameter_keys",
    "r.benchmark_id": "run_benchmark_id",
    "r.benchmark_version": "run_benchmark_version",
    "r.fingerprint": "run_fingerprint",
    "r.hardware_id": "run_hardware_id",
    "r.storage_id": "run_storage_id",
    "r.os_id": "run_os_id",
    "r.server_id": "run_server_id",
    "r.client_id": "run_client_id",
    "r.noise": "run_noise",
    "r.parameters::text": "run_parameters",
    "r.parameter_keys::text": "run_parameter_keys",
}
PACK_KEY = tuple(_COPIES)
# What a pack does not keep apart, as filters and axes: its runs'
# submissions (and so their submitters, sources and statuses) and the runs
# themselves. A comparison that names one reads the rows (from_packs.py).
# A filter or axis added to the measurements goes in PACK_KEY (with a field
# of models.MeasurementPack and a migration) or here.
NOT_IN_PACKS = frozenset({"submission", "source", "status", "submitter", "run"})


def _copied(column: str) -> str:
    # JSON grouped as text goes back to jsonb (each pack's is one text)
    return f"{column}::jsonb" if column.endswith("::text") else column


_BUILD = f"""
    INSERT INTO comparisons_measurementpack
        ({", ".join(_COPIES.values())}, n, low, high, vals, runs, ids)
    SELECT {", ".join(_copied(column) for column in PACK_KEY)},
           count(*), min(m.value), max(m.value),
           string_agg(float8send(m.value), '' ORDER BY m.id),
           string_agg(int8send(m.run_id), '' ORDER BY m.id),
           string_agg(int8send(m.id), '' ORDER BY m.id)
    FROM results_measurement AS m
    JOIN results_run AS r ON r.id = m.run_id
    WHERE m.metric_id = %s AND r.submission_status = %s
    GROUP BY {", ".join(PACK_KEY)}
"""  # noqa: S608 -- our own column names

# A metric's packs are built by one transaction at a time: two would each
# delete the packs they see and insert their own.
_BUILD_LOCK = 0x7061636B  # "pack"

# How long an ask for a build stops further asks, on top of its countdown
# (build_wait). The worker clears it when the build is over (committed,
# skipped or failed): a comparison during the build asks for nothing, and
# the first one after it that finds the packs out of date asks for the next.
ASKED_SECONDS = 600
# A metric's packs are built again at most once in this many times the
# last build's duration (from its end): a fifth of a worker process at most.
BUILD_SPACING = 4
# Packs are used at most this long after their build, as kept answers are
# kept (BENCHHUB_COMPARISON_KEEP_SECONDS's default): a change whose bump was
# lost (the cache refused it and the process that would retry it ended, or
# Redis came back without it) is not missed for longer.
MAX_AGE_SECONDS = 86_400


def _versions_text(metric_id: int) -> str:
    """The current versions of ``metric_id``'s data, joined as
    PackedMetric.versions stores them."""
    return ":".join(kept.data_versions(metric_id))


def packs_build(metric_id: int) -> int:
    """Build ``metric_id``'s packs from the approved rows; how many."""
    assert connection.vendor == "postgresql"
    started = time.monotonic()
    # Read before the snapshot the packs are built from (see the module).
    versions = _versions_text(metric_id)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_BUILD_LOCK, metric_id])
        # A comparison's work memory: the grouping holds a pack's bytes.
        cursor.execute("SELECT set_config('work_mem', %s, true)", [WORK_MEM])
        cursor.execute("DELETE FROM comparisons_measurementpack WHERE metric_id = %s", [metric_id])
        cursor.execute(_BUILD, [metric_id, Submission.Status.APPROVED])
        count = cursor.rowcount
        # The planner's counts of packs per metric, as they are now: a build
        # replaces a metric's packs at once, long before autovacuum looks.
        cursor.execute("ANALYZE comparisons_measurementpack")
        PackedMetric.objects.update_or_create(
            metric_id=metric_id,
            defaults={
                "versions": versions,
                "built_at": timezone.now(),
                "pack_count": count,
                "build_seconds": time.monotonic() - started,
            },
        )
    log.info("comparisons: %d packs of metric %d built", count, metric_id)
    return count


def packs_current_clause(metric_id: int) -> tuple[str, list] | None:
    """A condition (and its parameters) true where ``metric_id``'s packs were
    built from the data as it is now, less than ``MAX_AGE_SECONDS`` ago, for
    the statement that reads them; None where the versions cannot be read
    (the cache is away: the rows are read)."""
    try:
        versions = _versions_text(metric_id)
    except Exception as exc:
        log.warning("comparisons: versions unread, packs not used: %s", exc)
        return None
    return (
        f"EXISTS (SELECT 1 FROM {PackedMetric._meta.db_table} "  # noqa: S608 -- our table
        "WHERE metric_id = %s AND versions = %s AND built_at > %s)",
        [metric_id, versions, timezone.now() - timedelta(seconds=MAX_AGE_SECONDS)],
    )


def packs_current(metric_id: int) -> bool:
    """Whether ``metric_id``'s packs are current now, by the condition a
    comparison checks (the worker skips a build that is not needed)."""
    condition = packs_current_clause(metric_id)
    if condition is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {condition[0]}", condition[1])
        return cursor.fetchone()[0]


def packs_build_ask(metric_id: int) -> None:
    """Ask the worker to build ``metric_id``'s packs once the current
    transaction commits, queued with a countdown of ``build_wait``; once
    however many ask, until that build is over or ``ASKED_SECONDS`` after
    its countdown have passed. Nothing is asked where tasks run in the
    request (no worker): the rows answer."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return
    from benchhub.comparisons.tasks import packs_build_task

    def ask() -> None:
        wait = build_wait(metric_id)
        try:
            if not caches["kept"].add(_asked_key(metric_id), 1, timeout=ASKED_SECONDS + wait):
                return
        except Exception as exc:
            log.warning("comparisons: packs asked for without the cache: %s", exc)
        left_to = "the next comparison of the metric (the rows answer meanwhile)"
        options = {"countdown": wait}
        if not task_queue(packs_build_task, metric_id, left_to=left_to, options=options):
            packs_build_ask_clear(metric_id)

    transaction.on_commit(ask)


def build_wait(metric_id: int) -> float:
    """Seconds before the next build of ``metric_id``'s packs may start: a
    metric whose results change more often than its packs take to build
    would otherwise keep a worker process building it (17 s at ten million
    measurements), while the baselines and the kept answers wait."""
    last = PackedMetric.objects.filter(metric_id=metric_id).first()
    if last is None:
        return 0.0
    since = (timezone.now() - last.built_at).total_seconds()
    return max(0.0, BUILD_SPACING * last.build_seconds - since)


def packs_build_ask_clear(metric_id: int) -> None:
    """The ask for ``metric_id``'s build is over: the build committed, was
    skipped as not needed, failed, or could not be queued. The next
    comparison that finds the packs out of date asks again. Cleared when the
    build ends, not when it starts: a comparison during the build would ask
    for the same build again."""
    try:
        caches["kept"].delete(_asked_key(metric_id))
    except Exception as exc:
        log.warning("comparisons: the ask for packs not cleared: %s", exc)


def _asked_key(metric_id: int) -> str:
    return f"packs-asked:{metric_id}"
