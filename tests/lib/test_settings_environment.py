"""Environment variables the settings read: a value out of range, of another
scheme or misspelt stops the start naming its variable, and the least
values that make sense are taken."""

from __future__ import annotations

import re
import runpy

import pytest

from benchhub.lib.env import envbool, envint
from tests.lib.production import manage
from tests.live import ROOT


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
