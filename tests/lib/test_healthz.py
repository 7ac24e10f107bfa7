"""/healthz, /healthz/ready and /healthz/live: PostgreSQL and the migrations
decide, Redis only degrades; an outage is logged when it begins, now and
then while it lasts, and when it ends."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from django.db import connection
from django.test import Client, override_settings

from benchhub.lib import health
from tests.deploy import servers as deploy_servers
from tests.lib.production import PRODUCTION
from tests.live import ROOT


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fresh_health(monkeypatch) -> FakeClock:
    monkeypatch.setattr(health, "_migrated", False)
    clock = FakeClock()
    monkeypatch.setattr(health, "_health_log", health.HealthLog(clock=clock))
    return clock


def test_healthz_is_200_when_everything_answers(db, fresh_health):
    response = Client().get("/healthz")

    assert response.status_code == 200
    assert not response.has_header("Retry-After")
    body = response.json()
    assert body["status"] == "ok"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "postgresql": True,
        "redis": True,
        "migrations": True,
    }
    assert body["checks"]["redis"]["ms"] >= 0  # really asked Redis (REDIS_URL is set)


@pytest.mark.parametrize("path", ["/healthz/ready", "/healthz"])
def test_ready_is_200_degraded_naming_redis_when_it_does_not_answer(db, fresh_health, path):
    # Uploads are stored while Redis is away: a load balancer must keep
    # sending them, and an operator reads why the site is degraded.
    with override_settings(REDIS_URL="redis://127.0.0.1:9/0"):
        response = Client().get(path)

    assert response.status_code == 200
    assert not response.has_header("Retry-After")
    body = response.json()
    assert (body["status"], body["degraded"]) == ("degraded", ["redis"])
    assert body["checks"]["redis"] == {"ok": False, "degraded": True, "error": "ConnectionError"}
    assert body["checks"]["postgresql"]["ok"] is True


def test_ready_is_503_while_a_migration_is_pending_and_live_is_200_asking_nothing(
    db, fresh_health, monkeypatch
):
    asked = []
    monkeypatch.setattr(
        health, "migrations_check", lambda: asked.append(1) or {"ok": False, "pending": 3}
    )

    ready = Client().get("/healthz/ready")
    live = Client().get("/healthz/live")

    assert (ready.status_code, ready["Retry-After"]) == (503, "5")
    assert ready.json()["status"] == "unavailable"
    assert (live.status_code, live.json()) == (200, {"status": "alive"})
    assert asked == [1]  # by ready only


def health_lines(caplog) -> list[tuple[str, str, str]]:
    return [
        (r.levelname, r.name, r.getMessage())
        for r in caplog.records
        if r.name in ("benchhub.health", "django.request")
    ]


def test_an_outage_is_logged_once_when_it_begins_and_once_when_it_ends(db, fresh_health, caplog):
    """A load balancer probes every few seconds: Django logged each 503 at
    ERROR, 542 lines in 16 s while Redis was down."""
    with caplog.at_level(logging.INFO):
        with override_settings(REDIS_URL="redis://127.0.0.1:9/0"):
            statuses = [Client().get("/healthz").status_code for _ in range(20)]
        assert statuses == [200] * 20  # every probe answered, still ready
        assert health_lines(caplog) == [
            (
                "WARNING",
                "benchhub.health",
                "healthz: degraded: redis (ConnectionError); still answering 200",
            )
        ]
        caplog.clear()
        fresh_health.now += 75

        assert Client().get("/healthz").status_code == 200
        assert Client().get("/healthz").status_code == 200

    assert health_lines(caplog) == [
        (
            "WARNING",
            "benchhub.health",
            "healthz: no longer degraded after 75 s (redis); 20 answers degraded meanwhile",
        )
    ]


def test_a_long_outage_is_recalled_at_most_once_an_interval(db, fresh_health, caplog):
    with caplog.at_level(logging.INFO), override_settings(REDIS_URL="redis://127.0.0.1:9/0"):
        Client().get("/healthz")
        for _ in range(3):
            fresh_health.now += health.LOG_INTERVAL_SECONDS / 4
            Client().get("/healthz")  # within the interval: nothing
        fresh_health.now += health.LOG_INTERVAL_SECONDS / 4
        Client().get("/healthz")

    assert [message for _, _, message in health_lines(caplog)] == [
        "healthz: degraded: redis (ConnectionError); still answering 200",
        "healthz: still degraded after 60 s: redis (ConnectionError); 5 answers since it began",
    ]


def test_a_second_failing_check_is_logged_as_it_joins(db, fresh_health, caplog, monkeypatch):
    with caplog.at_level(logging.INFO), override_settings(REDIS_URL="redis://127.0.0.1:9/0"):
        Client().get("/healthz")
        monkeypatch.setattr(health, "migrations_check", lambda: {"ok": False, "pending": 2})
        Client().get("/healthz")
        Client().get("/healthz")

    assert [message for _, _, message in health_lines(caplog)] == [
        "healthz: degraded: redis (ConnectionError); still answering 200",
        "healthz: no longer degraded after 0 s (redis); 1 answers degraded meanwhile",
        "healthz: unavailable: redis (ConnectionError), migrations (2 pending); "
        "answering 503 until it recovers",
    ]


# Redis answering PING but refusing every write, as redis-server does it.
WRITES_REFUSED = {
    "out of memory": (
        [("CONFIG", "SET", "maxmemory-policy", "noeviction"), ("CONFIG", "SET", "maxmemory", "1")],
        "OutOfMemoryError",
    ),
    "read-only replica": ([("REPLICAOF", "127.0.0.1", "{nobody}")], "ReadOnlyError"),
}


@pytest.mark.slow
@pytest.mark.parametrize("refusal", WRITES_REFUSED)
def test_healthz_names_redis_as_degraded_but_stays_200_while_it_refuses_writes(
    db, fresh_health, refusal, caplog
):
    refuse, error = WRITES_REFUSED[refusal]
    with deploy_servers.private_redis() as redis_server:
        for command in refuse:
            redis_server.command(*(a.format(nobody=deploy_servers.free_port()) for a in command))
        assert redis_server.command("PING")  # what the check asked alone, and got
        with override_settings(REDIS_URL=redis_server.url), caplog.at_level(logging.INFO):
            response = Client().get("/healthz")
            Client().get("/healthz")

    # Said once, for an operator who alerts on it (docs/operations.md).
    assert health_lines(caplog) == [
        ("WARNING", "benchhub.health", f"healthz: degraded: redis ({error}); still answering 200")
    ]

    # The site serves without Redis's writes: a load balancer must keep it, and a
    # reader of the answer must see what is wrong.
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["degraded"]) == ("degraded", ["redis"])
    redis_check = body["checks"]["redis"]
    assert {k: redis_check[k] for k in ("ok", "degraded", "writes", "error")} == {
        "ok": False,
        "degraded": True,
        "writes": False,
        "error": error,
    }
    assert body["checks"]["postgresql"]["ok"] is True


def test_a_failing_check_beside_a_degraded_redis_is_503(db, fresh_health, monkeypatch):
    monkeypatch.setattr(
        health, "redis_check", lambda: {"ok": False, "degraded": True, "error": "ReadOnlyError"}
    )
    monkeypatch.setattr(health, "migrations_check", lambda: {"ok": False, "pending": 1})

    response = Client().get("/healthz")

    assert response.status_code == 503
    assert (response.json()["status"], response.json()["degraded"]) == ("unavailable", ["redis"])


def test_healthz_is_503_with_a_pending_migration(db, fresh_health):
    with connection.cursor() as cursor:  # rolled back with the test
        cursor.execute(
            "DELETE FROM django_migrations WHERE id = (SELECT max(id) FROM django_migrations)"
        )

    response = Client().get("/healthz")

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["checks"]["migrations"]["pending"] == 1


def production_setting(name: str):
    code = (
        "import json, django; django.setup(); from django.conf import settings; "
        f"print(json.dumps(settings.{name}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **PRODUCTION, "DJANGO_SETTINGS_MODULE": "benchhub.settings"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.slow
def test_healthz_stays_reachable_over_plain_http_behind_the_proxy(db, fresh_health):
    exempt = production_setting("SECURE_REDIRECT_EXEMPT")

    with override_settings(SECURE_SSL_REDIRECT=True, SECURE_REDIRECT_EXEMPT=exempt):
        assert Client().get("/healthz").status_code == 200
        assert Client().get("/").status_code == 301
