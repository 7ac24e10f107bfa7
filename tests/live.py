"""BenchHub served by a real gunicorn on a free loopback port, for the tests
that need what Django's test client cannot show: chunked bodies as gunicorn
de-chunks them, connections aborted mid-answer, a fresh install."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def live_database_url() -> str:
    """The URL of the database the test runs on (test_…, per xdist worker)."""
    settings = connection.settings_dict
    user = settings["USER"] or ""
    password = f":{settings['PASSWORD']}" if settings["PASSWORD"] else ""
    port = f":{settings['PORT']}" if settings["PORT"] else ""
    return f"postgres://{user}{password}@{settings['HOST']}{port}/{settings['NAME']}"


@contextlib.contextmanager
def gunicorn(
    *,
    python: str = sys.executable,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
    ready_path: str = "/api/v1/benchmarks/",
    config: bool = False,
) -> Iterator[int]:
    """gunicorn (one gthread worker) on the test database; yields its port,
    and stops it (its whole process group) on the way out. ``config``: with
    production's gunicorn.conf.py under these settings (its hooks)."""
    port = free_port()
    production = ["--config", str(ROOT / "gunicorn.conf.py")] if config else []
    environment = {**os.environ, "DATABASE_URL": live_database_url(), "DEBUG": "false"}
    environment.update(env or {})
    server = subprocess.Popen(
        [python, "-m", "gunicorn", *production, "benchhub.wsgi:application",
         "--bind", f"127.0.0.1:{port}", "--workers", "1", "--worker-class", "gthread",
         "--threads", "4", "--timeout", "60",
         "--log-level", "warning"],
        cwd=cwd,
        env=environment,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_until_answering(server, port, ready_path)
        yield port
    finally:
        stop(server)


@contextlib.contextmanager
def runserver(*, env: dict[str, str] | None = None) -> Iterator[int]:
    """manage.py runserver as ``make run`` starts it (DEBUG on, threaded,
    without the reloader) on the test database; yields its port."""
    port = free_port()
    environment = {**os.environ, "DATABASE_URL": live_database_url(), "DEBUG": "true"}
    environment.update(env or {})
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until_answering(server, port, "/api/v1/benchmarks/")
        yield port
    finally:
        stop(server)


def wait_until_answering(server: subprocess.Popen, port: int, path: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError("the server did not answer in time")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group, SIGKILL after 20 s."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
