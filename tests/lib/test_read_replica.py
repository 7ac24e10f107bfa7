"""DATABASE_REPLICA_URL on a real streaming replica: gunicorn with the production
configuration on a primary of the test's own and a ``pg_basebackup -R`` replica of it
(tests/replication.py). The replica's replay is paused to make it lag: a read that does
not see what the primary holds was served by the replica, one that sees it by the primary.
"""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.deploy.servers import (
    gunicorn,
    manage,
    private_redis,
    server_environment,
    wait_for,
)
from tests.factories import small_document
from tests.live import free_port
from tests.replication import StreamingPair, postgresql_missing, streaming_pair

# It stops and starts its replica: one at a time with the other tests that do so.
pytestmark = [pytest.mark.faults, pytest.mark.xdist_group("servers-of-their-own")]


@dataclass
class Site:
    port: int
    pair: StreamingPair
    alice: str  # a trusted submitter's token: her uploads are public on arrival
    bob: str

    def request(
        self, method: str, path: str, token: str | None = None, body: dict | None = None
    ) -> tuple[int, bytes]:
        headers = {"Host": "127.0.0.1"}
        if token:
            headers["Authorization"] = f"Token {token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def get(self, path: str, token: str | None = None) -> tuple[int, dict]:
        status, raw = self.request("GET", path, token)
        return status, json.loads(raw) if raw.startswith(b"{") else {}

    def upload(self, measurements: list[float]) -> tuple[str, int]:
        """Alice uploads a run; its uuid and run id, as she reads them back at once."""
        document = small_document()
        for measurement, value in zip(
            document["runs"][0]["measurements"], measurements, strict=True
        ):
            measurement["value"] = value
        status, raw = self.request("POST", "/api/v1/submissions/", self.alice, document)
        assert status == 201, raw[:500]
        status, stored = self.get(f"/api/v1/submissions/{document['uuid']}/", self.alice)
        assert status == 200, stored
        assert stored["status"] == "approved"
        return document["uuid"], stored["runs"][0]["id"]


def token_for(environment: dict[str, str], username: str) -> str:
    created = manage(environment, "create_api_token", username, "--create-user")
    assert created.returncode == 0, created.stderr
    return created.stdout.split()[-1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    missing = postgresql_missing()
    if missing:
        pytest.skip(missing)
    with streaming_pair() as pair, private_redis() as redis:
        environment = server_environment(
            pair.primary_url,
            redis.url,
            DATABASE_REPLICA_URL=pair.replica_url,
            DATABASE_REPLICA_RETRY_SECONDS="1",
            BENCHHUB_CACHE_KEY_PREFIX=f"replica-{uuid.uuid4().hex[:8]}",
            BH_TEST_TMP=str(tmp_path_factory.mktemp("replica")),
        )
        # With the replica configured: migrate must leave it alone (it refuses writes).
        migrated = manage(environment, "migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr
        alice = token_for(environment, "alice")
        granted = manage(environment, "grant_role", "alice", "trusted")
        assert granted.returncode == 0, granted.stderr
        bob = token_for(environment, "bob")
        port = free_port()
        log = Path(environment["BH_TEST_TMP"]) / "gunicorn.log"
        with gunicorn(environment, port, log):
            site = Site(port, pair, alice, bob)
            pair.caught_up()
            yield site


def stored_on(url: str, submission: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM results_submission WHERE uuid = %s", [submission]
        ).fetchone()[0]


def test_public_reads_come_from_the_replica_and_the_uploader_reads_her_upload_at_once(
    site: Site,
):
    with site.pair.replay_paused():
        submission, run = site.upload([412.5, 1733.0])  # her own read-back: the primary's
        assert stored_on(site.pair.primary_url, submission) == 1
        assert stored_on(site.pair.replica_url, submission) == 0  # the replica lags

        # Alice, right after her write, on a public endpoint: the primary.
        assert site.get(f"/api/v1/runs/{run}/", site.alice)[0] == 200
        # Everyone else: the replica, which has not replayed it yet.
        assert site.get(f"/api/v1/runs/{run}/")[0] == 404
        assert site.get(f"/api/v1/runs/{run}/", site.bob)[0] == 404
        assert site.request("GET", f"/runs/{run}/")[0] == 404
        status, health = site.get("/healthz")
        assert (status, health["status"]) == (200, "ok"), health
        assert health["checks"]["replica"]["behind_bytes"] > 0

    site.pair.caught_up()
    assert site.get(f"/api/v1/runs/{run}/")[0] == 200
    assert site.request("GET", f"/runs/{run}/")[0] == 200
    assert site.get(f"/api/v1/runs/{run}/", site.bob)[0] == 200


def test_with_the_replica_down_reads_go_to_the_primary_and_health_says_degraded(site: Site):
    site.pair.replica.pg_ctl("stop", "-m", "fast")
    try:
        # New since the replica stopped: only the primary can answer it.
        _, run = site.upload([95.25, 3070.0])
        for path in (f"/api/v1/runs/{run}/", f"/runs/{run}/"):
            for _ in range(6):  # over both gunicorn processes and their threads
                assert site.request("GET", path)[0] == 200, path
        for path in ("/", "/results/", "/api/v1/measurements/?engine=postgresql"):
            assert site.request("GET", path)[0] == 200, path
        status, health = site.get("/healthz")
        assert (status, health["status"]) == (200, "degraded"), health
        assert health["degraded"] == ["replica"]
        assert health["checks"]["replica"]["error"] == "OperationalError"
    finally:
        site.pair.replica.pg_ctl("start")
    site.pair.caught_up()

    wait_for(lambda: site.get("/healthz")[1].get("status") == "ok", 30, "healthz ok again")
    # Back on the replica: with its replay paused, a new run is not public there.
    with site.pair.replay_paused():
        _, run = site.upload([7.0, 61.5])
        wait_for(
            lambda: site.get(f"/api/v1/runs/{run}/")[0] == 404,
            30,
            "anonymous reads served by the replica again",
        )
