"""Comparison answers kept until the data they were computed from changes
(and for a few seconds after, while the worker computes them again).

A comparison reads every measurement of its cells (in_database.py): at a
million measurements that is 100-250 ms of PostgreSQL and Python on two
cores, for an answer of a few kilobytes that changes only when a moderator
approves, hides or deletes a result, an approved result arrives, or a
dimension row, the catalog or an alias rule changes. So the answer is kept
(in PostgreSQL, beside the data) and served again until one of those
commits.

How "until" is exact, with no version to bump and no row every upload
contends on:

- triggers (migration 0001) write the id of every transaction that changes
  what a public comparison reads into ``comparisons_datachange``, in that
  transaction: the row commits with the change or vanishes with it. Each
  row names a metric whose measurements the change touched (migration
  0006), or 0: every metric (an alias rule, a dimension row, a user …);
- an answer reads one metric's measurements and is stored with its id:
  only changes of that metric and of every metric concern it. An approval
  of a sql-bench result leaves the select-update answers served, and the
  worker does not compute them again;
- an answer is stored with the snapshot (``pg_current_snapshot()``) taken
  before its first statement: every change its statements could have missed
  was not committed then, so its transaction is not visible in that snapshot;
- an answer is served only while no committed change row of its own is
  invisible in its snapshot (only ids at or above its xmax, or in its list
  of transactions then running, can be: the first change row of its metric
  and of every metric above its xmax and a probe per running transaction,
  not the changes visible to it). A change still in progress is invisible
  to the reader too, so the answer served is what computing it again would
  give;
- change rows are pruned below a horizon kept in ``comparisons_keptfloor``
  (migration 0003), raised before the rows go: an answer whose snapshot's
  xmin is below it may lack one of them and is not served. (A prune can
  run while an answer is computed, under a snapshot no kept row shows.)
  The floor also names the cluster the transaction ids belong to: answers
  of a dump restored on another machine are never served, and the next
  prune deletes them with their change rows.

Each answer is stored with what the worker needs to compute it again, and
when it was last served: after a change, the worker recomputes the answers
of the metrics it touched served within the hour (tasks.py), so the next visitor is not the one who
waits. Until it has, for ``BENCHHUB_COMPARISON_STALE_SECONDS`` (30) from
the oldest change an answer missed (migration 0005 records when each
began), the answer from before the change is still served: an approval
shows in comparisons a few seconds after it, not at once, and no visitor
pays for the computation meanwhile. After the grace (no worker, or one too
busy), the answer is computed on request as without it; with a grace of 0,
at once. The worker's own refresh is never served the answer it replaces.

An answer is computed once however many ask for it at the same time (a
link shared on a forum, the same comparison asked again right after a
change, the worker's refresh and a visitor): the others wait for it, at
most ``WAIT_SECONDS``, under a PostgreSQL advisory lock of its key. On two
cores, three visitors computing the same 300 ms answer side by side would
each wait about a second.

Only the public view is kept: a signed-in user who has results of their
own that are not public (pending, hidden …) sees them in comparisons, and
their answers are computed each time. Nothing is kept inside a
transaction (it could hold uncommitted changes), on the embedded default
(SQLite), or when ``BENCHHUB_COMPARISON_KEEP_SECONDS`` is 0.

The key is the digest of the code that computes answers (every Python file
of benchhub and the agent's package: a new release starts afresh), the
statement the comparison filters with (so alias spellings and every filter
are in it) and the query's other choices.

Bounded: answers live at most ``BENCHHUB_COMPARISON_KEEP_SECONDS``, at most
``BENCHHUB_COMPARISON_KEEP_ENTRIES`` are kept (the oldest go first), and
once a minute per process a store also deletes what expired and the change
rows no kept answer can need any more. A failure to read or store is
logged and the answer computed: keeping answers never makes a comparison
fail.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, connection, transaction

log = logging.getLogger(__name__)

T = TypeVar("T")

# Larger answers are computed each time (the largest of benchmarks/compare.py
# pickles to 44 kB).
MAX_ANSWER_BYTES = 1024 * 1024
# Asked for while another process computes it: wait this long for its
# answer, then compute here too.
WAIT_SECONDS = 10.0
# The first key of the two-key advisory locks of computing an answer (any
# constant no other lock of the database uses; the baselines' is 0x6262).
_ANSWER_LOCKS = 0x6361  # "ca"
# How often (per process) a store also deletes expired answers and old change rows.
PRUNE_SECONDS = 60.0

# Served again: its "last served" is brought up to date at most this often
# (a write per answer per interval, not per request).
SERVED_TOUCH_SECONDS = 300

# Some change of the answer's metric or of every metric (migration 0006)
# committed that the answer's snapshot did not see: one that began after
# it, at or above its xmax (the newest change of every metric and of its
# own: one index entry each, whatever the statistics say; a range of the
# index from its xmax is a parameter's bound, and once most rows are of
# every metric it is planned as a read of the whole table), or one running
# when it was taken, in its xip list (an index probe each). However many
# changes committed between its xmin and xmax — a transaction left open
# holds every new snapshot's xmin back — none of them is read: they are all
# visible to it. Or one may have been pruned (its snapshot's xmin is below
# the floor's horizon), or its snapshot is another cluster's (migration
# 0003): no telling.
_OWN = "c.metric = ANY(ARRAY[0, a.metric])"
_CHANGED = f"""(
    NOT EXISTS (
        SELECT 1 FROM comparisons_keptfloor AS f
        WHERE f.cluster = (pg_control_system()).system_identifier
          AND pg_snapshot_xmin(a.snapshot) >= f.horizon
    )
    OR coalesce(
        GREATEST(
            (SELECT max(c.xid) FROM comparisons_datachange AS c WHERE c.metric = 0),
            (SELECT max(c.xid) FROM comparisons_datachange AS c WHERE c.metric = a.metric)
        ) >= pg_snapshot_xmax(a.snapshot),
        false
    )
    OR EXISTS (
        SELECT 1 FROM comparisons_datachange AS c
        WHERE c.xid = ANY(ARRAY(SELECT pg_snapshot_xip(a.snapshot))) AND {_OWN}
    )
)"""  # noqa: S608 -- constants only
# When the oldest change the answer missed began: the first at or above its
# xmax (by transaction id: one index entry of every metric's changes, one of
# its own metric's) or one that was running when it was taken. NULL if it
# missed none, or none can be told (see _CHANGED).
_MISSED_SINCE = f"""LEAST(
    (SELECT c.at FROM comparisons_datachange AS c
     WHERE c.metric = 0 AND c.xid >= pg_snapshot_xmax(a.snapshot) ORDER BY c.xid LIMIT 1),
    (SELECT c.at FROM comparisons_datachange AS c
     WHERE c.metric = a.metric AND c.xid >= pg_snapshot_xmax(a.snapshot)
     ORDER BY c.xid LIMIT 1),
    (SELECT min(c.at) FROM comparisons_datachange AS c
     WHERE c.xid = ANY(ARRAY(SELECT pg_snapshot_xip(a.snapshot))) AND {_OWN})
)"""  # noqa: S608 -- constants only
# The snapshot comes with the answer: on a miss, the answer computed next is
# stored under it (taken before any statement of that answer). Served: an
# answer nothing changed since, or (a grace of more than 0 s) one whose
# oldest missed change began within the grace.
_READ = f"""
    SELECT pg_current_snapshot()::text, a.answer,
           a.served_at < now() - interval '{SERVED_TOUCH_SECONDS} seconds'
    FROM (SELECT) AS one LEFT JOIN LATERAL (
        SELECT answer, served_at FROM comparisons_keptanswer AS a
        WHERE a.key = %(key)s
          AND a.created_at > now() - make_interval(secs => %(keep)s)
          AND (
              NOT {_CHANGED}
              OR %(grace)s::float8 > 0
                 AND {_MISSED_SINCE} > now() - make_interval(secs => %(grace)s::float8)
          )
    ) AS a ON true
"""  # noqa: S608 -- constants only
_STORE = """
    INSERT INTO comparisons_keptanswer (key, snapshot, metric, answer, request, served_at)
    VALUES (%s, %s::pg_snapshot, %s, %s, %s, coalesce(%s, now()))
    ON CONFLICT (key) DO UPDATE
    SET snapshot = EXCLUDED.snapshot, metric = EXCLUDED.metric, created_at = now(),
        answer = EXCLUDED.answer, request = EXCLUDED.request, served_at = EXCLUDED.served_at
"""
_STALE = f"""
    SELECT a.key, a.request, a.served_at FROM comparisons_keptanswer AS a
    WHERE a.request IS NOT NULL
      AND a.served_at > now() - make_interval(secs => %s)
      AND {_CHANGED}
    ORDER BY a.served_at DESC
    LIMIT %s
"""  # noqa: S608 -- constants only
_PRUNE = [
    "DELETE FROM comparisons_keptanswer WHERE created_at <= now() - make_interval(secs => %s)",
    """DELETE FROM comparisons_keptanswer WHERE key IN (
        SELECT key FROM comparisons_keptanswer ORDER BY created_at DESC OFFSET %s
    )""",
    # A change row matters to an answer only at or above its snapshot's
    # xmin. The horizon goes up to the oldest running transaction or kept
    # answer, whichever is older, so that no kept answer falls below it; an
    # answer being computed may (its snapshot can be older than both): it
    # is then stored but never served. The horizon is raised (and
    # committed) before the change rows below it are deleted.
    """UPDATE comparisons_keptfloor SET horizon = GREATEST(horizon, LEAST(
        pg_snapshot_xmin(pg_current_snapshot()),
        (SELECT min(pg_snapshot_xmin(snapshot)) FROM comparisons_keptanswer)
    ))
    WHERE cluster = (pg_control_system()).system_identifier
    RETURNING horizon::text""",
    "DELETE FROM comparisons_datachange WHERE xid < %s::xid8",
]
# The floor names another cluster (a dump restored on another machine), or
# there is none: every answer goes, and the floor starts at the oldest
# running transaction, below which change rows go as in a prune. So do those
# at or above the snapshot's xmax: committed, so another cluster's (one of
# this cluster there would still be running, invisible here), and ahead of
# every snapshot to come, which they would all make look changed. Those
# between are kept: they may be this cluster's, which an answer being
# computed needs; if another cluster's, at worst one answer is computed twice.
_START_AFRESH = """
    WITH answers AS (DELETE FROM comparisons_keptanswer),
    changes AS (
        DELETE FROM comparisons_datachange
        WHERE xid < pg_snapshot_xmin(pg_current_snapshot())
           OR xid >= pg_snapshot_xmax(pg_current_snapshot())
    )
    INSERT INTO comparisons_keptfloor (cluster, horizon)
    SELECT (pg_control_system()).system_identifier, pg_snapshot_xmin(pg_current_snapshot())
    ON CONFLICT (one) DO UPDATE SET cluster = EXCLUDED.cluster, horizon = EXCLUDED.horizon
"""

_last_prune = 0.0
# While the worker computes an answer again: the "last served" it keeps.
_refreshing: ContextVar[datetime | None] = ContextVar("refreshing", default=None)


def kept_answer(parts: tuple, compute: Callable[[], T], *, metric: int, request: Any = None) -> T:
    """``compute()``, or the answer it gave for the same ``parts`` (the
    query, and the statement it filters with) if no data it read has
    changed since. ``metric`` is the id of the metric whose measurements it
    reads (no other's: the changes of other metrics leave it kept).
    ``request`` is what the worker needs to compute it again after a change
    (``kept_answers_stale``), or None."""
    seconds = settings.BENCHHUB_COMPARISON_KEEP_SECONDS
    if not seconds or connection.vendor != "postgresql" or connection.in_atomic_block:
        return compute()
    key = answer_key(parts)
    # The worker's refresh computes what changed, never served what it replaces.
    grace = 0 if _refreshing.get() else settings.BENCHHUB_COMPARISON_STALE_SECONDS
    read = {"key": key, "keep": seconds, "grace": grace}
    try:
        with connection.cursor() as cursor:
            cursor.execute(_READ, read)
            snapshot, data, touch = cursor.fetchone()
            if touch:
                cursor.execute(
                    "UPDATE comparisons_keptanswer SET served_at = now() WHERE key = %s", [key]
                )
    except DatabaseError:
        log.warning("kept comparison answers could not be read", exc_info=True)
        return compute()
    if data is not None:
        answer = _loaded(bytes(data))
        if answer is not None:
            return answer
    with _computing_alone(read, snapshot) as (snapshot, data):
        if data is not None:
            answer = _loaded(bytes(data))
            if answer is not None:
                return answer
        answer = compute()
        _store(key, snapshot, metric, answer, request)
    return answer


@contextmanager
def _computing_alone(read: dict[str, Any], snapshot: str) -> Iterator[tuple[str, Any]]:
    """Compute an answer once, however many ask for it at the same time (a
    link shared on a forum; a comparison asked for again right after a
    change): while another process computes it, wait (at most
    ``WAIT_SECONDS``) and yield what it kept, read anew with its snapshot;
    else (``snapshot``, None): the caller computes, holding the lock until
    it has stored the answer. The lock is PostgreSQL's, session-level: a
    process that dies releases it with its connection."""
    key = read["key"]
    locked, waited = _lock_answer(key)
    try:
        data = None
        if waited:
            try:
                with connection.cursor() as cursor:
                    cursor.execute(_READ, read)
                    snapshot, data, _ = cursor.fetchone()
            except DatabaseError:
                log.warning("kept comparison answers could not be read", exc_info=True)
        # None: the other failed, or kept nothing (too large an answer).
        yield snapshot, data
    finally:
        if locked:
            try:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_advisory_unlock(%s, hashtext(%s))", [_ANSWER_LOCKS, key]
                    )
            except DatabaseError:
                log.warning("a comparison's lock could not be released", exc_info=True)


def _lock_answer(key: str) -> tuple[bool, bool]:
    """Take the lock of computing this answer: (taken, after waiting for
    another process). Not taken if the wait is too long or the database
    fails: the caller computes anyway, as it would have without the lock."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", [_ANSWER_LOCKS, key])
            if cursor.fetchone()[0]:
                return True, False
            with transaction.atomic():
                cursor.execute(
                    "SELECT set_config('lock_timeout', %s, true)", [f"{WAIT_SECONDS * 1000:.0f}"]
                )
                cursor.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [_ANSWER_LOCKS, key])
            return True, True
    except DatabaseError:
        log.warning(
            "another computation of a comparison took more than %s s: computed here too",
            WAIT_SECONDS,
            exc_info=True,
        )
        return False, False


def kept_answers_stale(*, served_within: int, limit: int) -> list[tuple[str, Any, datetime]]:
    """(key, request, last served) of the answers served within
    ``served_within`` seconds whose data changed since, last served first."""
    with connection.cursor() as cursor:
        cursor.execute(_STALE, [served_within, limit])
        rows = cursor.fetchall()
    stale = []
    for key, data, served_at in rows:
        request = _loaded(bytes(data))
        if request is not None:
            stale.append((key, request, served_at))
    return stale


@contextmanager
def refreshing(served_at: datetime) -> Iterator[None]:
    """Answers stored inside keep ``served_at`` as their last serving: a
    refresh is not a request, and must not keep an answer nobody asks for
    refreshed for ever."""
    token = _refreshing.set(served_at)
    try:
        yield
    finally:
        _refreshing.reset(token)


def kept_answer_forget_if_changed(key: str) -> None:
    """Delete the answer kept under ``key`` if its data changed since: what
    a refresh could not replace (its key changed with an alias rule, it can
    no longer be asked, or it is too large to keep) is neither picked again
    nor served after the grace."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM comparisons_keptanswer AS a WHERE a.key = %s AND {_CHANGED}",  # noqa: S608 -- constants only
            [key],
        )


def answer_key(parts: tuple) -> str:
    digest = hashlib.sha256(code_digest().encode())
    digest.update(repr(parts).encode())
    return digest.hexdigest()


@cache
def code_digest() -> str:
    """Of every Python file of benchhub, of the agent's package (whose
    schema the filters read) and of the contract package (whose verdicts
    the answers carry): a release that changes any of them keeps nothing
    from the one before."""
    import benchhub_agent
    import benchhub_contract

    import benchhub

    digest = hashlib.sha256()
    for package in (benchhub, benchhub_agent, benchhub_contract):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _loaded(data: bytes) -> Any:
    try:
        return pickle.loads(data)  # noqa: S301 -- our own rows, written by _store
    except Exception:
        log.warning("a kept comparison answer could not be read back", exc_info=True)
        return None


def _store(key: str, snapshot: str, metric: int, answer: Any, request: Any) -> None:
    data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > MAX_ANSWER_BYTES:
        return
    asked = None if request is None else pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        with connection.cursor() as cursor:
            cursor.execute(_STORE, [key, snapshot, metric, data, asked, _refreshing.get()])
        _prune_now_and_then()
    except DatabaseError:
        log.warning("a comparison answer could not be kept", exc_info=True)


def _prune_now_and_then() -> None:
    global _last_prune
    now = time.monotonic()
    if now - _last_prune < PRUNE_SECONDS:
        return
    _last_prune = now
    kept_answers_prune()


def kept_answers_prune() -> None:
    """Delete expired answers, the oldest beyond the limit, and the change
    rows no kept answer can need; or everything, if the floor names another
    cluster."""
    with connection.cursor() as cursor:
        cursor.execute(_PRUNE[0], [settings.BENCHHUB_COMPARISON_KEEP_SECONDS])
        cursor.execute(_PRUNE[1], [settings.BENCHHUB_COMPARISON_KEEP_ENTRIES])
        cursor.execute(_PRUNE[2])
        floor = cursor.fetchone()
        if floor is None:
            cursor.execute(_START_AFRESH)
            return
        cursor.execute(_PRUNE[3], floor)
