"""Server processes the fault tests start, kill and restart: gunicorn with the production
configuration (gunicorn.conf.py), a Celery worker with its beat, a private redis-server and a
private PostgreSQL cluster, each on a free loopback port and each stopped by its context
manager, whatever happens. Never the shared servers on 5432/6379: other work uses them."""

from __future__ import annotations

import contextlib
import http.client
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis

from tests.deploy.agent import ROOT, free_port


def wait_for(condition, limit: float, what: str, every: float = 0.1) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(every)
    raise AssertionError(f"{what}: not within {limit:.0f} s")


def port_answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


# Set for this test process only (the browser tests' Playwright event loop);
# a production-like process must not inherit it: check --deploy refuses it.
_TEST_PROCESS_ONLY = ("DJANGO_ALLOW_ASYNC_UNSAFE",)


def inherited_environment() -> dict[str, str]:
    """This process's environment, less what only the test process may have."""
    return {k: v for k, v in os.environ.items() if k not in _TEST_PROCESS_ONLY}


def server_environment(database_url: str, redis_url: str | None, **extra: str) -> dict[str, str]:
    """The environment of a production-like BenchHub process (DEBUG off)."""
    environment = {
        **inherited_environment(),
        "DATABASE_URL": database_url,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        "PYTHONWARNINGS": "ignore:No directory at",
        # These tests drive hundreds of requests a minute from one address and
        # one token; throttling has tests of its own (tests/accounts). An
        # empty rate means no limit.
        "BENCHHUB_THROTTLE_ANON": "",
        "BENCHHUB_THROTTLE_USER": "",
        "BENCHHUB_THROTTLE_TOKEN": "",
        **extra,
    }
    environment.pop("REDIS_URL", None)
    if redis_url:
        environment["REDIS_URL"] = redis_url
    return environment


def manage(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop a process started in its own session, with all its children."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def start_gunicorn(
    environment: dict[str, str], port: int, log: Path | None = None
) -> subprocess.Popen:
    """gunicorn as production runs it (gunicorn.conf.py: 2 processes x 4 threads), answering
    on 127.0.0.1:port when this returns; its log (stderr) appended to ``log`` if given."""
    stderr = log.open("a") if log is not None else None
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--config", "gunicorn.conf.py",
         "--log-level", "warning", "benchhub.wsgi:application"],
        cwd=ROOT,
        env={**environment, "GUNICORN_BIND": f"127.0.0.1:{port}"},
        stderr=stderr,
        start_new_session=True,
    )  # fmt: skip
    if stderr is not None:
        stderr.close()  # the child has its own descriptor

    def answers() -> bool:
        assert server.poll() is None, f"gunicorn exited with status {server.returncode}"
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/benchmarks/")
            return conn.getresponse().status == 200
        return False

    try:
        wait_for(answers, 60, "gunicorn answering", every=0.2)
    except BaseException:
        stop(server)
        raise
    return server


@contextlib.contextmanager
def gunicorn(
    environment: dict[str, str], port: int, log: Path | None = None
) -> Iterator[subprocess.Popen]:
    server = start_gunicorn(environment, port, log)
    try:
        yield server
    finally:
        stop(server)


@contextlib.contextmanager
def celery_worker_with_beat(environment: dict[str, str]) -> Iterator[subprocess.Popen]:
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "benchhub", "worker", "--beat",
         "--concurrency", "1", "--loglevel", "WARNING",
         "--schedule", str(Path(environment["BH_TEST_TMP"]) / "celerybeat-schedule")],
        cwd=ROOT,
        env=environment,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield worker
    finally:
        stop(worker)


class PrivateRedis:
    """A redis-server of the test's own, without persistence, that can be stopped and
    started again on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
             "--save", "", "--appendonly", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        wait_for(lambda: port_answers(self.port), 10, "redis-server answering")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None

    def command(self, *args: str):
        """One command to this server (CONFIG SET, REPLICAOF ...), its answer."""
        client = redis.Redis.from_url(self.url)
        try:
            return client.execute_command(*args)
        finally:
            client.close()


@contextlib.contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    if shutil.which("redis-server") is None:
        raise AssertionError("redis-server is not installed (bash .ci/ensure-services.sh)")
    server = PrivateRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def postgresql_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if not found:
        raise AssertionError("PostgreSQL's server binaries are not installed")
    return found[-1].parent


class PrivateCluster:
    """A PostgreSQL cluster of the test's own (initdb in a temporary directory, trust on
    loopback), run as the ``postgres`` user when the test runs as root."""

    def __init__(self) -> None:
        self.bin = postgresql_bin()
        # Not under pytest's temporary directories: they are private to root, and the
        # server runs as postgres.
        self.directory = Path(tempfile.mkdtemp(prefix="bh-test-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}"

    def _as_owner(self, *command: str, timeout: float = 120) -> None:
        prefix = []
        if os.geteuid() == 0:
            prefix = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            [*prefix, *command], check=True, capture_output=True, timeout=timeout, cwd="/"
        )

    def init(self) -> None:
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.directory, owner.pw_uid, owner.pw_gid)
        self._as_owner(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "--no-sync",
        )  # fmt: skip

    def pg_ctl(self, action: str, *args: str) -> None:
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_owner(
            str(self.bin / "pg_ctl"), action, "-D", str(self.data), "-w", "-t", "60",
            "-o", options, "-l", str(self.directory / "server.log"), *args,
        )  # fmt: skip


@contextlib.contextmanager
def private_postgresql() -> Iterator[PrivateCluster]:
    cluster = PrivateCluster()
    try:
        cluster.init()
        cluster.pg_ctl("start")
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            cluster.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(cluster.directory, ignore_errors=True)
