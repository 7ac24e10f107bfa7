"""docker-compose.yml really starts, on a real Docker daemon, and serves an upload.

The stack is the user's docker-compose.yml with .ci/docker/docker-compose.ci.yml over it:
PostgreSQL and Redis images built from Debian's packages (no image registry is reachable
here), the app image built from the Dockerfile on a debootstrapped Debian, every service on
the host network on free loopback ports. Compose v1 cannot drop a list in an override (no
``!reset``) and dockerd refuses published ports on the host network, so the test resolves
both files with ``docker-compose config`` and leaves out ``ports``.

Bounded: each step has a deadline, about 10 minutes in all on a machine that built the base
images before (.ci/docker/images.sh keeps them by tag), and everything is torn down, volumes
included, even on failure. Run alone with ``pytest -m deploy``.
"""

from __future__ import annotations

import functools
import http.client
import http.server
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import redis
import yaml

from tests.deploy.agent import ROOT, agent, free_port, pgbench_output

# One Compose project name: its tests share one stack, so under pytest-xdist
# (--dist loadgroup, see the Makefile) one worker runs them, never beside the
# fault tests.
pytestmark = [pytest.mark.deploy, pytest.mark.xdist_group("servers-of-their-own")]

PROJECT = "bhdeploytest"
OVERRIDE = ROOT / ".ci" / "docker" / "docker-compose.ci.yml"
APP_SERVICES = ("migrate", "web", "worker", "beat")
MAX_UPLOAD = 1_234_567


def docker_missing() -> str | None:
    if shutil.which("docker-compose") is None or shutil.which("docker") is None:
        return "docker and docker-compose are not installed (bash .ci/ensure-docker.sh)"
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        return "no Docker daemon answers (bash .ci/ensure-docker.sh starts one)"
    return None


@dataclass
class Stack:
    compose: list[str]
    environment: dict[str, str]
    web: str
    app_port: int
    database_url: str
    redis_url: str

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [*self.compose, *args],
            cwd=ROOT,
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done

    def run_with_files(self, *args: str, stdin=None, stdout=None) -> None:
        """A command whose input or output is a (binary) file, as in docs/operations.md."""
        done = subprocess.run(
            [*self.compose, *args],
            cwd=ROOT,
            env=self.environment,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stderr.decode()}"

    def container(self, service: str) -> str:
        return self.run("ps", "-q", service).stdout.strip()

    def state(self, service: str) -> dict:
        done = subprocess.run(
            ["docker", "inspect", "-f", "{{json .State}}", self.container(service)],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)

    def up(self) -> None:
        """``up``; if a service fails to start, the failure carries every
        service's last log lines (compose itself names only a container id,
        and the teardown removes the container before anyone can look)."""
        try:
            self.run("up", "--detach", "--no-build", timeout=400)
        except AssertionError as exc:
            logs = subprocess.run(
                [*self.compose, "logs", "--no-color", "--tail", "40"],
                cwd=ROOT, env=self.environment, capture_output=True, text=True, timeout=120,
                check=False,
            )  # fmt: skip
            pytest.fail(f"{exc}\n--- the services' logs ---\n{logs.stdout}{logs.stderr}")

    def wait_healthy(self, *services: str, limit: float = 240) -> None:
        deadline = time.monotonic() + limit
        states = {}
        while time.monotonic() < deadline:
            states = {s: self.state(s).get("Health", {}).get("Status") for s in services}
            if all(status == "healthy" for status in states.values()):
                return
            time.sleep(1)
        logs = self.run("logs", "--tail", "30", *services).stdout
        pytest.fail(f"not healthy after {limit:.0f} s: {states}\n{logs}")

    def get(self, path: str, token: str | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(self.web + path, headers={"Host": "localhost"})  # noqa: S310 -- http on loopback
        if token:
            request.add_header("Authorization", f"Token {token}")
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 -- loopback
            return response.status, json.loads(response.read())


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:
        pass


def serve_directory(directory: str) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def compose_command(compose_file: Path) -> list[str]:
    return [
        "docker-compose",
        "-p",
        PROJECT,
        "-f",
        str(compose_file),
        "--project-directory",
        str(ROOT),
    ]


def resolved_compose_file(environment: dict[str, str], path: Path) -> None:
    """docker-compose.yml + the CI override, interpolated, without published ports."""
    done = subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "-f", str(OVERRIDE), "config"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    config = yaml.safe_load(done.stdout)
    for service in config["services"].values():
        service.pop("ports", None)
    path.write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    missing = docker_missing()
    if missing:
        pytest.skip(missing)
    images = subprocess.run(
        ["bash", str(ROOT / ".ci" / "docker" / "images.sh")],
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    assert images.returncode == 0, images.stderr
    wheels = serve_directory(images.stdout.strip().splitlines()[-1])
    # web: the proxy, the stack's one way in; app: gunicorn behind it.
    ports = {"db": free_port(), "redis": free_port(), "web": free_port(), "app": free_port()}
    password = secrets.token_urlsafe(18)
    environment = {
        **os.environ,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "POSTGRES_PASSWORD": password,
        "BH_CI_DB_PORT": str(ports["db"]),
        "BH_CI_REDIS_PORT": str(ports["redis"]),
        "BH_CI_WEB_PORT": str(ports["web"]),
        "BH_CI_APP_PORT": str(ports["app"]),
        # Uneven, so that a proxy limit of its own (2 MiB) would show.
        "BENCHHUB_MAX_UPLOAD_BYTES": str(MAX_UPLOAD),
        "BH_CI_WHEELS_URL": f"http://127.0.0.1:{wheels.server_port}/",
    }
    compose_file = tmp_path_factory.mktemp("compose") / "docker-compose.yml"
    resolved_compose_file(environment, compose_file)
    stack = Stack(
        compose=compose_command(compose_file),
        environment=environment,
        web=f"http://127.0.0.1:{ports['web']}",
        app_port=ports["app"],
        database_url=f"postgresql://benchhub:{password}@127.0.0.1:{ports['db']}/benchhub",
        redis_url=f"redis://127.0.0.1:{ports['redis']}/0",
    )
    try:
        stack.run("down", "--volumes", "--remove-orphans")  # a run killed before its teardown
        stack.run("build", "migrate", timeout=600)  # one image for the four app services
        stack.run("build", "proxy", timeout=600)
        stack.up()
        stack.wait_healthy("db", "redis", "web", "worker", "proxy")
        migrate = stack.state("migrate")
        assert (migrate["Status"], migrate["ExitCode"]) == ("exited", 0)
        yield stack
    finally:
        wheels.shutdown()
        subprocess.run(
            [*stack.compose, "down", "--volumes", "--remove-orphans", "--timeout", "10"],
            cwd=ROOT, env=environment, capture_output=True, timeout=300, check=False,
        )  # fmt: skip
        # vfs keeps every layer as a whole copy: drop the images this build replaced.
        subprocess.run(["docker", "image", "prune", "--force"], capture_output=True, check=False)


@pytest.fixture(scope="module")
def token(stack: Stack) -> str:
    created = stack.run(
        "exec", "-T", "web", "python", "manage.py", "create_api_token", "ops", "--create-user"
    )
    return created.stdout.split()[-1]


def upload(stack: Stack, token: str, outbox: Path) -> dict:
    """One new pgbench run through the agent; returns the stored submission as the web
    service shows it to its submitter."""
    output = pgbench_output(outbox.parent / "pgbench", random.uniform(1000, 3000))
    sent = agent(
        "import", "pgbench", str(output), "--upload",
        "--server", stack.web, "--token", token, outbox=outbox,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr + sent.stdout
    assert list(outbox.glob("*.json")) == []  # nothing kept back
    status, page = stack.get("/api/v1/submissions/", token)
    assert status == 200
    return page["results"][0]


def own_submissions(stack: Stack, token: str) -> set[str]:
    status, page = stack.get("/api/v1/submissions/", token)
    assert status == 200
    return {s["uuid"] for s in page["results"]}


def dirty_keys(stack: Stack) -> int:
    with psycopg.connect(stack.database_url) as conn:
        return conn.execute("SELECT count(*) FROM baselines_dirtykey").fetchone()[0]


def wait_until(condition, limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    pytest.fail(f"{what}: not after {limit:.0f} s")


def test_the_stack_serves_an_agent_upload_and_keeps_a_refresh_queued_across_a_worker_restart(
    stack: Stack, token: str, tmp_path: Path
):
    status, health = stack.get("/healthz")
    assert (status, health["status"]) == (200, "ok"), health
    status, benchmarks = stack.get("/api/v1/benchmarks/")
    assert status == 200 and benchmarks, "migrate did not sync the catalog"

    first = upload(stack, token, tmp_path / "outbox")
    status, stored = stack.get(f"/api/v1/submissions/{first['uuid']}/", token)
    assert status == 200
    assert (stored["status"], stored["tool"]) == ("pending", "pgbench")
    assert len(stored["runs"]) == 1
    assert stored["document"]["runs"][0]["measurements"]
    status, run = stack.get(f"/api/v1/runs/{stored['runs'][0]['id']}/", token)
    assert status == 200 and run["benchmark"] == "tpcb"
    wait_until(lambda: dirty_keys(stack) == 0, 60, "the worker refreshing the first upload")

    # With the worker down, the next upload's refresh waits in Redis ...
    stack.run("stop", "worker")
    second = upload(stack, token, tmp_path / "outbox")
    assert second["uuid"] != first["uuid"]
    assert dirty_keys(stack) == 1
    queue = redis.Redis.from_url(stack.redis_url)
    assert queue.llen("celery") >= 1

    # ... and a new worker container picks it up: nothing was lost.
    stack.run("rm", "--force", "worker")
    stack.run("up", "--detach", "--no-build", "worker")
    wait_until(lambda: dirty_keys(stack) == 0, 120, "the new worker running the queued refresh")
    assert queue.llen("celery") == 0
    stack.wait_healthy("worker")


def test_a_backup_restored_as_the_operations_guide_says_brings_back_what_it_held(
    stack: Stack, token: str, tmp_path: Path
):
    upload(stack, token, tmp_path / "outbox")
    held = own_submissions(stack, token)
    dump = tmp_path / "benchhub.dump"
    with dump.open("wb") as out:
        stack.run_with_files(
            "exec", "-T", "db", "pg_dump", "-U", "benchhub", "--format=custom", "benchhub",
            stdout=out,
        )  # fmt: skip
    later = upload(stack, token, tmp_path / "outbox")["uuid"]
    assert own_submissions(stack, token) == held | {later}

    stack.run("stop", "web", "worker", "beat")
    with dump.open("rb") as backup:
        stack.run_with_files(
            "exec", "-T", "db", "pg_restore", "-U", "benchhub", "-d", "benchhub",
            "--clean", "--if-exists", "--no-owner", stdin=backup,
        )  # fmt: skip
    stack.up()
    stack.wait_healthy("web", "worker")

    assert own_submissions(stack, token) == held  # the later upload is gone, the rest is back


def web_port(stack: Stack) -> int:
    return int(stack.web.rpartition(":")[2])


def healthz_seconds(port: int, limit: float = 3) -> float:
    """How long /healthz took on this port; ``limit`` if it did not answer 200 within it."""
    started = time.monotonic()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=limit)
        conn.request("GET", "/healthz", headers={"Host": "localhost"})
        status = conn.getresponse().status
        conn.close()
    except OSError:
        return limit
    return time.monotonic() - started if status == 200 else limit


class SlowUploads:
    """Connections that send an upload's headers and the start of its body, then one
    byte now and then: each holds whatever reads the body until it is whole."""

    def __init__(self, port: int, count: int, token: str) -> None:
        self.port = port
        self.token = token
        self.sockets: list[socket.socket] = []
        self.open(count)

    def open(self, count: int) -> None:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            sock.sendall(
                b"POST /api/v1/submissions/ HTTP/1.1\r\nHost: localhost\r\n"
                b"Content-Type: application/json\r\nContent-Length: 98765\r\n"
                + f"Authorization: Token {self.token}\r\n\r\n".encode()
                + b'{"uuid": "'
            )
            self.sockets.append(sock)

    def trickle(self) -> None:
        for sock in self.sockets:
            sock.sendall(b"0")  # raises if the server gave up on it

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


def test_slow_uploads_through_the_proxy_leave_the_site_answering(stack: Stack, token: str):
    threads = 2 * 4  # gunicorn.conf.py: 2 processes x 4 threads
    # Straight at gunicorn, the attack takes every thread: this is what the proxy prevents.
    # Which process accepts a connection depends on which is scheduled first, so on a busy
    # machine one process can take every slow upload while the other stays free. The attack
    # grows until /healthz goes unanswered; the proxy then gets that attack and more.
    direct = SlowUploads(stack.app_port, 0, token)
    answered = []
    try:
        while len(direct.sockets) < 12 * threads:
            direct.open(threads)
            time.sleep(1)  # gunicorn hands the connections to its threads
            answered.append(healthz_seconds(stack.app_port))
            if answered[-1] >= 3:
                break
        attack = len(direct.sockets)
    finally:
        direct.close()
    wait_until(lambda: healthz_seconds(stack.app_port) < 3, 60, "gunicorn free again")
    assert answered[-1] >= 3, f"gunicorn alone resisted {attack} slow uploads: {answered}"

    slow = SlowUploads(web_port(stack), 3 * attack, token)
    try:
        took = []
        for _ in range(6):  # over about 12 s, the bodies still coming (timeout 15 s)
            slow.trickle()
            took.append(healthz_seconds(web_port(stack)))
            time.sleep(2)
        slow.trickle()  # nginx still holds every one of them
    finally:
        slow.close()
    print(f"\n/healthz through the proxy under {len(slow.sockets)} slow uploads: {took}")
    # Every probe answered within the limit gunicorn alone missed; on a loaded machine
    # /healthz (a database and a Redis round trip) can take over a second by itself.
    assert max(took) < 3, took


def test_a_body_over_the_upload_limit_is_refused_by_the_proxy_before_it_is_sent(
    stack: Stack, token: str
):
    headers = {"Host": "localhost", "Authorization": f"Token {token}",
               "Content-Type": "application/json"}  # fmt: skip
    # Headers only: a 413 before any byte of the body can only be the proxy's.
    conn = http.client.HTTPConnection("127.0.0.1", web_port(stack), timeout=10)
    conn.putrequest("POST", "/api/v1/submissions/", skip_host=True)
    for name, value in {**headers, "Content-Length": str(MAX_UPLOAD + 1)}.items():
        conn.putheader(name, value)
    conn.endheaders()
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    assert response.status == 413
    assert body["error"]["code"] == "too_large"
    assert str(MAX_UPLOAD) in body["error"]["message"]

    # At the limit, the body goes through to the app, which says what is wrong with it.
    conn = http.client.HTTPConnection("127.0.0.1", web_port(stack), timeout=60)
    conn.request("POST", "/api/v1/submissions/", body=b"x" * MAX_UPLOAD, headers=headers)
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    assert response.status == 400, body


def status_from(stack: Stack, source: str, token: str, forwarded_for: str) -> int:
    conn = http.client.HTTPConnection(
        "127.0.0.1", web_port(stack), timeout=30, source_address=(source, 0)
    )
    conn.request(
        "GET",
        "/api/v1/submissions/",
        headers={"Host": "localhost", "Authorization": f"Token {token}",
                 "X-Forwarded-For": forwarded_for},
    )  # fmt: skip
    status = conn.getresponse().status
    conn.close()
    return status


def test_the_app_counts_wrong_tokens_against_the_address_the_proxy_saw(stack: Stack, token: str):
    # Another loopback address than the other tests', so that its lockout is its own.
    attacker, bystander = "127.0.0.2", "127.0.0.3"
    for i in range(10):  # BENCHHUB_AUTH_FAILURES_ALLOWED
        assert status_from(stack, attacker, "wrong" + str(i), f"10.1.2.{i * 7 + 3}") == 401
    # Counted against its own address, whatever it wrote in X-Forwarded-For ...
    assert status_from(stack, attacker, token, "10.9.8.7") == 429
    # ... and not against another client's, even one that claims the attacker's address.
    assert status_from(stack, bystander, token, attacker) == 200
