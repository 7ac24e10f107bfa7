"""Marking what the baselines refresh must bring up to date: the runs an
upload or a status change touched (DirtyRun) and their keys (DirtyKey).
Marking is all an upload or a moderator's action does for the baselines;
refresh.py claims the marks and does the work, under the protocol its
docstring describes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from django.db import connection
from django.utils import timezone

from benchhub.baselines.models import DirtyKey, DirtyRun
from benchhub.results.models import Run

# A claim older than this is taken as abandoned (its process died).
CLAIM_EXPIRY = dt.timedelta(minutes=10)


def mark_runs(runs: Iterable[tuple[int, str]], now: dt.datetime) -> bool:
    """Mark these (run id, key) pairs and their keys (on PostgreSQL in one
    statement: an upload's share of the work is this one upsert). True when
    a refresh should be queued: a key mark is new, or its claim expired."""
    runs = sorted(set(runs))
    if not runs:
        return False
    keys = sorted({key for _, key in runs})
    stamp = connection.ops.adapt_datetimefield_value(now)  # raw SQL: as Django stores it
    if connection.vendor != "postgresql":
        _upsert(DirtyRun, ["run_id", "fingerprint", "marked_at"], [(*r, stamp) for r in runs])
        return mark_keys(keys, now)
    run_table = connection.ops.quote_name(DirtyRun._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH marked AS (INSERT INTO {run_table} (run_id, fingerprint, marked_at) "  # noqa: S608 -- only table names are interpolated
            f"VALUES {', '.join(['(%s, %s, %s)'] * len(runs))} "
            "ON CONFLICT (run_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
            "marked_at = EXCLUDED.marked_at) "
            + _KEY_UPSERT.format(
                table=connection.ops.quote_name(DirtyKey._meta.db_table),
                values=", ".join(["(%s, %s, %s)"] * len(keys)),
                update="marked_at = EXCLUDED.marked_at",
            ),
            [item for run in runs for item in (*run, stamp)]
            + [item for key in keys for item in (key, stamp, None)],
        )
        return queue_needed(cursor.fetchall(), now)


# Advisory locks of key marks (PostgreSQL; the first key of the two-key form):
# an upload holds its keys' shared, so uploads never wait for each other here;
# a refresh deciding that a key is done holds it exclusively (hold_marks, in
# refresh._finish). A busy key's mark keeps its first time, so _claim (oldest
# first) takes it before keys marked later while it has runs left.
# Both take them in the order of the lock's number (two keys may share one).
MARK_LOCKS = 0x626D  # "bm"

# The marks of runs that the same statement inserts (PostgreSQL): CTEs to
# append to a WITH that has a CTE {runs} of (id, fingerprint), with the stamp
# as the parameter %(marked_at)s. The upload stores its rows and their marks
# in one statement this way (results/storage.py); the rows of ``dirty_key``
# (inserted, claimed_at) are what queue_needed takes.
#
# A run mark is upserted as mark_runs does. A key mark is only inserted where
# there is none (an approval, a trusted submitter's too, still moves it forward
# through mark_runs): updating it, as mark_runs does, made every upload of a key
# take its turn on that one row and hold it through its commit's WAL flush,
# so a busy key's uploads committed one at a time (docs/performance.md,
# Ingest). What the update told a refresh (a run came while it worked) it
# now learns under the key's lock: the upload takes the lock (shared) before
# it looks for the key's mark, and the refresh takes it (exclusive) before
# it looks for the key's run marks, so it sees every run mark of an upload
# that found the key marked; an upload that comes after the refresh removed
# the mark inserts a new one, and queues a refresh.
MARK_INSERTED_RUNS = """
key_locked AS (
    SELECT fingerprint, pg_advisory_xact_lock_shared({mark_locks}, hashtext(fingerprint)) AS held
    FROM (SELECT DISTINCT fingerprint FROM {runs}) AS keys
    ORDER BY hashtext(fingerprint), fingerprint
), dirty_run AS (
    INSERT INTO {run_table} (run_id, fingerprint, marked_at)
    SELECT id, fingerprint, %(marked_at)s FROM {runs} ORDER BY id
    ON CONFLICT (run_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
        marked_at = EXCLUDED.marked_at
), key_inserted AS (
    INSERT INTO {key_table} (fingerprint, marked_at, rebuild_at)
    SELECT fingerprint, %(marked_at)s, NULL::timestamptz FROM key_locked
    WHERE (SELECT count(*) FROM key_locked) > 0  -- every lock before the first insert
    ORDER BY fingerprint
    ON CONFLICT (fingerprint) DO NOTHING
    RETURNING fingerprint
), dirty_key AS (
    SELECT true AS inserted, NULL::timestamptz AS claimed_at FROM key_inserted
    UNION ALL
    SELECT false, mark.claimed_at FROM {key_table} AS mark
    WHERE mark.fingerprint IN (SELECT fingerprint FROM key_locked)
      AND mark.fingerprint NOT IN (SELECT fingerprint FROM key_inserted)
)"""


def mark_inserted_runs_sql(runs: str) -> str:
    """MARK_INSERTED_RUNS over the CTE named ``runs``: it defines the CTE
    ``dirty_key``, whose rows tell queue_needed whether to queue a refresh."""
    quote = connection.ops.quote_name
    return MARK_INSERTED_RUNS.format(
        mark_locks=MARK_LOCKS,
        run_table=quote(DirtyRun._meta.db_table),
        key_table=quote(DirtyKey._meta.db_table),
        runs=runs,
    )


def hold_marks(keys: list[str]) -> None:
    """Until the caller's transaction ends, no upload of these keys is between
    looking for its key's mark and committing (MARK_INSERTED_RUNS:
    uploads hold the lock shared and do not update a mark they find): the
    run marks read after this include every upload that found the mark.
    PostgreSQL; in the order of the locks' numbers, as uploads take theirs
    (two keys may hash to one lock: in key order, that could deadlock)."""
    if connection.vendor != "postgresql" or not keys:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, h) "
            "FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(%s::text[]) AS k) AS locks "
            "ORDER BY h",
            [MARK_LOCKS, list(set(keys))],
        )


# xmax = 0 marks a row this statement inserted rather than updated.
_KEY_UPSERT = (
    "INSERT INTO {table} (fingerprint, marked_at, rebuild_at) VALUES {values} "
    "ON CONFLICT (fingerprint) DO UPDATE SET {update} RETURNING (xmax = 0), claimed_at"
)


def queue_needed(rows: list[tuple[bool, dt.datetime | None]], now: dt.datetime) -> bool:
    """Whether key marks' rows (inserted, claimed_at) call for a refresh: a
    new mark, or one held by an expired claim."""
    stale = now - CLAIM_EXPIRY
    return any(inserted or (claimed and claimed < stale) for inserted, claimed in rows)


def mark_keys(keys: list[str], now: dt.datetime, *, rebuild: bool = False) -> bool:
    """Upsert the key marks (``rebuild``: recompute them from their data).
    True when at least one was new, or held by an expired claim."""
    if not keys:
        return False
    table = connection.ops.quote_name(DirtyKey._meta.db_table)
    values = ", ".join(["(%s, %s, %s)"] * len(keys))
    update = "marked_at = EXCLUDED.marked_at"
    if rebuild:
        update += ", rebuild_at = EXCLUDED.rebuild_at"
    stamp = connection.ops.adapt_datetimefield_value(now)  # raw SQL: as Django stores it
    params = [item for key in keys for item in (key, stamp, stamp if rebuild else None)]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_KEY_UPSERT.format(table=table, values=values, update=update), params)
            return queue_needed(cursor.fetchall(), now)
        cursor.execute(
            f"INSERT INTO {table} (fingerprint, marked_at, rebuild_at) VALUES {values} "  # noqa: S608 -- only the table name is interpolated
            f"ON CONFLICT (fingerprint) DO UPDATE SET {update}",
            params,
        )
    return True  # cannot tell inserted from updated: queue anyway


def _upsert(model, columns: list[str], rows: list[tuple]) -> None:
    """INSERT … ON CONFLICT (first column) DO UPDATE the others."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    update = ", ".join(f"{c} = EXCLUDED.{c}" for c in map(connection.ops.quote_name, columns[1:]))
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):
            batch = rows[start : start + 500]
            cursor.execute(
                f"INSERT INTO {table} ({names}) VALUES {', '.join([placeholders] * len(batch))} "  # noqa: S608 -- names only
                f"ON CONFLICT ({connection.ops.quote_name(columns[0])}) DO UPDATE SET {update}",
                [item for row in batch for item in row],
            )


def baselines_mark_all() -> int:
    """The nightly full recompute: every key with a run is marked for a
    rebuild, which the refresh task's batches carry out. Returns how many."""
    keys = sorted(set(Run.objects.order_by().values_list("fingerprint", flat=True).distinct()))
    for start in range(0, len(keys), 1000):
        mark_keys(keys[start : start + 1000], timezone.now(), rebuild=True)
    return len(keys)
