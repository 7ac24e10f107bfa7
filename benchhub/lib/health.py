"""GET /healthz/ready (and /healthz, its alias): whether this process can
take uploads, for load balancers and container health checks. 200 when the
database answers (its check named for it: postgresql, sqlite) and no
migration is pending; 503 otherwise, saying which. Redis away or refusing
writes (full at maxmemory, a read-only replica) is 200 with the status
"degraded", naming Redis and its error: uploads and reads go on through it
(tests/deploy/test_faults.py), while tasks are not queued and rate limits
are not counted until it takes writes again. A read replica
(DATABASE_REPLICA_URL) that does not answer is "degraded" too: its reads go
to the primary. GET /healthz/live: the process
answers, nothing else asked.
No secret and no version in the answer: it is public.

Logs: one line when the answer turns unavailable or degraded (ERROR,
WARNING), one when it turns ok again (WARNING, with how long and how many
503s), and while it lasts a reminder at most once per LOG_INTERVAL_SECONDS.
A load balancer asks every few seconds: Django logged each 503 at ERROR,
542 lines in 16 s while Redis was down, burying everything else."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from benchhub.lib.api import RETRY_AFTER_SECONDS
from benchhub.lib.methods import page_methods
from benchhub.lib.replica import replica_check, replica_configured

logger = logging.getLogger("benchhub.health")

LOG_INTERVAL_SECONDS = 60.0

# Migrations do not un-apply themselves: once none is pending, this process
# stops asking (reading the migration graph costs ~50 ms).
_migrated = False


def database_check() -> dict[str, Any]:
    started = time.monotonic()
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


def redis_check() -> dict[str, Any]:
    if not settings.REDIS_URL:
        return {"ok": True, "configured": False}  # tasks run in-process
    started = time.monotonic()
    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2
        )
        try:
            client.ping()
            refused = _write_refused(client)
        finally:
            client.close()
    except Exception as exc:
        # Uploads and reads go on without Redis (tasks left to the sweeps,
        # rate counters dropped): degraded, still ready for traffic.
        return {"ok": False, "degraded": True, "error": type(exc).__name__}
    ms = round((time.monotonic() - started) * 1000, 1)
    if refused:
        return {"ok": False, "degraded": True, "writes": False, "error": refused, "ms": ms}
    return {"ok": True, "ms": ms}


def _write_refused(client: redis.Redis) -> str | None:
    """The name of Redis's error when it refuses a write (OutOfMemoryError,
    ReadOnlyError, MISCONF's ResponseError), None when it takes one. PING
    answers either way."""
    try:
        client.set(f"{settings.CACHE_KEY_PREFIX}:healthz", 1, px=10_000)  # gone in 10 s
    except redis.ResponseError as exc:
        return type(exc).__name__
    return None


def migrations_check() -> dict[str, Any]:
    global _migrated
    if _migrated:
        return {"ok": True, "pending": 0}
    try:
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    pending = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
    _migrated = not pending
    return {"ok": not pending, "pending": len(pending), "first_pending": pending[:5]}


def _describe(checks: dict[str, dict[str, Any]], names: list[str]) -> str:
    parts = []
    for name in names:
        check = checks[name]
        if "error" in check:
            parts.append(f"{name} ({check['error']})")
        elif check.get("pending"):
            parts.append(f"{name} ({check['pending']} pending)")
        else:
            parts.append(name)
    return ", ".join(parts)


class HealthLog:
    """What this process last said about its health, so that it says it
    again only when it changes or once an interval has passed. The state is
    the status and the names of the failing checks: an error that changes
    its name (ConnectionError, TimeoutError) mid-outage is the same outage."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._state: tuple[str, tuple[str, ...]] = ("ok", ())
        self._since = 0.0
        self._logged_at = 0.0
        self._answers = 0

    def answered(self, status: str, checks: dict[str, dict[str, Any]], failing: list[str]) -> None:
        state = (status, tuple(failing))
        now = self._clock()
        with self._lock:
            previous, since, answers = self._state, self._since, self._answers
            if state == previous:
                if status == "ok":
                    return
                self._answers += 1
                if now - self._logged_at < LOG_INTERVAL_SECONDS:
                    return
                self._logged_at = now
                reminder = True
            else:
                self._state, self._since, self._logged_at, self._answers = state, now, now, 1
                reminder = False
        fields = {"health_status": status, "failing": ",".join(failing)}
        if reminder:
            logger.log(
                logging.ERROR if status == "unavailable" else logging.WARNING,
                "healthz: still %s after %d s: %s; %d answers since it began",
                status,
                now - since,
                _describe(checks, failing),
                answers + 1,
                extra=fields,
            )
            return
        if previous[0] not in ("ok", status):
            logger.warning(
                "healthz: no longer %s after %d s (%s); %d answers %s meanwhile",
                previous[0],
                now - since,
                ", ".join(previous[1]),
                answers,
                503 if previous[0] == "unavailable" else "degraded",
                extra=fields,
            )
        if status == "unavailable":
            logger.error(
                "healthz: unavailable: %s; answering 503 until it recovers",
                _describe(checks, failing),
                extra=fields,
            )
        elif status == "degraded":
            logger.warning(
                "healthz: degraded: %s; still answering 200",
                _describe(checks, failing),
                extra=fields,
            )


_health_log = HealthLog()


@page_methods("GET")
@never_cache
def healthz_live(request: HttpRequest) -> JsonResponse:
    """GET /healthz/live: this process answers. No dependency is asked, so
    that a database or Redis outage never has a supervisor restart a
    process that would serve again once they are back."""
    return JsonResponse({"status": "alive"})


@page_methods("GET")
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """GET /healthz/ready, and its alias /healthz: whether this process can
    take uploads (the database answers, no migration pending). Redis away or
    refusing writes is "degraded", still 200: uploads are stored meanwhile."""
    checks = {
        # Named for the database this site really runs on (postgresql, sqlite).
        connections[DEFAULT_DB_ALIAS].vendor: database_check(),
        "redis": redis_check(),
        "migrations": migrations_check(),
    }
    if replica_configured():
        # Away: "degraded", its reads go to the primary meanwhile.
        checks["replica"] = replica_check()
    failing = [name for name, check in checks.items() if not check["ok"]]
    degraded = [name for name in failing if checks[name].get("degraded")]
    if not failing:
        status = "ok"
    elif failing == degraded:
        status = "degraded"  # still serving: a load balancer keeps sending requests
    else:
        status = "unavailable"
    _health_log.answered(status, checks, failing)
    answer = {"status": status, "checks": checks}
    if degraded:
        answer["degraded"] = degraded
    if status != "unavailable":
        return JsonResponse(answer)
    response = JsonResponse(answer, status=503)
    # A restart, a fail-over or a migrate in progress: ask again in seconds.
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    # Logged above, once an outage: Django's own "Service Unavailable" line
    # for every probe is what this flag (django.utils.log.log_response) skips.
    response._has_been_logged = True
    return response
