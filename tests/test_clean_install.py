"""A clean install: a virtualenv built from requirements.txt alone serves an
upload with REDIS_URL set and a real Celery worker.

The test environment itself hides missing runtime dependencies: pytest
brings `packaging` along, which Celery's Redis transport imports without
declaring it, so every upload with REDIS_URL set answered 500 in production
(after storing the data) while `make test` passed. Here nothing but
requirements.txt is installed (pip may take the wheels from its cache; not even pip
itself), and
gunicorn and the worker run from that virtualenv on loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from benchhub.accounts.services import api_token_create
from benchhub.baselines.models import DirtyKey
from benchhub.results.models import Submission
from tests.deploy.servers import private_redis, stop
from tests.factories import example_document
from tests.live import ROOT, gunicorn, live_database_url

pytestmark = pytest.mark.django_db(transaction=True)


def system_python() -> str:
    """The interpreter the test venv was made from, not the venv itself."""
    return getattr(sys, "_base_executable", None) or shutil.which("python3") or "python3"


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("clean-install") / "venv"
    # No pip of its own: the suite's pip installs into it (--python), without compiling
    # bytecode ahead, which took more time than the install itself (65 s against 24 s).
    subprocess.run(
        [system_python(), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--disable-pip-version-check", "--no-input", "--no-compile", "-r", "requirements.txt"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


def started_worker(python: Path, environment: dict[str, str], log: Path) -> subprocess.Popen:
    worker = subprocess.Popen(
        [str(python), "-m", "celery", "-A", "benchhub", "worker", "--pool", "solo",
         "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT,
        env=environment,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while "ready." not in log.read_text():
        if worker.poll() is not None or time.monotonic() > deadline:
            stop(worker)
            raise AssertionError(f"the worker did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)
    return worker


def test_the_venv_holds_requirements_txt_only(fresh_venv):
    python = fresh_venv / "bin" / "python"

    # without the PYTHONPATH a worktree's test run sets (agents/): only what is installed
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def importable(module: str) -> bool:
        done = subprocess.run([str(python), "-c", f"import {module}"], env=environment, check=False)
        return done.returncode == 0

    assert not importable("pytest")  # so it cannot bring packaging along
    assert importable("packaging")  # because requirements.txt pins it
    assert importable("kombu.transport.redis")
    # the verdict statistics, which the server imports from the agent's distribution
    assert importable("benchhub_contract.verdicts")


def test_an_upload_with_redis_and_a_worker_from_the_fresh_venv_is_201(fresh_venv, alice, tmp_path):
    python = fresh_venv / "bin" / "python"
    _, token = api_token_create(user=alice, name="clean install")
    document = example_document()

    with private_redis() as redis:
        environment = {
            "DATABASE_URL": live_database_url(),
            "REDIS_URL": redis.url,
            "DEBUG": "false",
            "PATH": "/usr/bin:/bin",
        }
        worker = started_worker(python, environment, tmp_path / "worker.log")
        try:
            with gunicorn(python=str(python), env=environment) as port:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/api/v1/submissions/",
                    data=json.dumps(document).encode(),
                    headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                    assert response.status == 201
                    assert json.loads(response.read())["uuid"] == document["uuid"]

                # The upload queued its baselines refresh on Redis; the worker ran it.
                deadline = time.monotonic() + 90
                log = tmp_path / "worker.log"
                while "baselines_refresh_task" not in log.read_text() or DirtyKey.objects.exists():
                    assert time.monotonic() < deadline, log.read_text()[-3000:]
                    time.sleep(0.5)
        finally:
            stop(worker)

    assert Submission.objects.filter(uuid=document["uuid"]).count() == 1
    assert "succeeded" in (tmp_path / "worker.log").read_text()
