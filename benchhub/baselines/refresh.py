"""Bringing the baselines of dirty keys up to date (the task's work; marking
is in marking.py, queueing in services.py).

Each baseline is a histogram (baselines/histogram.py): counts per bucket,
which an approval adds to and a rejection subtracts from. The protocol
between uploads, moderation and the refresh, so that none waits for another
and no step reads a whole key:

- an upload or a status change *marks* its runs (DirtyRun) and their keys
  (DirtyKey: insert, or move ``marked_at`` forward; an upload's statement
  only inserts: marking.MARK_INSERTED_RUNS). Nothing else;
- a refresh *claims* up to a batch of unclaimed keys in a short transaction
  (``claimed_at``, and its own token ``claim`` that only it releases), so
  that one key is only ever worked on by one refresh;
- for each key it takes up to ``runs`` of its dirty runs, compares what each
  should count (approved, public: baseline_pooled_q) with what it counts
  (CountedRun), adds or subtracts the difference to the buckets, summarizes
  the baselines whose buckets changed (reading their buckets, never the
  measurements of other runs), and scores the dirty runs' measurements
  against the result. The work of one round is bounded by ``runs``;
- it then deletes each run mark (and key mark) whose ``marked_at`` is still
  the one it read, and releases the rest (re-marked meanwhile, or more runs
  than one round) for the next round, deciding under the keys' mark locks
  (marking.hold_marks);
- a claim older than CLAIM_EXPIRY is taken as abandoned (its process died)
  and claimed again by the next refresh, whoever runs it: the periodic
  sweep, a starting worker, or the next upload to that key (marking a key
  whose claim expired queues a refresh like a new mark does). Its round
  may only be slow, so each round's transaction also holds its key's
  advisory lock (``_hold``): two rounds of one key never overlap.

A key marked for a *rebuild* (``rebuild_at``: the nightly recompute, an
upgrade from baselines without histograms, a counted run deleted outright)
is recomputed from its data instead: the same buckets and summaries, from
every measurement of the key, and every one of them scored again. Only a
worker does that (``rebuild=True``); a refresh running inside a request
leaves such keys alone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable

from django.db import DatabaseError, connection, transaction
from django.db.models import Model, Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from benchhub.baselines.histogram import bucket_of, summarize_buckets
from benchhub.baselines.marking import CLAIM_EXPIRY, hold_marks, mark_keys
from benchhub.baselines.models import Baseline, BaselineBucket, CountedRun, DirtyKey, DirtyRun
from benchhub.baselines.selectors import (
    baseline_measurements,
    baseline_point,
    baseline_pooled_runs_q,
)
from benchhub.baselines.statistics import Summary, outlier_score
from benchhub.results.models import Measurement, Run

# Keys one task takes before it queues the next round.
BATCH = 100
# Dirty runs of one key one round applies: what bounds a round's work.
RUNS_PER_ROUND = 500

logger = logging.getLogger(__name__)

PointKey = tuple[int, str]  # (metric id, point)


# --- claiming --------------------------------------------------------------


def baselines_refresh(
    *, limit: int = BATCH, runs: int = RUNS_PER_ROUND, rebuild: bool = True
) -> tuple[int, int]:
    """Bring up to ``limit`` dirty keys up to date, applying up to ``runs``
    dirty runs to each (``rebuild``: also recompute the keys marked for a
    rebuild). Returns how many keys it took and how many marks are left
    for a next round. Safe to run concurrently and to repeat."""
    claimed = _claim(limit, rebuild=rebuild)
    try:
        for mark in claimed:
            logger.info("baselines: start %s at %.6f", mark.fingerprint, time.time())
            if mark.rebuild_at is not None:
                _rebuild(mark.fingerprint)
            else:
                _apply(mark.fingerprint, runs)
            logger.info("baselines: done %s at %.6f", mark.fingerprint, time.time())
        _finish(claimed)
    except BaseException:
        # A key's work is one transaction, rolled back, and so is _finish's:
        # release the claims at once (not after CLAIM_EXPIRY) so that the
        # next round retries. (A failure that took the connection with it
        # left it closed: Django opens a new one for the release.)
        with contextlib.suppress(DatabaseError):
            _release(claimed)
        raise
    return len(claimed), _claimable(rebuild=rebuild).count()


def _claimable(*, rebuild: bool = True):
    stale = timezone.now() - CLAIM_EXPIRY
    marks = DirtyKey.objects.filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale))
    return marks if rebuild else marks.filter(rebuild_at__isnull=True)


def _claim(limit: int, *, rebuild: bool = True) -> list[DirtyKey]:
    with transaction.atomic():
        marks = list(
            _claimable(rebuild=rebuild)
            .select_for_update(skip_locked=True)
            .order_by("marked_at")[:limit]
        )
        now, token = timezone.now(), uuid.uuid4()
        DirtyKey.objects.filter(pk__in=[m.pk for m in marks]).update(claimed_at=now, claim=token)
    for mark in marks:
        mark.claimed_at, mark.claim = now, token  # this round's claim, which _release compares
    return marks


def _release(claimed: list[DirtyKey]) -> None:
    """Clear these claims where they are still this round's (its token: a
    time could be another round's too, claimed in the same clock tick): one
    that expired under a slow round may have been taken over by another
    round, still at work, whose claim must keep a third one off the key."""
    if claimed:
        DirtyKey.objects.filter(pk__in=[m.pk for m in claimed], claim=claimed[0].claim).update(
            claimed_at=None, claim=None
        )


def _finish(claimed: list[DirtyKey]) -> None:
    """Delete the key marks nothing happened to meanwhile and that have no
    dirty run left; release the others for the next round (_release: only
    where the claim is still this round's)."""
    if not claimed:
        return
    keys = [m.fingerprint for m in claimed]
    with transaction.atomic():
        hold_marks(keys)
        busy = set(
            DirtyRun.objects.filter(fingerprint__in=keys).values_list("fingerprint", flat=True)
        )
        done = Q(pk__in=[])
        for mark in claimed:
            if mark.fingerprint not in busy:
                done |= Q(pk=mark.pk, marked_at=mark.marked_at)
        DirtyKey.objects.filter(done).delete()
        for mark in claimed:
            if mark.rebuild_at is not None:
                # Rebuilt: unless a rebuild was asked again meanwhile.
                DirtyKey.objects.filter(pk=mark.pk, rebuild_at=mark.rebuild_at).update(
                    rebuild_at=None
                )
        _release(claimed)


# --- the incremental update ------------------------------------------------


def _apply(fingerprint: str, limit: int) -> None:
    """Apply up to ``limit`` dirty runs of one key: their values in or out
    of the buckets, the changed baselines summarized again from their
    buckets, the runs' measurements scored. Reads the dirty runs'
    measurements and the changed baselines' buckets; nothing else of the key."""
    with transaction.atomic():
        _hold(fingerprint)
        dirty = list(
            DirtyRun.objects.filter(fingerprint=fingerprint)
            .order_by("marked_at", "run_id")
            .values_list("run_id", "marked_at")[:limit]
        )
        if not dirty:
            return
        run_ids = [run_id for run_id, _ in dirty]
        # Runs that still carry this key (a run deleted meanwhile is gone).
        present = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "fingerprint"))
        public = set(
            Run.objects.filter(pk__in=run_ids, fingerprint=fingerprint)
            .filter(baseline_pooled_runs_q())
            .values_list("pk", flat=True)
        )
        counted = set(
            CountedRun.objects.filter(run_id__in=run_ids).values_list("run_id", flat=True)
        )
        if counted - set(present):
            # Counted, then deleted outright: its values are gone with it.
            mark_keys([fingerprint], timezone.now(), rebuild=True)
            return
        adding, removing = public - counted, counted - public

        deltas: dict[PointKey, Counter] = defaultdict(Counter)
        parameters: dict[PointKey, dict] = {}
        scored: list[tuple[int, PointKey, float, float | None]] = []
        # The parameters as text, decoded and made a point once per distinct
        # text: a round's runs share a few (a sweep's client levels), and
        # decoding each row's JSON and spelling its point took most of a
        # round's CPU, the worker's share of an upload (benchmarks/ingest.py).
        points: dict[str, tuple[str, dict]] = {}
        rows = (
            Measurement.objects.filter(run_id__in=[r for r in run_ids if r in present])
            .filter(approximate=False)
            .order_by()
            .annotate(parameters_text=Cast("parameters", TextField()))
            .values_list("id", "run_id", "metric_id", "parameters_text", "value", "outlier_score")
        )
        for pk, run_id, metric_id, text, value, stored in rows:
            known = points.get(text)
            if known is None:
                decoded = json.loads(text)
                known = points[text] = (baseline_point(decoded), decoded)
            point, point_parameters = known
            key = (metric_id, point)
            scored.append((pk, key, value, stored))
            sign = 1 if run_id in adding else -1 if run_id in removing else 0
            # Only a value that goes in or out has a bucket to find: most of
            # a round's are pending uploads', only scored.
            if sign and (bucket := bucket_of(value)) is not None:
                deltas[key][bucket] += sign
                parameters.setdefault(key, point_parameters)

        summaries = _merge(fingerprint, deltas, parameters)
        missing = {key for _, key, _, _ in scored} - set(summaries)
        summaries.update(_stored_summaries(fingerprint, missing))
        _write_scores(
            [
                (pk, score)
                for pk, key, value, stored in scored
                if (score := _score(value, summaries.get(key))) != stored
            ]
        )
        CountedRun.objects.filter(run_id__in=removing).delete()
        CountedRun.objects.bulk_create(
            [CountedRun(run_id=r, fingerprint=fingerprint) for r in sorted(adding)]
        )
        _unmark(dirty)


# The first key of PostgreSQL's two-key advisory locks that _hold takes:
# the baselines' (any constant no other lock of the database uses).
_KEY_LOCKS = 0x6262  # "bb"


def _hold(fingerprint: str) -> None:
    """Work on this key in one round at a time, until the caller's
    transaction ends (PostgreSQL; SQLite runs one writing transaction at a
    time anyway). Claims keep rounds apart, but a claim older than
    CLAIM_EXPIRY is taken as abandoned while its round may only be slow (a
    nightly batch of large keys): a rebuild from data read before another
    round's commit would then replace what that round counted, and the run
    it counted would be neither counted nor marked. Only refreshes take this
    lock: an upload's or an approval's marks never wait for it."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [_KEY_LOCKS, fingerprint])


def _unmark(marks: list[tuple[int, dt.datetime]]) -> None:
    """Delete these run marks, each only if its ``marked_at`` is still the
    one read: a run marked again meanwhile stays marked for the next round.
    (A re-mark not yet committed holds the row: the DELETE waits for it and
    then sees the new time.)"""
    if connection.vendor == "postgresql":
        # One statement of fixed text, the pairs as two arrays: Django built
        # and compiled an OR of one Q per mark, about a third of a worker's
        # round over a hot key's pending uploads (benchmarks/ingest.py).
        # PostgreSQL rechecks the join of a row it had to wait for against
        # the row's new version, as it did the OR: a run marked again
        # meanwhile is not deleted.
        table = connection.ops.quote_name(DirtyRun._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {table} AS d "  # noqa: S608 -- the table name only
                "USING unnest(%s::bigint[], %s::timestamptz[]) AS u(run_id, marked_at) "
                "WHERE d.run_id = u.run_id AND d.marked_at = u.marked_at",
                [[run_id for run_id, _ in marks], [marked_at for _, marked_at in marks]],
            )
        return
    for start in range(0, len(marks), 500):
        unchanged = Q(pk__in=[])
        for run_id, marked_at in marks[start : start + 500]:
            unchanged |= Q(run_id=run_id, marked_at=marked_at)
        DirtyRun.objects.filter(unchanged).delete()


def _score(value: float, summary: Summary | None) -> float | None:
    return outlier_score(value, summary) if summary is not None else None


def _merge(
    fingerprint: str, deltas: dict[PointKey, Counter], parameters: dict[PointKey, dict]
) -> dict[PointKey, Summary | None]:
    """Add the deltas to the buckets of these points (creating their
    baselines), summarize each point from its buckets, and store that;
    a point left with no value loses its baseline. Returns the summaries."""
    deltas = {key: {b: d for b, d in counter.items() if d} for key, counter in deltas.items()}
    deltas = {key: changes for key, changes in deltas.items() if changes}
    if not deltas:
        return {}
    ids = _baseline_ids(fingerprint, deltas, parameters)
    bucket_rows = [
        (ids[key], bucket, delta)
        for key, changes in deltas.items()
        for bucket, delta in sorted(changes.items())
    ]
    table = connection.ops.quote_name(BaselineBucket._meta.db_table)
    count = connection.ops.quote_name("count")
    with connection.cursor() as cursor:
        for start in range(0, len(bucket_rows), 1000):
            batch = bucket_rows[start : start + 1000]
            cursor.execute(
                f"INSERT INTO {table} (baseline_id, value, {count}) VALUES "  # noqa: S608 -- names only
                + ", ".join(["(%s, %s, %s)"] * len(batch))
                + f" ON CONFLICT (baseline_id, value) DO UPDATE SET {count} = "
                f"{table}.{count} + EXCLUDED.{count}",
                [item for row in batch for item in row],
            )
    BaselineBucket.objects.filter(baseline_id__in=ids.values(), count__lte=0).delete()

    histograms: dict[int, list[tuple[float, int]]] = defaultdict(list)
    with connection.cursor() as cursor:
        # Plain rows, no queryset machinery: a hot key's baselines have
        # tens of thousands of buckets. In order, so that summarize_buckets'
        # sorts find runs already sorted (linear instead of n log n).
        cursor.execute(
            f"SELECT baseline_id, value, {count} FROM {table} "  # noqa: S608 -- names only
            f"WHERE baseline_id IN ({', '.join(['%s'] * len(ids))}) ORDER BY baseline_id, value",
            list(ids.values()),
        )
        for baseline_id, value, n in cursor.fetchall():
            histograms[baseline_id].append((value, n))
    summaries = {key: summarize_buckets(histograms.get(ids[key], ())) for key in ids}
    _store(ids, summaries)
    return summaries


def _baseline_ids(
    fingerprint: str, keys: Iterable[PointKey], parameters: dict[PointKey, dict]
) -> dict[PointKey, int]:
    """The baseline row of each point, created (empty) where there is none."""
    keys = set(keys)
    existing = _existing(fingerprint, keys)
    new = [
        Baseline(
            fingerprint=fingerprint,
            metric_id=metric_id,
            point=point,
            parameters=parameters.get((metric_id, point), {}),
            n=0,
            median=0.0,
            q1=0.0,
            q3=0.0,
            minimum=0.0,
            maximum=0.0,
            mad=0.0,
        )
        for metric_id, point in sorted(keys - set(existing))
    ]
    if new:
        Baseline.objects.bulk_create(new, batch_size=500)
        existing = _existing(fingerprint, keys)
    return existing


def _existing(fingerprint: str, keys: set[PointKey]) -> dict[PointKey, int]:
    found = Baseline.objects.filter(
        fingerprint=fingerprint, point__in={point for _, point in keys}
    ).values_list("metric_id", "point", "pk")
    return {(m, p): pk for m, p, pk in found if (m, p) in keys}


def _store(ids: dict[PointKey, int], summaries: dict[PointKey, Summary | None]) -> None:
    gone = [ids[key] for key, summary in summaries.items() if summary is None]
    Baseline.objects.filter(pk__in=gone).delete()
    now = timezone.now()
    kept = [(ids[key], summary) for key, summary in summaries.items() if summary is not None]
    if connection.vendor != "postgresql":
        stamp = connection.ops.adapt_datetimefield_value(now)  # raw SQL: as Django stores it
        fields = ["n", "median", "q1", "q3", "minimum", "maximum", "mad"]
        _update_rows(
            Baseline,
            [*fields, "computed_at"],
            [(*(_fields(summary)[f] for f in fields), stamp, pk) for pk, summary in kept],
        )
        return
    # One statement (Django's bulk_update builds a CASE per field and row:
    # most of an approval's time at 54 baselines).
    table = connection.ops.quote_name(Baseline._meta.db_table)
    fields = ("n", "median", "q1", "q3", "minimum", "maximum", "mad")
    row = "(%s::bigint, %s::integer" + ", %s::double precision" * 6 + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(kept), 500):
            batch = kept[start : start + 500]
            cursor.execute(
                f"UPDATE {table} AS b SET "  # noqa: S608 -- names only
                + ", ".join(f"{f} = v.{f}" for f in fields)
                + ", computed_at = %s FROM (VALUES "
                + ", ".join([row] * len(batch))
                + f") AS v(id, {', '.join(fields)}) WHERE b.id = v.id",
                [now]
                + [
                    item
                    for pk, summary in batch
                    for item in (pk, *(_fields(summary)[f] for f in fields))
                ],
            )


def _fields(summary: Summary) -> dict:
    return {
        "n": summary.n,
        "median": summary.median,
        "q1": summary.q1,
        "q3": summary.q3,
        "minimum": summary.minimum,
        "maximum": summary.maximum,
        "mad": summary.mad,
    }


def _stored_summaries(fingerprint: str, keys: set[PointKey]) -> dict[PointKey, Summary]:
    if not keys:
        return {}
    rows = Baseline.objects.filter(
        fingerprint=fingerprint, point__in={point for _, point in keys}
    ).values_list("metric_id", "point", "n", "median", "q1", "q3", "minimum", "maximum", "mad")
    return {(m, p): Summary(*rest) for m, p, *rest in rows if (m, p) in keys}


# --- the full recompute ------------------------------------------------------


def _rebuild(fingerprint: str) -> None:
    """Recompute one key from every measurement of it: the buckets, the
    baselines and every score, in one pass over values-only rows (no model
    instance per measurement), writing only the scores that changed.

    The run marks it covers are those it reads before it reads the data:
    each was committed with its change, which the data read then sees. A
    mark's time says nothing of that: an upload takes its time before its
    statement and may commit after the data read, so clearing the marks
    older than the rebuild's start lost such a run from the baselines and
    from the marks (tests/baselines/test_rebuild_races.py)."""
    with transaction.atomic():
        _hold(fingerprint)
        covered = list(
            DirtyRun.objects.filter(fingerprint=fingerprint)
            .order_by("run_id")
            .values_list("run_id", "marked_at")
        )
        buckets: dict[PointKey, Counter] = defaultdict(Counter)
        parameters: dict[PointKey, dict] = {}
        # Stored parameters' text → its point and its decoded value (few distinct).
        points: dict[str, tuple[str, dict]] = {}
        members: dict[PointKey, list[tuple[int, float, float | None]]] = defaultdict(list)
        counted: set[int] = set()
        rows = baseline_measurements(fingerprints=[fingerprint]).iterator(chunk_size=5000)
        for pk, run_id, metric_id, text, value, stored, pooled in rows:
            known = points.get(text)
            if known is None:
                decoded = json.loads(text)
                known = points[text] = (baseline_point(decoded), decoded)
            point, point_parameters = known
            key = (metric_id, point)
            members[key].append((pk, value, stored))
            if pooled:
                counted.add(run_id)
                bucket = bucket_of(value)
                if bucket is not None:
                    buckets[key][bucket] += 1
                    parameters.setdefault(key, point_parameters)

        Baseline.objects.filter(fingerprint=fingerprint).delete()
        summaries = {key: summarize_buckets(counter.items()) for key, counter in buckets.items()}
        Baseline.objects.bulk_create(
            [
                Baseline(
                    fingerprint=fingerprint,
                    metric_id=metric_id,
                    point=point,
                    parameters=parameters[metric_id, point],
                    **_fields(summary),
                )
                for (metric_id, point), summary in summaries.items()
                if summary is not None
            ],
            batch_size=500,
        )
        _analyze_if_outgrown(Baseline)
        ids = _existing(fingerprint, set(summaries))
        _insert_buckets(
            (ids[key], value, n)
            for key, counter in buckets.items()
            if key in ids
            for value, n in counter.items()
        )
        _write_scores(
            [
                (pk, score)
                for key, scored in members.items()
                for pk, value, stored in scored
                if (score := _score(value, summaries.get(key))) != stored
            ]
        )
        CountedRun.objects.filter(fingerprint=fingerprint).delete()
        CountedRun.objects.bulk_create(
            [CountedRun(run_id=r, fingerprint=fingerprint) for r in sorted(counted)],
            batch_size=5000,
        )
        _unmark(covered)


def _analyze_if_outgrown(model: type[Model]) -> None:
    """ANALYZE this table when it has more than doubled since PostgreSQL's
    statistics of it were taken.

    Each bucket a rebuild inserts is checked against its baseline by a
    foreign-key query that each connection plans once, from those
    statistics, and keeps. On a new site or after an import, the first full
    recompute starts from an empty, analyzed baselines table: the plan was a
    sequential scan, kept while the table grew to a thousand baselines, and
    the checks took 18 of the 40 s of that recompute at 1 M measurements
    (docs/performance.md). Autovacuum corrects the statistics a minute or
    more later; this corrects them as the table outgrows them, a few times
    over its life, in milliseconds (ANALYZE reads at most 30,000 rows), and
    the new statistics make the kept plans be made again. (Its lock is held
    to the end of the rebuild: another round that outgrows the statistics
    at the same moment waits for it, once.)"""
    if connection.vendor != "postgresql":
        return
    table = model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relpages, pg_relation_size(oid) / current_setting('block_size')::int "
            "FROM pg_class WHERE oid = %s::regclass",
            [table],
        )
        planned, pages = cursor.fetchone()
        if pages > 2 * max(planned, 0) + 1:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


def _insert_buckets(rows: Iterable[tuple[int, float, int]]) -> None:
    """A rebuilt key's buckets: COPY on PostgreSQL (a key can have tens of
    thousands), bulk_create elsewhere."""
    if connection.vendor != "postgresql":
        BaselineBucket.objects.bulk_create(
            (BaselineBucket(baseline_id=b, value=v, count=n) for b, v, n in rows),
            batch_size=5000,
        )
        return
    table = connection.ops.quote_name(BaselineBucket._meta.db_table)
    statement = f'COPY {table} (baseline_id, value, "count") FROM STDIN'
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def _write_scores(changed: list[tuple[int, float | None]]) -> None:
    """One UPDATE per 10,000 changed scores (PostgreSQL joins arrays; other
    databases run one statement per row, in one executemany), in the order
    of the rows' ids: a rebuild gathers them by baseline, and an UPDATE
    that walks the table and its indexes forward took 9 s instead of 13 for
    the million scores of a first recompute (docs/performance.md)."""
    changed.sort()
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
            _update_rows(Measurement, ["outlier_score"], [(score, pk) for pk, score in batch])


def _update_rows(model: type[Model], columns: list[str], rows: list[tuple]) -> None:
    """UPDATE these columns of each row (its values, then its id) in one
    executemany: off PostgreSQL, where Django's bulk_update builds a CASE
    per row and column, 80 % of an in-process round of 20 approved runs and
    of its hold on SQLite's one write lock (docs/performance.md)."""
    if not rows:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    assignments = ", ".join(f"{connection.ops.quote_name(c)} = %s" for c in columns)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {assignments} WHERE id = %s", rows)  # noqa: S608 -- names only
