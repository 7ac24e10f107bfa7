"""Production settings: what `manage.py check --deploy` asks, keys nobody can
read, a health check, hashed and compressed static files, JSON logs
without tokens, and environment variables that say which one is wrong."""

from __future__ import annotations

import json
import logging
import os
import re
import runpy
import secrets
import subprocess
import sys

import pytest
from django.db import connection
from django.test import Client, override_settings

from benchhub.lib import health
from benchhub.lib.env import envbool, envint, secret_key_problem
from benchhub.lib.logs import JsonFormatter
from tests.deploy import servers as deploy_servers
from tests.live import ROOT

STRONG_KEY = secrets.token_urlsafe(50)
PRODUCTION = {
    "DEBUG": "false",
    "ALLOWED_HOSTS": "benchhub.example.org",
    "SECRET_KEY": STRONG_KEY,
    "BENCHHUB_HTTPS_PROXY": "true",
}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return deploy_servers.manage({**deploy_servers.inherited_environment(), **env}, *args)


@pytest.mark.slow
def test_check_deploy_has_no_warning_behind_an_https_proxy():
    done = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


@pytest.mark.slow
def test_without_the_https_proxy_setting_check_deploy_says_what_is_missing():
    done = manage("check", "--deploy", **{**PRODUCTION, "BENCHHUB_HTTPS_PROXY": "false"})

    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stderr + done.stdout


@pytest.mark.parametrize(
    "key",
    [
        "",
        "   ",
        "short-but-random-Xq8",
        "change-me-before-exposing-this",
        "change-me-before-exposing-this-change-me-before-exposing-this",
        "insecure-development-key-never-use-in-production",
        "django-insecure-" + "k" * 50,
        "ab" * 40,
    ],
)
def test_weak_or_placeholder_keys_are_refused(key):
    assert secret_key_problem(key) is not None


def test_a_random_key_is_accepted():
    assert secret_key_problem(STRONG_KEY) is None


@pytest.mark.slow
def test_a_placeholder_key_stops_the_start_naming_secret_key():
    done = manage("check", **{**PRODUCTION, "SECRET_KEY": "change-me-before-exposing-this"})

    assert done.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is 30 characters long" in done.stderr


@pytest.mark.slow
def test_the_development_key_is_fine_on_loopback():
    done = manage("check", DEBUG="false", ALLOWED_HOSTS="127.0.0.1,localhost", SECRET_KEY="")

    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("reader", "value", "message"),
    [
        (lambda: envbool("BENCHHUB_TEST_FLAG", False), "maybe", "BENCHHUB_TEST_FLAG='maybe'"),
        (lambda: envint("BENCHHUB_TEST_NUMBER", 1), "ten", "BENCHHUB_TEST_NUMBER='ten'"),
        (lambda: envint("BENCHHUB_TEST_NUMBER", 1, minimum=1), "0", "at least 1"),
    ],
)
def test_a_bad_environment_value_names_its_variable(monkeypatch, reader, value, message):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("BENCHHUB_TEST_FLAG", value)
    monkeypatch.setenv("BENCHHUB_TEST_NUMBER", value)
    with pytest.raises(ImproperlyConfigured, match=message):
        reader()


@pytest.mark.slow
def test_a_bad_value_at_start_is_improperly_configured_naming_it():
    done = manage("check", DEBUG="maybe")

    assert "ImproperlyConfigured: DEBUG='maybe': expected true or false" in done.stderr


def settings_read() -> dict:
    """benchhub/settings.py run again, with the environment as it is now."""
    return runpy.run_path(str(ROOT / "benchhub/settings.py"))


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        # 0 or less: beat would queue the sweep without a pause
        ("BENCHHUB_BASELINES_SWEEP_SECONDS", "0", "expected at least 1"),
        ("BENCHHUB_BASELINES_SWEEP_SECONDS", "-300", "expected at least 1"),
        ("BENCHHUB_ALIAS_SWEEP_SECONDS", "0", "expected at least 1"),
        ("BENCHHUB_ALIAS_SWEEP_SECONDS", "-1", "expected at least 1"),
        ("DATABASE_CONN_MAX_AGE", "-1", "expected at least 0"),  # 0: one per request
        ("EMAIL_PORT", "0", "expected at least 1"),
        ("EMAIL_PORT", "65536", "expected at most 65535"),
        ("BENCHHUB_MAX_UPLOAD_BYTES", "0", "expected at least 1"),  # every upload a 413
        ("BENCHHUB_AUTH_FAILURES_ALLOWED", "0", "expected at least 1"),
        # a window of 0 or less keeps no count: no limit at all
        ("BENCHHUB_AUTH_FAILURE_WINDOW", "0", "expected at least 1"),
        ("BENCHHUB_AUTH_FAILURE_WINDOW", "-300", "expected at least 1"),
        ("BENCHHUB_SIGNUPS_ALLOWED", "0", "expected at least 1"),  # a 429 saying "too many"
        ("BENCHHUB_SIGNUP_WINDOW", "0", "expected at least 1"),
        ("BENCHHUB_AUTOFLAG_SCORE", "0", "expected a number above 0"),  # every result flagged
        ("BENCHHUB_AUTOFLAG_SCORE", "-3.5", "expected a number above 0"),
        ("BENCHHUB_AUTOFLAG_SCORE", "nan", "expected a number"),  # nothing ever flagged
        ("BENCHHUB_AUTOFLAG_SCORE", "inf", "expected a number"),
        ("BENCHHUB_AUTOFLAG_SCORE", "high", "expected a number"),  # was a bare ValueError
        # a rate DRF cannot read answered every API request with a 500
        *(
            (variable, value, "expected <requests>/<second|minute|hour|day>")
            for variable in (
                "BENCHHUB_THROTTLE_TOKEN",
                "BENCHHUB_THROTTLE_USER",
                "BENCHHUB_THROTTLE_ANON",
            )
            for value in ("abc", "ten/minute", "10/fortnight", "10 per minute", "-5/minute")
        ),
        ("BENCHHUB_THROTTLE_ANON", "0/minute", "expected at least 1 request"),  # all a 429
        # logging refused it with "Unable to configure root logger", naming nothing
        ("LOG_LEVEL", "loud", "expected one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        ("LOG_FORMAT", "yaml", "expected one of json, text"),
    ],
)
def test_a_number_out_of_range_stops_the_start_naming_it(monkeypatch, variable, value, expected):
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv(variable, value)
    with pytest.raises(ImproperlyConfigured, match=re.escape(f"{variable}={value!r}: {expected}")):
        settings_read()


def test_the_least_numbers_that_make_sense_are_taken(monkeypatch):
    for variable, value in {
        "BENCHHUB_BASELINES_SWEEP_SECONDS": "1",
        "BENCHHUB_ALIAS_SWEEP_SECONDS": "1",
        "DATABASE_CONN_MAX_AGE": "0",
        "EMAIL_PORT": "65535",
        "BENCHHUB_MAX_UPLOAD_BYTES": "1",
        "BENCHHUB_AUTH_FAILURES_ALLOWED": "1",
        "BENCHHUB_AUTH_FAILURE_WINDOW": "1",
        "BENCHHUB_SIGNUPS_ALLOWED": "1",
        "BENCHHUB_SIGNUP_WINDOW": "1",
        "BENCHHUB_AUTOFLAG_SCORE": "0.5",
        "BENCHHUB_THROTTLE_TOKEN": " 1/second ",
        "BENCHHUB_THROTTLE_USER": "",  # no limit
        "BENCHHUB_THROTTLE_ANON": "007/d",
    }.items():
        monkeypatch.setenv(variable, value)

    read = settings_read()

    schedule = read["CELERY_BEAT_SCHEDULE"]
    assert schedule["baselines-sweep"]["schedule"] == schedule["moderation-alias-sweep"]["schedule"]
    assert schedule["baselines-sweep"]["schedule"] == 1.0
    assert read["DATABASES"]["default"]["CONN_MAX_AGE"] == 0
    assert (read["EMAIL_PORT"], read["BENCHHUB_MAX_UPLOAD_BYTES"]) == (65535, 1)
    assert (read["BENCHHUB_AUTH_FAILURES_ALLOWED"], read["BENCHHUB_AUTH_FAILURE_WINDOW"]) == (1, 1)
    assert (read["BENCHHUB_SIGNUPS_ALLOWED"], read["BENCHHUB_SIGNUP_WINDOW"]) == (1, 1)
    assert read["BENCHHUB_AUTOFLAG_SCORE"] == 0.5
    assert read["BENCHHUB_THROTTLE_RATES"] == {"token": "1/second", "user": "", "anon": "7/d"}


def test_log_level_and_format_are_taken_in_any_case_and_empty_is_the_default(monkeypatch):
    monkeypatch.setenv("LOG_LEVEL", "info")  # logging itself takes only INFO
    monkeypatch.setenv("LOG_FORMAT", " Text ")

    read = settings_read()

    assert read["LOGGING"]["root"]["level"] == "INFO"
    assert read["LOG_FORMAT"] == "text"
    assert read["LOGGING"]["handlers"]["console"]["formatter"] == "text"

    monkeypatch.setenv("LOG_LEVEL", "")  # compose's ${LOG_LEVEL} of an unset variable
    assert settings_read()["LOGGING"]["root"]["level"] == "WARNING"


@pytest.mark.slow
def test_a_misspelt_log_level_stops_the_start_naming_it():
    done = manage("check", LOG_LEVEL="loud")

    assert done.returncode != 0
    expected = "ImproperlyConfigured: LOG_LEVEL='loud': expected one of DEBUG, INFO, WARNING"
    assert expected in done.stderr, done.stderr


@pytest.mark.slow
def test_a_sweep_of_zero_seconds_stops_the_start():
    done = manage("check", BENCHHUB_BASELINES_SWEEP_SECONDS="0")

    assert done.returncode != 0
    expected = "ImproperlyConfigured: BENCHHUB_BASELINES_SWEEP_SECONDS='0': expected at least 1"
    assert expected in done.stderr


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mysql://bench:hunter2@db/bench", "DATABASE_URL has the scheme 'mysql': "),
        ("postgress://bench:hunter2@db/bench", "DATABASE_URL has the scheme 'postgress': "),
        ("db.example.org/bench", "DATABASE_URL has no scheme: "),
        ("bench:hunter2://db/bench", "DATABASE_URL has no scheme: "),  # no scheme has a colon
    ],
)
def test_a_database_url_benchhub_cannot_run_on_stops_the_start_naming_the_schemes(
    monkeypatch, url, expected
):
    """dj_database_url took mysql:// (BenchHub runs on PostgreSQL) and
    refused a misspelt scheme with a ValueError naming no variable."""
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("DATABASE_URL", url)
    with pytest.raises(ImproperlyConfigured) as refused:
        settings_read()

    assert str(refused.value) == expected + "expected one of postgres://, postgresql://, sqlite://"
    assert "hunter2" not in str(refused.value)  # the message goes to the log


def test_a_database_url_is_taken_in_either_postgres_spelling_and_any_case(monkeypatch, tmp_path):
    for url, engine in [
        ("postgres://bench@db/bench", "django.db.backends.postgresql"),
        ("PostgreSQL://bench@db/bench", "django.db.backends.postgresql"),
        (f" sqlite:///{tmp_path / 'bench.sqlite3'}", "benchhub.lib.sqlite"),
    ]:
        monkeypatch.setenv("DATABASE_URL", url)
        assert settings_read()["DATABASES"]["default"]["ENGINE"] == engine


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("reddis://:hunter2@cache:6379/0", "REDIS_URL has the scheme 'reddis': "),
        ("unix:///run/redis.sock", "REDIS_URL has the scheme 'unix': "),  # Celery knows no unix://
        ("cache:6379/0", "REDIS_URL has no scheme: "),
    ],
)
def test_a_redis_url_of_another_scheme_stops_the_start_naming_the_schemes(
    monkeypatch, url, expected
):
    """The cache refused it at the first request that counted a rate (500),
    the worker at its start with "No such transport": neither named REDIS_URL."""
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("REDIS_URL", url)
    with pytest.raises(ImproperlyConfigured) as refused:
        settings_read()

    assert str(refused.value) == expected + "expected one of redis://, rediss://"
    assert "hunter2" not in str(refused.value)  # the message goes to the log


def test_a_redis_url_is_taken_with_either_scheme_and_empty_is_the_embedded_default(monkeypatch):
    for url in ("redis://cache:6379/0", "Rediss://:pw@cache:6380/1"):
        monkeypatch.setenv("REDIS_URL", url)
        assert settings_read()["CELERY_BROKER_URL"] == url

    monkeypatch.setenv("REDIS_URL", " ")  # was taken as a URL: every task queued to nowhere
    assert settings_read()["CELERY_TASK_ALWAYS_EAGER"] is True


@pytest.mark.slow
@pytest.mark.parametrize(
    ("backend", "reason"),
    [
        ("django.core.mail.backends.smpt.EmailBackend", "No module named"),
        ("django.core.mail.backends.smtp.EmailBackEnd", 'does not define a "EmailBackEnd"'),
        ("smtp", "doesn't look like a module path"),
    ],
)
def test_a_misspelt_email_backend_stops_the_start_naming_it(backend, reason):
    """It was read only by the first password reset, which answered 500."""
    done = manage("check", EMAIL_BACKEND=backend)

    assert done.returncode != 0
    expected = f"ImproperlyConfigured: EMAIL_BACKEND={backend!r}: cannot be imported: "
    assert expected in done.stderr, done.stderr
    assert reason in done.stderr.split(expected)[1].splitlines()[0]


@pytest.mark.slow
def test_the_smtp_email_backend_is_taken():
    done = manage("check", EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend")

    assert done.returncode == 0, done.stderr


def gunicorn_config_printed(**env: str) -> subprocess.CompletedProcess:
    """gunicorn reading gunicorn.conf.py as the image starts it (from the
    project directory), printing the configuration without serving."""
    command = [
        "gunicorn",
        "--config",
        "gunicorn.conf.py",
        "--print-config",
        "benchhub.wsgi:application",
    ]
    return subprocess.run(
        [sys.executable, "-m", *command],
        cwd=ROOT,
        env={**deploy_servers.inherited_environment(), "GUNICORN_BIND": "127.0.0.1:0", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("GUNICORN_WORKERS", "abc", "expected a whole number"),  # was a bare ValueError
        ("GUNICORN_WORKERS", "0", "expected at least 1"),
        ("GUNICORN_THREADS", "4.5", "expected a whole number"),
        ("GUNICORN_THREADS", "0", "expected at least 1"),
        ("GUNICORN_TIMEOUT", "1m", "expected a whole number"),
        ("GUNICORN_TIMEOUT", "-5", "expected at least 0"),  # gunicorn: "must be positive: -5"
    ],
)
def test_a_bad_gunicorn_number_stops_the_start_naming_its_variable(variable, value, expected):
    done = gunicorn_config_printed(**{variable: value})

    assert done.returncode != 0
    assert f"ImproperlyConfigured: {variable}={value!r}: {expected}" in done.stderr, done.stderr


@pytest.mark.slow
def test_a_misspelt_gunicorn_log_level_stops_the_start_naming_the_levels():
    """gunicorn took any word and logged at info: --check-config passed."""
    done = gunicorn_config_printed(GUNICORN_LOGLEVEL="loud")

    assert done.returncode != 0
    expected = (
        "ImproperlyConfigured: GUNICORN_LOGLEVEL='loud': "
        "expected one of debug, info, warning, error, critical"
    )
    assert expected in done.stderr, done.stderr


@pytest.mark.slow
def test_gunicorn_takes_its_log_level_in_any_case_and_an_empty_bind_as_the_default():
    done = gunicorn_config_printed(GUNICORN_LOGLEVEL="WARNING", GUNICORN_BIND="")

    assert done.returncode == 0, done.stderr
    assert re.search(r"^loglevel\s+= warning$", done.stdout, re.MULTILINE), done.stdout
    # not [''], which gunicorn took and listened on nothing
    assert re.search(r"^bind\s+= \['0.0.0.0:8000'\]$", done.stdout, re.MULTILINE)


def test_the_container_health_check_asks_the_default_port_when_the_bind_is_empty(monkeypatch):
    """docker/healthcheck.py reads GUNICORN_BIND as gunicorn.conf.py does."""
    asked: list[str] = []

    class Answer:
        status = 200

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def urlopen(request, timeout):
        asked.append(request.full_url)
        return Answer()

    check = runpy.run_path(str(ROOT / "docker/healthcheck.py"))
    monkeypatch.setattr("urllib.request.urlopen", urlopen)
    monkeypatch.setenv("GUNICORN_BIND", "")

    assert check["main"]() == 0
    assert asked == ["http://127.0.0.1:8000/healthz"]  # not "http://127.0.0.1:/healthz"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # gunicorn wrote a file named "true" in the directory it started in
        ("true", "expected - (stdout) or an absolute path"),
        ("stdout", "expected - (stdout) or an absolute path"),
        ("/nonexistent/log/access.log", "the directory /nonexistent/log does not exist"),
    ],
)
def test_a_gunicorn_access_log_nowhere_to_write_stops_the_start_naming_it(value, expected):
    done = gunicorn_config_printed(GUNICORN_ACCESSLOG=value)

    assert done.returncode != 0
    assert f"ImproperlyConfigured: GUNICORN_ACCESSLOG={value!r}: {expected}" in done.stderr


@pytest.mark.slow
def test_gunicorn_logs_access_to_stdout_a_file_or_nowhere(tmp_path):
    for value, printed in [
        ("-", "-"),
        (str(tmp_path / "access.log"), str(tmp_path / "access.log")),
        ("", "None"),
    ]:
        done = gunicorn_config_printed(GUNICORN_ACCESSLOG=value)

        assert done.returncode == 0, done.stderr
        assert re.search(rf"^accesslog\s+= {re.escape(printed)}$", done.stdout, re.MULTILINE)


@pytest.mark.slow
def test_gunicorn_takes_its_numbers_from_the_environment():
    done = gunicorn_config_printed(GUNICORN_WORKERS="3", GUNICORN_THREADS="1", GUNICORN_TIMEOUT="0")

    assert done.returncode == 0, done.stderr
    assert re.search(r"^workers\s+= 3$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^threads\s+= 1$", done.stdout, re.MULTILINE)
    assert re.search(r"^timeout\s+= 0$", done.stdout, re.MULTILINE)


# ------------------------------------------------------------------ /healthz


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


# ------------------------------------------------------------------ static files


@pytest.mark.slow
def test_collectstatic_writes_hashed_and_compressed_files_that_pages_use(db, tmp_path):
    done = manage("collectstatic", "--noinput", STATIC_ROOT=str(tmp_path))
    assert done.returncode == 0, done.stderr

    manifest = json.loads((tmp_path / "staticfiles.json").read_text())
    hashed = manifest["paths"]["results/benchhub.css"]
    assert hashed != "results/benchhub.css"
    assert (tmp_path / (hashed + ".gz")).is_file()
    with override_settings(STATIC_ROOT=tmp_path, WHITENOISE_USE_FINDERS=False):
        page = Client().get("/")
        assert f"/static/{hashed}" in page.content.decode()
        css = Client().get(f"/static/{hashed}", HTTP_ACCEPT_ENCODING="gzip")
    assert css.status_code == 200
    assert css["Content-Encoding"] == "gzip"
    assert "immutable" in css["Cache-Control"]


def test_without_collectstatic_pages_use_the_plain_names(db):
    page = Client().get("/")

    assert "/static/results/benchhub.css" in page.content.decode()
    assert Client().get("/static/results/benchhub.css").status_code == 200


# ------------------------------------------------------------------ logs


def configured_formatter() -> logging.Formatter:
    handlers = [h for h in logging.getLogger().handlers if isinstance(h.formatter, JsonFormatter)]
    assert handlers, "the root logger has no JSON handler"
    return handlers[0].formatter


def test_logs_are_json_lines_without_tokens(db, alice, caplog, monkeypatch):
    from benchhub.accounts.services import api_token_create
    from benchhub.results import selectors

    _, secret = api_token_create(user=alice, name="logged")

    def broken(**kwargs):
        raise RuntimeError(f"failed for Authorization: Token {secret} and {secret}")

    monkeypatch.setattr(selectors, "run_list", broken)
    with caplog.at_level(logging.ERROR):
        Client().get(f"/api/v1/runs/?token={secret}", HTTP_AUTHORIZATION=f"Token {secret}")

    lines = [configured_formatter().format(record) for record in caplog.records]
    assert lines
    for line in lines:
        entry = json.loads(line)
        assert {"time", "level", "logger", "message"} <= set(entry)
        assert secret not in line
        assert secret[3:20] not in line
    entry = json.loads(lines[0])
    assert entry["error_id"] and entry["error_id"] in entry["message"]
    assert "RuntimeError" in entry["exception"] and "[redacted]" in entry["exception"]
