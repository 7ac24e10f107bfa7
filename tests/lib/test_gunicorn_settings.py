"""gunicorn.conf.py's environment variables (workers, threads, time-out, log
level, access log, bind) as the image starts it, and the container's health
check that reads the bind as it does."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys

import pytest

from tests.deploy import servers as deploy_servers
from tests.live import ROOT


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
