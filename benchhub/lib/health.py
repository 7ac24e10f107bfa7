"""GET /healthz: whether this process can serve, for load balancers and
container health checks. 200 when PostgreSQL answers, Redis answers (when
REDIS_URL is set) and no migration is pending; 503 otherwise, saying which.
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
        finally:
            client.close()
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True, "ms": round((time.monotonic() - started) * 1000, 1)}


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
    healthy = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks},
        status=200 if healthy else 503,
    )
