"""Reads on a PostgreSQL streaming replica (DATABASE_REPLICA_URL), everything
else on the primary.

A request may read on the replica when it can only read (GET, HEAD,
OPTIONS), is outside the pages that show a user their own or pending data
(PRIMARY_PATHS), and its user wrote nothing in the last
DATABASE_REPLICA_STICKY_SECONDS: a replica replays the primary's changes a
moment later, and whoever just uploaded expects to see the upload on the
next page. Within such a request, a read goes to the primary once the
request has written, inside a transaction, and for the tables of sign-in
(sessions, users, tokens: a session or token made a moment ago must work
on the next request). Tasks, commands and the shell read on the primary:
they read to write.

A replica that does not answer is left alone for DATABASE_REPLICA_RETRY_SECONDS
(its reads go to the primary meanwhile) and /healthz says "degraded".
Migrations run on the primary only; the replica replays them.

Raw SQL on django.db.connection (the upload, the comparisons' aggregation
and its kept answers, the baselines' refresh) is on the primary whatever
this router says: it never asks one.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, HttpResponse

from benchhub.lib.ratelog import RateLimitedLog

REPLICA = "replica"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# What a user sees of their own (pending included) or of everyone's pending
# work: read where it was written, never a moment behind.
PRIMARY_PATHS = (
    "/accounts/",
    "/moderation/",
    "/admin/",
    "/imports/",
    "/api/v1/submissions/",
    "/api/v1/imports/",
)
# Sign-in's tables: a session or token created on the previous request.
PRIMARY_APPS = frozenset({"auth", "sessions", "accounts", "contenttypes", "admin"})

logger = logging.getLogger("benchhub.replica")
_warnings = RateLimitedLog(logger, interval=60.0)


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


class ReplicaAvailability:
    """Whether this process reads on the replica now: after a failure to
    reach it, not for ``retry_seconds``, so that one request in that time,
    not each, waits for the connection to fail."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down_since: float | None = None

    def usable(self) -> bool:
        if self._clock() < self._down_until:
            return False
        return probe() is None

    def failed(self, error: str) -> None:
        now = self._clock()
        with self._lock:
            self._down_until = now + settings.DATABASE_REPLICA_RETRY_SECONDS
            first = self._down_since is None
            if first:
                self._down_since = now
        if first:
            logger.warning(
                "replica: %s; reads go to the primary, tried again every %d s",
                error,
                settings.DATABASE_REPLICA_RETRY_SECONDS,
            )
        else:
            _warnings.warning("replica-down", "replica: still %s; reads on the primary", error)

    def recovered(self) -> None:
        now = self._clock()
        with self._lock:
            since, self._down_since, self._down_until = self._down_since, None, 0.0
        if since is not None:
            logger.warning("replica: answers again after %d s; reads go to it", now - since)


availability = ReplicaAvailability()


def probe() -> str | None:
    """Connects to the replica (or checks the kept connection, once per
    request as Django checks the primary's); None when it answers, else the
    error's name, noted in ``availability``."""
    replica = connections[REPLICA]
    try:
        replica.close_if_health_check_failed()
        replica.ensure_connection()
    except DatabaseError as exc:
        error = type(exc).__name__
        availability.failed(error)
        return error
    availability.recovered()
    return None


def _wrote_key(user_pk: object) -> str:
    return f"replica:wrote:{user_pk}"


def _user_pk(request: HttpRequest) -> object | None:
    """The signed-in user's key, asking the session only when the request
    carries one (or a token): reading it marks the answer Vary: Cookie."""
    if (
        settings.SESSION_COOKIE_NAME not in request.COOKIES
        and "HTTP_AUTHORIZATION" not in request.META
    ):
        return None
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    return user.pk


@dataclass
class RequestReads:
    """Where one request reads: decided at its first read that may go to the
    replica, and kept for the request, so that its pages agree with
    themselves; a write sends the rest of its reads to the primary."""

    request: HttpRequest
    wrote: bool = False
    alias: str | None = None

    def read_alias(self) -> str:
        if self.alias is None:
            self.alias = REPLICA if self._may_read_replica() else DEFAULT_DB_ALIAS
        return self.alias

    def _may_read_replica(self) -> bool:
        request = self.request
        if request.method not in SAFE_METHODS or request.path.startswith(PRIMARY_PATHS):
            return False
        user_pk = _user_pk(request)
        if user_pk is not None and cache.get(_wrote_key(user_pk)):
            return False
        return availability.usable()


_current: contextvars.ContextVar[RequestReads | None] = contextvars.ContextVar(
    "benchhub_replica_reads", default=None
)


class ReplicaRouter:
    """settings.DATABASE_ROUTERS when DATABASE_REPLICA_URL is set."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        reads = _current.get()
        if (
            reads is None
            or reads.wrote
            or model._meta.app_label in PRIMARY_APPS
            or connections[DEFAULT_DB_ALIAS].in_atomic_block
        ):
            return DEFAULT_DB_ALIAS
        return reads.read_alias()

    def db_for_write(self, model: type, **hints: Any) -> str:
        reads = _current.get()
        # Sign-in's own bookkeeping (a session saved, a token's last use)
        # changes nothing the replica serves.
        if reads is not None and model._meta.app_label not in PRIMARY_APPS:
            reads.wrote = True
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        # One database, two ways to reach it: a row read on the replica may
        # point to one read on the primary.
        aliases = {DEFAULT_DB_ALIAS, REPLICA}
        if obj1._state.db in aliases and obj2._state.db in aliases:
            return True
        return None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # the replica replays what the primary migrated


class ReplicaReadsMiddleware:
    """Lets the router read this request on the replica where it may, and
    remembers for DATABASE_REPLICA_STICKY_SECONDS that its user wrote (in the
    shared cache: the next request may reach another web process)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        reads = RequestReads(request)
        _current.set(reads)
        try:
            response = self.get_response(request)
        except BaseException:
            _current.set(None)
            raise
        # The upload writes by raw SQL, which the router never sees: any
        # request that may write counts.
        if reads.wrote or request.method not in SAFE_METHODS:
            user_pk = _user_pk(request)
            if user_pk is not None:
                cache.set(_wrote_key(user_pk), 1, settings.DATABASE_REPLICA_STICKY_SECONDS)
        if response.streaming:
            # A streamed export reads while it is sent, after this returns.
            response._resource_closers.append(lambda: _current.set(None))
        else:
            _current.set(None)
        return response


def replica_check() -> dict[str, Any]:
    """/healthz's view of the replica: reachable, and how many bytes of the
    primary's log it has yet to replay. Unreachable is "degraded": reads go
    to the primary meanwhile."""
    started = time.monotonic()
    error = probe()
    if error is not None:
        return {"ok": False, "degraded": True, "error": error}
    answer: dict[str, Any] = {"ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}
    try:
        with connections[REPLICA].cursor() as cursor:
            cursor.execute("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()")
            in_recovery, replayed = cursor.fetchone()
        if not in_recovery:
            # Promoted, or pointed at a primary: writes through it are not
            # the site's, and nothing here can tell how far behind it is.
            return {**answer, "ok": False, "degraded": True, "error": "not a replica"}
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [replayed])
            (behind,) = cursor.fetchone()
    except DatabaseError as exc:
        return {"ok": False, "degraded": True, "error": type(exc).__name__}
    return {**answer, "behind_bytes": max(int(behind or 0), 0)}
