"""Comparison answers kept until the data they were computed from changes
(and for a few seconds after, while the worker computes them again).

A comparison reads every measurement of its cells (in_database.py): at a
million measurements that is 100-250 ms of PostgreSQL and Python on two
cores, for an answer of a few kilobytes that changes only when a moderator
approves, hides or deletes a result, an approved result arrives, or a
dimension row, the catalog, a user name or an alias rule changes. So the
answer is kept in Django's ``kept`` cache (Redis in production, the
database cache on the embedded default) and served again until one of
those commits.

How "until" is exact: versions bumped on commit.

- Each metric has a version, and so has "every metric" (``EVERY``): an
  opaque token in the cache, replaced by a new random one on each commit
  of a change (``versions_bump``, called from changes.py on commit of
  results' events and of the models' own signals). A token never comes
  back, so an evicted or lost version starts afresh safely: no answer was
  stored under the new one.
- An answer reads one metric's measurements, and is stored with the
  versions of its metric and of every metric as read BEFORE it was
  computed. A change that commits while it is computed bumps a version
  after that read: the answer, whatever snapshot it read, is stored under
  the old tokens and is never served as current again. It is served only
  while both versions are still those it was stored with.
- A change not yet committed has not bumped anything: what is served is
  what computing the answer again would give. Between a commit and its
  bump (the callback runs right after the COMMIT returns, in the same
  thread) another request may still be served the answer from before, as
  if it had come a moment earlier.
- A bump the cache refused (Redis away or read-only) is retried by the
  process before its next answer; until it succeeds that process computes
  every answer (``_unbumped``).

Each answer is stored with what the worker needs to compute it again, and
when it was last served: after a change, the worker recomputes the changed
answers served within the hour (tasks.py), so the next visitor is not the
one who waits. Until it has, for ``BENCHHUB_COMPARISON_STALE_SECONDS``
(30) from the oldest change an answer missed (a bump records when each
token was replaced), the answer from before the change is still served.
After the grace (no worker, or one too busy), the answer is computed on
request; with a grace of 0, at once. The worker's own refresh is never
served the answer it replaces.

An answer is computed once however many ask for it at the same time: the
first takes a lock in the cache (``add``), the others wait for its answer,
at most ``WAIT_SECONDS``, then compute themselves.

Only the public view is kept: a signed-in user who has results of their
own that are not public (pending, hidden …) sees them in comparisons, and
their answers are computed each time. Nothing is kept inside a
transaction (it could hold uncommitted changes), or when
``BENCHHUB_COMPARISON_KEEP_SECONDS`` is 0.

The key is the digest of the code that computes answers (every Python file
of benchhub and of the agent's and contract's packages: a new release starts
afresh), the statement the comparison filters with (so alias spellings and
every filter are in it) and the query's other choices. Answers live at
most ``BENCHHUB_COMPARISON_KEEP_SECONDS``. A failure of the cache is logged
and the answer computed: keeping answers never makes a comparison fail.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import caches
from django.db import connection

from benchhub.lib.ratelog import RateLimitedLog

log = logging.getLogger(__name__)
_warnings = RateLimitedLog(log)

T = TypeVar("T")

# The version of what every metric's answers read (dimension rows, users,
# alias rules, the catalog): a metric id is never 0.
EVERY = 0
# Larger answers are computed each time (the largest of benchmarks/compare.py
# pickles to 44 kB).
MAX_ANSWER_BYTES = 1024 * 1024
# Asked for while another process computes it: wait this long for its
# answer, then compute here too.
WAIT_SECONDS = 10.0
_POLL_SECONDS = 0.05
# Served again: its "last served" is brought up to date at most this often
# (a write per answer per interval, not per request).
SERVED_TOUCH_SECONDS = 300
# The index of answers served (for the worker's refresh) forgets those not
# served for this long.
SERVED_INDEX_SECONDS = 3600
_SERVED = "served"

_clock = time.time
# While the worker computes an answer again: the "last served" it keeps.
_refreshing: ContextVar[float | None] = ContextVar("refreshing", default=None)
# Versions this process failed to bump (the cache refused): retried first.
_unbumped: set[int] = set()
_unbumped_lock = threading.Lock()
# Requests waiting for another's computation now (tests watch it).
waiting = 0


@dataclass
class Entry:
    versions: tuple[str, str]  # every metric's, its metric's, read before computing
    metric: int
    answer: bytes
    request: Any
    served: float


def _cache():
    return caches["kept"]


def _failed(what: str, exc: Exception) -> None:
    """One line per kind of failure every ten seconds (Redis away fails
    every request), not a traceback each."""
    _warnings.warning(
        (what, type(exc).__name__), "kept comparisons: %s: %s: %s", what, type(exc).__name__, exc
    )


def _version_key(metric: int) -> str:
    return f"version:{metric}"


def _answer_key(digest: str) -> str:
    return f"answer:{digest}"


def versions_bump(metrics: Iterable[int] | None) -> None:
    """A change of ``metrics``' measurements (None: of what every metric
    reads) committed: replace their versions by new tokens, recording when
    each old token was replaced (the grace counts from it)."""
    wanted = {EVERY} if metrics is None else set(metrics)
    with _unbumped_lock:
        wanted |= _unbumped
        _unbumped.clear()
    if not wanted:
        return
    keys = [_version_key(metric) for metric in sorted(wanted)]
    kept = _cache()
    try:
        old = kept.get_many(keys)
        kept.set_many({key: secrets.token_hex(8) for key in keys}, timeout=None)
    except Exception as exc:
        with _unbumped_lock:
            _unbumped.update(wanted)
        _failed("versions not bumped (retried before the next answer)", exc)
        return
    now = _clock()
    for token in old.values():
        try:
            kept.add(f"changed:{token}", now, timeout=SERVED_INDEX_SECONDS)
        except Exception as exc:
            _failed("when a version changed could not be kept", exc)


def data_versions(metric: int) -> tuple[str, str]:
    """The versions of what an answer of ``metric`` reads: every metric's
    and its own, made if missing (packs.py stamps each build with them).
    Raises where the cache is away."""
    return _versions_and_entry(metric, None)[0]


def _versions_and_entry(metric: int, digest: str | None) -> tuple[tuple[str, str], Any]:
    """The versions of every metric and of ``metric``, made if missing, and
    the entry kept under ``digest`` (None: not read), in one round trip."""
    if _unbumped:
        versions_bump(())
        if _unbumped:
            raise RuntimeError("a change of this process is not in the versions yet")
    kept = _cache()
    keys = [_version_key(EVERY), _version_key(metric)]
    found = kept.get_many(keys if digest is None else [*keys, _answer_key(digest)])
    for key in keys:
        if key in found:
            continue
        token = secrets.token_hex(8)
        if not kept.add(key, token, timeout=None):  # another process made it first
            token = kept.get(key)
            if token is None:
                raise RuntimeError(f"{key} vanished as it was made")
        found[key] = token
    entry = None if digest is None else found.get(_answer_key(digest))
    return (found[keys[0]], found[keys[1]]), entry


def kept_answer(parts: tuple, compute: Callable[[], T], *, metric: int, request: Any = None) -> T:
    """``compute()``, or the answer it gave for the same ``parts`` (the
    query, and the statement it filters with) if no data it read has
    changed since. ``metric`` is the id of the metric whose measurements it
    reads (no other's: the changes of other metrics leave it kept).
    ``request`` is what the worker needs to compute it again after a change
    (``kept_answers_stale``), or None."""
    seconds = settings.BENCHHUB_COMPARISON_KEEP_SECONDS
    if not seconds or connection.in_atomic_block:
        return compute()
    digest = answer_digest(parts)
    try:
        versions, entry = _versions_and_entry(metric, digest)
    except Exception as exc:
        _failed("kept comparison answers could not be read", exc)
        return compute()
    answer = _served(digest, entry, versions)
    if answer is not None:
        return answer
    with _computing_alone(digest, versions) as answer:
        if answer is not None:
            return answer
        answer = compute()
        _store(digest, versions, metric, answer, request)
    return answer


def _served(digest: str, entry: Any, versions: tuple[str, str]) -> Any:
    """The answer of ``entry`` if it is current, or missed changes only
    within the grace (never to the worker's refresh); else None."""
    if not isinstance(entry, Entry):
        return None
    if entry.versions != versions:
        grace = 0 if _refreshing.get() else settings.BENCHHUB_COMPARISON_STALE_SECONDS
        if not grace or not _missed_within(entry.versions, versions, grace):
            return None
    answer = _loaded(entry.answer)
    if answer is not None and entry.served < _clock() - SERVED_TOUCH_SECONDS:
        entry.served = _clock()
        _keep(digest, entry)
    return answer


def _missed_within(stored: tuple[str, str], current: tuple[str, str], grace: float) -> bool:
    """Whether the oldest change ``stored`` missed was committed within
    ``grace`` seconds (unknown: no)."""
    replaced = [old for old, new in zip(stored, current, strict=True) if old != new]
    try:
        times = _cache().get_many([f"changed:{token}" for token in replaced])
    except Exception:
        return False
    if len(times) < len(replaced):
        return False
    return min(times.values()) > _clock() - grace


@contextmanager
def _computing_alone(digest: str, versions: tuple[str, str]) -> Iterator[Any]:
    """Compute an answer once, however many ask for it at the same time (a
    link shared on a forum; a comparison asked for again right after a
    change): while another process computes it, wait (at most
    ``WAIT_SECONDS``) and yield its answer; else None, and the caller
    computes, holding the lock until it has stored the answer. The lock
    expires by itself if its holder dies."""
    global waiting
    kept = _cache()
    lock = f"computing:{digest}:{':'.join(versions)}"
    try:
        locked = kept.add(lock, True, timeout=int(WAIT_SECONDS) + 1)
    except Exception as exc:
        _failed("the lock of a comparison's computation could not be taken", exc)
        locked = False
    if locked:
        try:
            yield None
        finally:
            try:
                kept.delete(lock)
            except Exception as exc:
                _failed("a comparison's lock could not be released", exc)
        return
    deadline = time.monotonic() + WAIT_SECONDS
    waiting += 1
    try:
        while time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
            try:
                entry = kept.get(_answer_key(digest))
                answer = _served(digest, entry, versions)
                if answer is not None or not kept.has_key(lock):
                    break
            except Exception:
                answer = None
                break
        else:
            answer = None
            log.warning(
                "another computation of a comparison took more than %s s: computed here too",
                WAIT_SECONDS,
            )
    finally:
        waiting -= 1
    # None: the other failed, kept nothing (too large an answer), or is slow.
    yield answer


def kept_answers_stale(*, served_within: int, limit: int) -> list[tuple[str, Any, float]]:
    """(digest, request, last served) of the answers served within
    ``served_within`` seconds whose data changed since, last served first."""
    kept = _cache()
    index = kept.get(_SERVED) or {}
    since = _clock() - served_within
    recent = sorted(
        ((served, digest) for digest, served in index.items() if served > since), reverse=True
    )
    entries = kept.get_many([_answer_key(digest) for _, digest in recent])
    stale = []
    current: dict[int, tuple[str, str]] = {}
    for _, digest in recent:
        entry = entries.get(_answer_key(digest))
        if not isinstance(entry, Entry) or entry.request is None:
            continue
        if entry.metric not in current:
            current[entry.metric] = data_versions(entry.metric)
        if entry.versions != current[entry.metric]:
            stale.append((digest, entry.request, entry.served))
            if len(stale) == limit:
                break
    return stale


@contextmanager
def refreshing(served: float) -> Iterator[None]:
    """Answers stored inside keep ``served`` as their last serving: a
    refresh is not a request, and must not keep an answer nobody asks for
    refreshed for ever."""
    token = _refreshing.set(served)
    try:
        yield
    finally:
        _refreshing.reset(token)


def kept_answer_forget_if_changed(digest: str) -> None:
    """Delete the answer kept under ``digest`` if its data changed since: what
    a refresh could not replace (its key changed with an alias rule, it can
    no longer be asked, or it is too large to keep) is neither picked again
    nor served after the grace."""
    kept = _cache()
    entry = kept.get(_answer_key(digest))
    if isinstance(entry, Entry) and entry.versions != data_versions(entry.metric):
        kept.delete(_answer_key(digest))


def answer_digest(parts: tuple) -> str:
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
        return pickle.loads(data)  # noqa: S301 -- our own entries, written by _store
    except Exception as exc:
        _failed("a kept comparison answer could not be read back", exc)
        return None


def _store(digest: str, versions: tuple[str, str], metric: int, answer: Any, request: Any) -> None:
    """Keep ``answer`` under the versions read before it was computed. If a
    change was committed since, it is not kept: it could only be served
    within the grace, and may replace a fresher answer of the worker's."""
    data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    if len(data) > MAX_ANSWER_BYTES:
        return
    try:
        if data_versions(metric) != versions:
            return
    except Exception as exc:
        _failed("kept comparison answers could not be read", exc)
        return
    served = _refreshing.get() or _clock()
    _keep(digest, Entry(versions, metric, data, request, served))


def _keep(digest: str, entry: Entry) -> None:
    """Store ``entry``, and note in the index of answers served when it was
    last served. The index is read and written back: of two stores at the
    same time one may go unnoted, and that answer is then not refreshed by
    the worker but computed by its next visitor."""
    kept = _cache()
    try:
        kept.set(_answer_key(digest), entry, timeout=settings.BENCHHUB_COMPARISON_KEEP_SECONDS)
        if entry.request is None:
            return
        since = _clock() - SERVED_INDEX_SECONDS
        index = {d: s for d, s in (kept.get(_SERVED) or {}).items() if s > since}
        index[digest] = entry.served
        kept.set(_SERVED, index, timeout=SERVED_INDEX_SECONDS)
    except Exception as exc:
        _failed("a comparison answer could not be kept", exc)
