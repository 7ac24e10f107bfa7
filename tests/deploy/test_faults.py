"""BenchHub under faults, on gunicorn with its production configuration: a gunicorn killed
in the middle of agent uploads, Redis stopped during uploads, PostgreSQL restarted during
reads. Each test starts the servers it breaks (Redis and PostgreSQL of its own, on free
loopback ports) and stops them whatever happens. Run alone with ``pytest -m faults``.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlencode

import psycopg
import pytest
import redis
from django.contrib.auth.models import User
from django.db import connection

from benchhub.accounts.roles import role_grant
from benchhub.accounts.services import api_token_create
from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.moderation.models import AliasMark
from benchhub.results.models import Hardware, Measurement, Run, Submission
from tests.deploy.agent import agent, agent_started, free_port, import_kept
from tests.deploy.servers import (
    celery_worker_with_beat,
    gunicorn,
    manage,
    private_postgresql,
    private_redis,
    server_environment,
    start_gunicorn,
    stop,
    wait_for,
)
from tests.factories import example_document

# Under pytest-xdist (--dist loadgroup, see the Makefile) on one worker, one
# after the other and never beside the Compose stack: they kill and restart servers.
pytestmark = [
    pytest.mark.faults,
    pytest.mark.django_db(transaction=True),
    pytest.mark.xdist_group("servers-of-their-own"),
]


def database_url_of_this_test() -> str:
    """The URL of the database this test runs on, for the servers it starts."""
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s["PASSWORD"] else ""
    return f"postgres://{s['USER']}{password}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}"


def copies_in_outbox(outbox: Path, count: int) -> set[str]:
    """``count`` documents waiting in the agent's outbox: one real pgbench import kept
    there, and copies of it under new uuids."""
    (original,) = import_kept(outbox, 1)
    document = json.loads((outbox / f"{original}.json").read_text())
    for _ in range(count - 1):
        document["uuid"] = str(uuid.uuid4())
        (outbox / f"{document['uuid']}.json").write_text(json.dumps(document))
    return {path.stem for path in outbox.glob("*.json")}


def post(port: int, token: str, document: dict) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        "/api/v1/submissions/",
        body=json.dumps(document),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def moderate(port: int, token: str, submission: str, action: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        f"/api/v1/submissions/{submission}/moderation/",
        body=json.dumps({"action": action}),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status


def test_a_push_cut_by_killing_gunicorn_stores_every_run_exactly_once_after_a_restart(
    alice, tmp_path
):
    _, token = api_token_create(user=alice, name="agent")
    outbox = tmp_path / "outbox"
    uuids = copies_in_outbox(outbox, 60)
    environment = server_environment(database_url_of_this_test(), redis_url=None)
    port = free_port()
    server = start_gunicorn(environment, port)
    try:
        push = agent_started(  # its own process, sending one document after another
            "push", "--server", f"http://127.0.0.1:{port}", "--token", token, outbox=outbox
        )
        wait_for(
            lambda: Submission.objects.count() >= 5, 60, "the first uploads stored", every=0.01
        )
        stop(server, signal.SIGKILL)  # the master and its workers, mid-request
        cut_off = push.communicate(timeout=120)
        stored_when_killed = Submission.objects.count()
        assert push.returncode == 3, cut_off  # some documents were kept back
        assert 5 <= stored_when_killed < len(uuids)

        server = start_gunicorn(environment, port)
        pushed = agent(
            "push", "--server", f"http://127.0.0.1:{port}", "--token", token, outbox=outbox
        )
        assert pushed.returncode == 0, pushed.stderr + pushed.stdout
    finally:
        stop(server)
    print(  # what the faults did (pytest -s)
        f"\nkill: {stored_when_killed} of {len(uuids)} stored when gunicorn was killed; "
        f"the re-push after the restart: {pushed.stdout.count('already stored')} already "
        f"stored, {pushed.stdout.count(': stored')} stored"
    )

    assert list(outbox.glob("*.json")) == []
    assert set(Submission.objects.values_list("uuid", flat=True)) == {uuid.UUID(u) for u in uuids}
    assert Submission.objects.count() == len(uuids)  # no uuid twice, nothing else
    assert Run.objects.count() == len(uuids)
    per_run = {Measurement.objects.filter(run=run).count() for run in Run.objects.all()}
    assert len(per_run) == 1 and per_run != {0}  # every run whole


def test_uploads_succeed_while_redis_is_down_and_baselines_catch_up_when_it_is_back(
    alice, tmp_path
):
    _, token = api_token_create(user=alice, name="agent")
    moderator = User.objects.create_user("moderator")
    role_grant(user=moderator, role="moderator")
    _, moderator_token = api_token_create(user=moderator, name="queue")
    with private_redis() as redis_server:
        environment = server_environment(
            database_url_of_this_test(),
            redis_url=redis_server.url,
            BENCHHUB_BASELINES_SWEEP_SECONDS="1",
            BH_TEST_TMP=str(tmp_path),
        )
        port = free_port()
        with gunicorn(environment, port), celery_worker_with_beat(environment):
            approved = example_document()
            assert post(port, token, approved) == 201
            wait_for(lambda: not DirtyKey.objects.exists(), 60, "the first refresh")
            assert not Baseline.objects.exists()  # pending: counted nowhere

            redis_server.stop()
            during = [example_document() for _ in range(6)]
            started = time.monotonic()
            statuses = [post(port, token, document) for document in during]
            upload_seconds = (time.monotonic() - started) / len(during)
            assert statuses == [201] * len(during)
            # A moderator approves the first while Redis is down: the approval
            # marks its runs, and nothing can queue their refresh yet.
            assert moderate(port, moderator_token, approved["uuid"], "approve") == 200
            assert DirtyKey.objects.count() == 1  # marked, its refresh not queued
            assert not Baseline.objects.exists()

            redis_server.start()  # empty: whatever was queued before is gone
            back = time.monotonic()
            wait_for(
                lambda: Baseline.objects.exists() and not DirtyKey.objects.exists(),
                60,
                "baselines caught up",
            )
            print(
                f"\nredis: {len(during)} uploads and an approval with Redis down, all "
                f"answered, {upload_seconds * 1000:.0f} ms per upload on average; baselines "
                f"caught up {time.monotonic() - back:.1f} s after Redis was back (sweep every 1 s)"
            )
    # One baseline per point of the approved run, made from it alone.
    points = Measurement.objects.filter(
        run__submission__uuid=approved["uuid"], approximate=False
    ).count()
    assert points > 0
    assert Baseline.objects.count() == points
    assert set(Baseline.objects.values_list("n", flat=True)) == {1}


# Redis up but refusing writes, as real redis-server 7.0 does it, and how each is undone.
REFUSALS = {
    # used_memory over maxmemory with nothing to evict: every write is "-OOM command not
    # allowed when used memory > 'maxmemory'." (redis-py: OutOfMemoryError); reads answer.
    "out of memory": (
        [("CONFIG", "SET", "maxmemory-policy", "noeviction"), ("CONFIG", "SET", "maxmemory", "1")],
        [("CONFIG", "SET", "maxmemory", "0")],
        "OutOfMemoryError",
    ),
    # A replica (of a master that does not answer: nothing is synced over its data): every
    # write is "-READONLY You can't write against a read only replica." (ReadOnlyError).
    "read-only replica": (
        [("REPLICAOF", "127.0.0.1", "{nobody}")],
        [("REPLICAOF", "NO", "ONE")],
        "ReadOnlyError",
    ),
}


class Browser:
    """Pages and forms over plain HTTP, keeping cookies (session, CSRF) as a browser does."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict[str, str] | None = None):
        """(status, body); a form is posted with the CSRF token of the last page read."""
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urlencode({**form, "csrfmiddlewaretoken": self._csrf})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        for cookie in response.msg.get_all("Set-Cookie") or []:
            name, _, value = cookie.split(";")[0].partition("=")
            self.cookies[name] = value
        if token := re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text):
            self._csrf = token[1]
        return response.status, text

    def sign_in(self, username: str, password: str) -> int:
        self.request("GET", "/accounts/login/")
        status, _ = self.request(
            "POST", "/accounts/login/", {"username": username, "password": password}
        )
        return status


@pytest.mark.parametrize("refusal", REFUSALS)
def test_requests_are_answered_while_redis_refuses_writes_and_baselines_catch_up_after(
    refusal, alice, tmp_path
):
    """Redis answering but refusing every write (full, or a replica) is Redis away for
    the requests: none answers 5xx, uploads, approvals and alias rules keep their marks in
    PostgreSQL, and the baselines and the stored rows catch up once Redis takes writes
    again."""
    refuse, undo, error = REFUSALS[refusal]
    _, token = api_token_create(user=alice, name="agent")
    moderator = User.objects.create_user("moderator", password="moderator-password")
    role_grant(user=moderator, role="moderator")
    _, moderator_token = api_token_create(user=moderator, name="queue")
    log = tmp_path / "gunicorn.log"
    with private_redis() as redis_server:
        environment = server_environment(
            database_url_of_this_test(),
            redis_url=redis_server.url,
            BENCHHUB_BASELINES_SWEEP_SECONDS="1",
            BENCHHUB_ALIAS_SWEEP_SECONDS="1",
            BH_TEST_TMP=str(tmp_path),
            # Counted in Redis on every API request (the other tests here turn them off).
            BENCHHUB_THROTTLE_ANON="1000/minute",
            BENCHHUB_THROTTLE_USER="1000/minute",
            BENCHHUB_THROTTLE_TOKEN="1000/minute",
        )
        port = free_port()
        with gunicorn(environment, port, log), celery_worker_with_beat(environment):
            approved = example_document()
            assert post(port, token, approved) == 201
            wait_for(lambda: not DirtyKey.objects.exists(), 60, "the first refresh")
            # The alias rules the upload cached: gone, so that the next reader writes them.
            for key in redis_server.command("KEYS", "*alias-rules"):
                redis_server.command("DEL", key)

            for command in refuse:
                redis_server.command(*(a.format(nobody=free_port()) for a in command))
            with pytest.raises(redis.ResponseError):  # Redis refuses writes now
                redis_server.command("SET", "probe", "1")
            during = [example_document() for _ in range(3)]
            uploads = [post(port, token, document) for document in during]
            browser = Browser(port)
            api_read, _ = browser.request("GET", "/api/v1/benchmarks/")
            page, _ = browser.request("GET", "/results/?cpu_vendor=AMD")  # an aliased filter
            wrong_password = browser.sign_in("moderator", "not-the-password")
            signed_in = browser.sign_in("moderator", "moderator-password")
            browser.request("GET", "/moderation/dimensions/")
            alias_rule, _ = browser.request(
                "POST",
                "/moderation/dimensions/",
                {
                    "target": "hardware.cpu_vendor",
                    "from_value": "amd",
                    "to_value": "advanced micro devices",
                },
            )
            approval = moderate(port, moderator_token, approved["uuid"], "approve")
            statuses = {
                "uploads": uploads,
                "api read": api_read,
                "filtered page": page,
                "wrong password": wrong_password,
                "sign-in": signed_in,
                "alias rule": alias_rule,
                "approval": approval,
            }
            assert statuses == {
                "uploads": [201] * len(during),
                "api read": 200,
                "filtered page": 200,
                "wrong password": 200,  # the form again, with its error
                "sign-in": 302,
                "alias rule": 302,
                "approval": 200,
            }
            assert DirtyKey.objects.count() == 1  # the approval's mark, its refresh not queued
            assert not Baseline.objects.exists()
            # The rule's mark, its task not queued: the stored rows keep the old value.
            assert list(AliasMark.objects.values_list("dimension", "field")) == [
                ("hardware", "cpu_vendor")
            ]
            assert set(Hardware.objects.values_list("cpu_vendor", flat=True)) == {"amd"}

            for command in undo:
                redis_server.command(*command)
            wait_for(lambda: not AliasMark.objects.exists(), 60, "the rule applied to stored rows")
            wait_for(
                lambda: Baseline.objects.exists() and not DirtyKey.objects.exists(),
                60,
                "baselines caught up",
            )
    assert Submission.objects.count() == 1 + len(during)
    assert set(Hardware.objects.values_list("cpu_vendor", flat=True)) == {"advanced micro devices"}
    warnings = log.read_text()
    # What went wrong is named: Redis's answer, for the cache and for the queue.
    for skipped in ("count", "add", "set"):
        assert f"cache {skipped} skipped, Redis failed: {error}:" in warnings
    assert f"baselines_refresh_task not queued, the broker failed: {error}:" in warnings
    assert f"alias_rules_apply_task not queued, the broker failed: {error}:" in warnings
    assert "unexpected error" not in warnings


class Readers:
    """Threads reading an API page over keep-alive connections until told to stop; each
    answer is kept as (started, ended, status or exception name)."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.answers: list[tuple[float, float, int | str]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._read) for _ in range(count)]
        for thread in self._threads:
            thread.start()

    def _read(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                conn.request("GET", "/api/v1/benchmarks/")
                response = conn.getresponse()
                response.read()
                status: int | str = response.status
            except (OSError, http.client.HTTPException) as exc:
                status = type(exc).__name__
                conn.close()
            self.answers.append((started, time.monotonic(), status))
            time.sleep(0.02)
        conn.close()

    def stop(self) -> list[tuple[float, float, int | str]]:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        return self.answers


def read_for(port: int, readers: int, seconds: float) -> list[int | str]:
    many = Readers(port, readers)
    time.sleep(seconds)
    return [status for _, _, status in many.stop()]


def test_reads_recover_after_a_postgresql_restart_without_restarting_gunicorn():
    with private_postgresql() as cluster:
        with psycopg.connect(f"{cluster.url}/postgres", autocommit=True) as admin:
            admin.execute("CREATE DATABASE benchhub")
        environment = server_environment(f"{cluster.url}/benchhub", redis_url=None)
        migrate = manage(environment, "migrate", "--noinput")
        assert migrate.returncode == 0, migrate.stderr
        port = free_port()
        with gunicorn(environment, port):
            # Every gunicorn thread (2 x 4) opens its persistent connection ...
            warm = read_for(port, readers=16, seconds=2)
            # ... then PostgreSQL restarts under a trickle of reads, which leaves most of
            # those connections dead without their threads noticing ...
            during = Readers(port, 1)
            restarting = time.monotonic()
            cluster.pg_ctl("restart", "-m", "fast")
            back = time.monotonic()
            time.sleep(0.5)
            trickle = during.stop()
            # ... and every request after it must still be answered.
            after = read_for(port, readers=16, seconds=2)

    assert warm and set(warm) == {200}
    assert trickle
    after += [status for started, _, status in trickle if started > back]
    assert len(after) > 30
    assert set(after) == {200}, f"after the restart: {sorted(map(str, after))}"
    while_down = [status for started, _, status in trickle if started <= back]
    # A read the restart cut short is told to try again, not that BenchHub broke.
    assert 500 not in while_down, f"during the restart: {sorted(map(str, while_down))}"
    print(
        f"\npostgresql: restart took {back - restarting:.2f} s; reads during it: "
        f"{sorted(map(str, while_down))}; after it: {len(after)} reads, all 200"
    )
