"""Production settings: what `manage.py check --deploy` asks, keys nobody can
read, hashed and compressed static files, JSON logs without tokens. What
the environment variables may say: test_settings_environment.py; gunicorn's:
test_gunicorn_settings.py; the health check: test_healthz.py."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import Client, override_settings

from benchhub.lib.env import secret_key_problem
from benchhub.lib.logs import JsonFormatter
from tests.lib.production import PRODUCTION, STRONG_KEY, manage


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
