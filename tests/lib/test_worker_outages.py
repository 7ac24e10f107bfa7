"""A real Celery worker (as `make worker` and compose start it, under
docker/worker-supervised.sh) on a redis-server of the test's own, on its own
loopback port: three outages in a row (the server stopped, then started
again on the same port), tasks queued during and after each. The worker, as
deployed, must process every task queued, the backlog included, each once.
Celery usually reconnects by itself; on a loaded machine it has exited on an
outage (status 1, kombu's "Unrecoverable error"), and then its supervisor
starts it again, which is what the supervisor is for: the test prints how
often that happened rather than failing on it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from celery import Celery

ROOT = Path(__file__).resolve().parents[2]
TASK = "benchhub.baselines.tasks.baselines_refresh_task"

pytestmark = pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(port: int, directory: Path) -> subprocess.Popen:
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--dir",
            str(directory),
        ],
        stdout=subprocess.DEVNULL,
    )
    wait_for(lambda: redis.Redis(port=port).ping(), "redis-server to answer")
    return server


def wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except redis.RedisError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"waited {timeout} s for {what}")


def succeeded(log: Path) -> int:
    if not log.exists():
        return 0
    return sum(
        1
        for line in log.read_text(errors="replace").splitlines()
        if f"Task {TASK}[" in line and "succeeded" in line
    )


def test_a_worker_rides_out_three_redis_outages_and_processes_each_backlog(tmp_path):
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    database = f"sqlite:///{tmp_path / 'worker.sqlite3'}"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(
        REDIS_URL=url,
        DATABASE_URL=database,
        LOG_FORMAT="text",
        LOG_LEVEL="INFO",
        PYTHONPATH=str(ROOT),
        PATH=f"{Path(sys.executable).parent}:{env['PATH']}",
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    server = start_redis(port, tmp_path)
    log, supervisor_log = tmp_path / "worker.log", tmp_path / "supervisor.log"
    log.touch()
    with supervisor_log.open("w") as err:
        worker = subprocess.Popen(
            [
                "sh",
                "docker/worker-supervised.sh",
                "-A",
                "benchhub",
                "worker",
                "--beat",
                "--loglevel=INFO",
                "--concurrency=2",
                "-s",
                str(tmp_path / "beat"),
                "-f",
                str(log),
            ],
            cwd=ROOT,
            env=env,
            stdout=err,
            stderr=err,
            start_new_session=True,
        )
    sender = Celery(broker=url)
    sender.conf.broker_connection_retry_on_startup = True
    queued = 0
    try:
        wait_for(lambda: "ready." in log.read_text(errors="replace"), "the worker to start")
        for outage in range(3):
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
            time.sleep(4)  # the worker meets the outage
            server = start_redis(port, tmp_path)
            for _ in range(5 + outage):  # the backlog, queued as the server returns
                sender.send_task(TASK)
                queued += 1
            wait_for(lambda n=queued: succeeded(log) >= n, f"{queued} tasks processed", 120)
            assert worker.poll() is None
        wait_for(lambda: redis.Redis(port=port).llen("celery") == 0, "an empty queue")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)

    restarts = supervisor_log.read_text().count("starting it again")
    print(f"worker restarted by its supervisor {restarts} time(s) over 3 outages")  # pytest -s
    # Every queued task ran, none twice. Each start of the worker, the supervisor's
    # restarts included, queues one more of its own (tasks._pick_up_abandoned_claims),
    # unless Redis was away at that moment, which depends on how fast the worker came
    # up: one per start, at most.
    assert queued == 18
    assert queued <= succeeded(log) <= queued + 1 + restarts
