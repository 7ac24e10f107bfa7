"""GET /healthz: whether this process can serve, for load balancers and
container health checks. 200 when PostgreSQL answers, Redis answers (when
REDIS_URL is set) and no migration is pending; 503 otherwise, saying which.
Redis answering but refusing writes (full at maxmemory, a read-only replica)
is 200 with the status "degraded", naming Redis and its error: the site
serves through it (tests/deploy/test_faults.py), while tasks are not queued
and rate limits are not counted until it takes writes again.
No secret and no version in the answer: it is public."""

from __future__ import annotations

import time
from typing import Any

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from benchhub.lib.api import RETRY_AFTER_SECONDS

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
        return {"ok": False, "error": type(exc).__name__}
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


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {
        "postgresql": database_check(),
        "redis": redis_check(),
        "migrations": migrations_check(),
    }
    failing = [name for name, check in checks.items() if not check["ok"]]
    degraded = [name for name in failing if checks[name].get("degraded")]
    if not failing:
        status = "ok"
    elif failing == degraded:
        status = "degraded"  # still serving: a load balancer keeps sending requests
    else:
        status = "unavailable"
    answer = {"status": status, "checks": checks}
    if degraded:
        answer["degraded"] = degraded
    if status != "unavailable":
        return JsonResponse(answer)
    response = JsonResponse(answer, status=503)
    # A restart, a fail-over or a migrate in progress: ask again in seconds.
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
