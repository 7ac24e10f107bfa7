"""docker-compose.yml scaled out on a real Docker daemon: ``--scale web=3 --scale worker=2``
behind the proxy, eight uploaders at once, one web and one worker container killed in the
middle of it. Every upload the agent's upload code saw accepted is stored exactly once, the
requests spread over the three web containers, no two refreshes of one baseline key ever
ran at once, and the baselines are what a full recompute makes of the stored runs.

The stack is docker-compose.yml with .ci/docker/docker-compose.bridge.yml over it: the
stand-in images of test_compose_stack.py, on compose's own bridge network as in production
(the proxy finds the three web containers by the service name through Docker's DNS).
Bounded: each step has a deadline, and everything is torn down, volumes included, even on
failure. Run alone with ``pytest -m deploy tests/deploy/test_scale_out.py``.
"""

from __future__ import annotations

import http.client
import http.server
import os
import re
import secrets
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import yaml
from benchhub_agent.upload import submit

from tests.deploy.agent import ROOT, free_port
from tests.deploy.servers import port_answers
from tests.deploy.test_compose_stack import docker_missing, serve_directory
from tests.factories import small_document

pytestmark = [pytest.mark.deploy, pytest.mark.xdist_group("servers-of-their-own")]

PROJECT = "bhscaletest"
BRIDGE = ROOT / ".ci" / "docker" / "docker-compose.bridge.yml"
WEB_REPLICAS, WORKER_REPLICAS = 3, 2
UPLOADERS, UPLOADS_EACH = 8, 12
# Three baseline keys (the run parameter rows is in the key) for four worker processes
# (2 containers x --concurrency=2): every key is wanted by more than one of them at a time.
ROWS = (100, 250, 1000)
# The agent's waits between attempts: a request cut by the killed web container is sent
# again, and nginx stops asking the dead address once Docker's DNS no longer names it.
BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)


@dataclass
class Scaled:
    compose: list[str]
    environment: dict[str, str]
    web: str
    database_url: str

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

    def containers(self, service: str) -> list[str]:
        return self.run("ps", "-q", service).stdout.split()

    def health(self, container: str) -> str | None:
        done = subprocess.run(
            ["docker", "inspect", "-f", "{{if .State.Health}}{{.State.Health.Status}}{{end}}",
             container],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip() or None

    def logs(self, container: str) -> str:
        done = subprocess.run(
            ["docker", "logs", container], capture_output=True, text=True, check=True
        )
        return done.stdout + done.stderr

    def sql(self, query: str, *params) -> list[tuple]:
        with psycopg.connect(self.database_url) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []


def wait_until(condition, limit: float, what: str, every: float = 0.5) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(every)
    pytest.fail(f"{what}: not after {limit:.0f} s")


def resolved_compose_file(environment: dict[str, str], path: Path, ports: dict[str, int]) -> None:
    """docker-compose.yml + the bridge override, interpolated; the proxy and db published
    on the test's free ports instead of the file's 8000 (which the machine may use)."""
    done = subprocess.run(
        ["docker-compose", "-f", "docker-compose.yml", "-f", str(BRIDGE), "config"],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    config = yaml.safe_load(done.stdout)
    services = config["services"]
    services["proxy"]["ports"] = [f"127.0.0.1:{ports['web']}:8080"]
    services["db"]["ports"] = [f"127.0.0.1:{ports['db']}:5432"]
    for name in ("migrate", "web", "worker", "beat"):
        services[name]["environment"].update(
            {
                # Hundreds of uploads a minute from one token: throttling has its own tests.
                "BENCHHUB_THROTTLE_TOKEN": "",
                "BENCHHUB_THROTTLE_USER": "",
                "BENCHHUB_THROTTLE_ANON": "",
                # The sweep that re-queues a refresh a killed worker left: every 2 s.
                "BENCHHUB_BASELINES_SWEEP_SECONDS": "2",
            }
        )
    # One line per request in each web container's log: which of them served what.
    services["web"]["environment"]["GUNICORN_ACCESSLOG"] = "-"
    path.write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def scaled(tmp_path_factory) -> Iterator[Scaled]:
    missing = docker_missing()
    if missing:
        pytest.skip(missing)
    images = subprocess.run(
        ["bash", str(ROOT / ".ci" / "docker" / "images.sh")],
        capture_output=True, text=True, timeout=420, check=False,
    )  # fmt: skip
    assert images.returncode == 0, images.stderr
    wheels = serve_directory(images.stdout.strip().splitlines()[-1])
    ports = {"web": free_port(), "db": free_port()}
    password = secrets.token_urlsafe(18)
    environment = {
        **os.environ,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "POSTGRES_PASSWORD": password,
        "BH_CI_WHEELS_URL": f"http://127.0.0.1:{wheels.server_port}/",
    }
    compose_file = tmp_path_factory.mktemp("compose") / "docker-compose.yml"
    resolved_compose_file(environment, compose_file, ports)
    scaled = Scaled(
        compose=["docker-compose", "-p", PROJECT, "-f", str(compose_file),
                 "--project-directory", str(ROOT)],
        environment=environment,
        web=f"http://127.0.0.1:{ports['web']}",
        database_url=f"postgresql://benchhub:{password}@127.0.0.1:{ports['db']}/benchhub",
    )  # fmt: skip
    try:
        scaled.run("down", "--volumes", "--remove-orphans")  # a run killed before its teardown
        scaled.run("build", "migrate", timeout=600)
        scaled.run("build", "proxy", timeout=600)
        scaled.run(
            "up", "--detach", "--no-build",
            "--scale", f"web={WEB_REPLICAS}", "--scale", f"worker={WORKER_REPLICAS}",
            timeout=600,
        )  # fmt: skip
        services = {"db": 1, "redis": 1, "web": WEB_REPLICAS, "worker": WORKER_REPLICAS, "proxy": 1}

        def all_healthy() -> bool:
            return all(
                len(ids := scaled.containers(service)) == count
                and all(scaled.health(c) == "healthy" for c in ids)
                for service, count in services.items()
            )

        try:
            wait_until(all_healthy, 300, "every container healthy", every=2)
        except BaseException:
            print(scaled.run("logs", "--no-color", "--tail", "30").stdout)
            raise
        yield scaled
    finally:
        wheels.shutdown()
        subprocess.run(
            [*scaled.compose, "down", "--volumes", "--remove-orphans", "--timeout", "10"],
            cwd=ROOT, env=environment, capture_output=True, timeout=300, check=False,
        )  # fmt: skip
        subprocess.run(["docker", "image", "prune", "--force"], capture_output=True, check=False)


@pytest.fixture(scope="module")
def token(scaled: Scaled) -> str:
    """A trusted submitter's: approved on arrival, so every upload counts in a baseline."""
    created = scaled.run(
        "exec", "-T", "--index=1", "web",
        "python", "manage.py", "create_api_token", "ops", "--create-user",
    )  # fmt: skip
    scaled.run("exec", "-T", "--index=1", "web", "python", "manage.py", "grant_role", "ops",
               "trusted")  # fmt: skip
    return created.stdout.split()[-1]


def document(uploader: int, number: int) -> dict:
    """Uneven values, close enough that none is flagged as an outlier."""
    doc = small_document(storage={"filesystem": ("xfs", "ext4")[uploader % 2]})
    doc["runs"][0]["parameters"]["rows"] = ROWS[(uploader + number) % len(ROWS)]
    for k, measurement in enumerate(doc["runs"][0]["measurements"]):
        measurement["value"] = (300.0, 1500.0)[k] + (uploader * 7 + number * 3 + k) % 11 + 0.25
    return doc


BASELINE_EVENT = re.compile(r"baselines: (start|done) ([0-9a-f]+) at ([0-9.]+)")


def refresh_events(scaled: Scaled, containers: list[str]) -> list[tuple[float, str, str, str]]:
    """Each worker's "baselines: start/done KEY at TIME" lines (refresh.py logs them):
    (time, start|done, key, container)."""
    events = []
    for container in containers:
        for kind, key, at in BASELINE_EVENT.findall(scaled.logs(container)):
            events.append((float(at), kind, key, container))
    return sorted(events)


def overlapping_refreshes(
    events: list[tuple[float, str, str, str]], killed: str, killed_at: float
) -> list[str]:
    """Each time a key's refresh started while another of that key had not ended. A
    refresh the killed worker had started ends when it was killed."""
    holder: dict[str, tuple[str, float]] = {}
    found = []
    for at, kind, key, container in sorted([*events, (killed_at, "killed", "", killed)]):
        if kind == "killed":
            holder = {k: h for k, h in holder.items() if not (h[0] == killed and h[1] < at)}
        elif kind == "start":
            if key in holder:
                other, since = holder[key]
                found.append(
                    f"{key[:12]}: started at {at:.6f} in {container[:12]} while "
                    f"{other[:12]} held it since {since:.6f}"
                )
            holder[key] = (container, at)
        else:
            holder.pop(key, None)
    return found


def baselines(scaled: Scaled) -> dict:
    """Every baseline's figures and buckets, keyed by (key, metric, point)."""
    rows = scaled.sql(
        "SELECT b.fingerprint, b.metric_id, b.point, b.n, b.median, b.minimum, b.maximum, "
        "b.mad, array_agg(k.value ORDER BY k.value), array_agg(k.count ORDER BY k.value) "
        "FROM baselines_baseline b JOIN baselines_baselinebucket k ON k.baseline_id = b.id "
        "GROUP BY b.id"
    )
    return {row[:3]: row[3:] for row in rows}


def settle(scaled: Scaled, killed_at: float) -> None:
    """Waits until every baseline key's marks are taken. A claim the killed worker held
    stays until CLAIM_EXPIRY (10 minutes) has passed, then the sweep hands it to another
    worker: the claims taken before the kill are aged by that much instead of waited for."""

    def nothing_dirty() -> bool:
        scaled.sql(
            "UPDATE baselines_dirtykey SET claimed_at = claimed_at - interval '11 minutes' "
            "WHERE claimed_at < to_timestamp(%s)",
            killed_at,
        )
        return scaled.sql("SELECT count(*) FROM baselines_dirtykey")[0][0] == 0

    wait_until(nothing_dirty, 180, "every baseline key refreshed", every=1)


def test_eight_uploaders_over_three_web_and_two_workers_lose_and_double_nothing_when_one_of_each_is_killed(  # noqa: E501
    scaled: Scaled, token: str
):
    answers: dict[str, object] = {}
    lock = threading.Lock()

    def uploader(number: int) -> None:
        for each in range(UPLOADS_EACH):
            doc = document(number, each)
            answer = submit(scaled.web, token, doc, backoff=BACKOFF, timeout=60)
            with lock:
                answers[doc["uuid"]] = answer

    def accepted() -> int:
        with lock:
            return sum(1 for a in answers.values() if a.accepted)

    webs, workers = scaled.containers("web"), scaled.containers("worker")
    threads = [threading.Thread(target=uploader, args=(n,)) for n in range(UPLOADERS)]
    for thread in threads:
        thread.start()
    total = UPLOADERS * UPLOADS_EACH
    wait_until(lambda: accepted() >= total // 4, 300, "a quarter of the uploads accepted", 0.1)

    def rounds_so_far() -> Counter:
        return Counter(e[3] for e in refresh_events(scaled, workers) if e[1] == "start")

    # The worker killed is one at work: the one that has refreshed the most so far.
    wait_until(lambda: rounds_so_far(), 120, "a worker refreshing", 0.2)
    victim = rounds_so_far().most_common(1)[0][0]
    subprocess.run(["docker", "kill", webs[0], victim], capture_output=True, check=True)
    # Once the kill has landed, not before it was asked for: until then the victim
    # may still log the start of a key its round had claimed: a CI run on a loaded
    # machine took the time first, and that start, logged after it, was reported as
    # overlapping the other worker's start of the key 9 s later.
    killed_at = time.time()
    print(f"\nkilled web {webs[0][:12]} and worker {victim[:12]} after {accepted()} uploads")
    for thread in threads:
        thread.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "an uploader still waits"

    # Every upload accepted (the agent sent again what the kill cut) ...
    refused = {u: a.describe() for u, a in answers.items() if not a.accepted}
    assert len(answers) == total and not refused, refused
    # ... and stored exactly once: one submission, one run, its two measurements.
    # (The stack's other submissions are the curated articles migrate loads.)
    stored = scaled.sql(
        "SELECT s.uuid::text, s.status, count(DISTINCT r.id), count(m.id) "
        "FROM results_submission s JOIN auth_user u ON u.id = s.submitter_id "
        "JOIN results_run r ON r.submission_id = s.id "
        "JOIN results_measurement m ON m.run_id = r.id WHERE u.username = 'ops' GROUP BY s.id"
    )
    assert sorted(row[0] for row in stored) == sorted(answers)
    assert {row[1:] for row in stored} == {("approved", 1, 2)}

    # The requests went to all three web containers.
    served = {c[:12]: scaled.logs(c).count('"POST /api/v1/submissions/ HTTP') for c in webs}
    print(f"uploads served per web container: {served}")
    assert len(webs) == WEB_REPLICAS
    assert all(count > 0 for count in served.values()), served

    # Baselines: no key refreshed by two workers at once, every run counted once.
    settle(scaled, killed_at)
    events = refresh_events(scaled, workers)
    by_worker = Counter(container[:12] for _, kind, _, container in events if kind == "start")
    print(f"refresh rounds per worker container: {dict(by_worker)}")
    assert len(by_worker) == WORKER_REPLICAS, "the other worker took over"
    assert overlapping_refreshes(events, victim, killed_at) == []

    runs_per_key = dict(
        scaled.sql(
            "SELECT c.fingerprint, count(*) FROM baselines_countedrun c "
            "JOIN results_run r ON r.id = c.run_id "
            "JOIN results_submission s ON s.id = r.submission_id "
            "JOIN auth_user u ON u.id = s.submitter_id WHERE u.username = 'ops' "
            "GROUP BY c.fingerprint"
        )
    )
    assert sum(runs_per_key.values()) == total
    assert len(runs_per_key) == len(ROWS)
    incremental = baselines(scaled)
    ours = {key: figures for key, figures in incremental.items() if key[0] in runs_per_key}
    # n: each run once, at each of its two points (clients 1 and 20)
    assert {key: figures[0] for key, figures in ours.items()} == {
        key: runs_per_key[key[0]] for key in ours
    }
    assert len(ours) == 2 * len(ROWS)

    # What the workers built run by run is what a rebuild from the stored runs makes.
    scaled.run("exec", "-T", "--index=2", "web", "python", "manage.py", "baselines_recompute")
    settle(scaled, killed_at)
    rebuilt = baselines(scaled)
    assert rebuilt.keys() == incremental.keys()
    for key, (*figures, values, counts) in incremental.items():
        *again, values_again, counts_again = rebuilt[key]
        assert again == pytest.approx(figures), key
        assert (values_again, counts_again) == (pytest.approx(values), counts), key


def test_overlapping_refreshes_are_found_and_a_killed_workers_last_one_ends_with_it():
    """The check above, on events it must refuse and accept (no stack needed)."""
    events = [
        (1.0, "start", "aa", "w1"),
        (1.5, "done", "aa", "w1"),
        (1.6, "start", "aa", "w2"),
        (1.7, "start", "bb", "w1"),
        (1.8, "start", "aa", "w1"),  # w2 still holds aa
        (1.9, "done", "aa", "w2"),
        (2.0, "done", "aa", "w1"),
    ]
    assert len(overlapping_refreshes(events, "w9", 9.0)) == 1
    # w1 killed at 3.0 holding bb: w2 may take it after, not before.
    later = [(2.5, "start", "bb", "w2"), (2.6, "done", "bb", "w2")]
    assert len(overlapping_refreshes(events[:4] + later, "w1", 3.0)) == 1
    later = [(3.5, "start", "bb", "w2"), (3.6, "done", "bb", "w2")]
    assert overlapping_refreshes(events[:4] + later, "w1", 3.0) == []


class NamedHandler(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the name of its server: which web machine answered."""

    def do_GET(self) -> None:
        body = self.server.name.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:
        pass


def named_server(name: str) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NamedHandler)
    server.name = name  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_proxy_takes_turns_over_the_web_machines_it_lists(scaled: Scaled):
    """docs/operations.md's proxy for several machines: PROXY_UPSTREAM lists them."""
    machines = [named_server("first"), named_server("second")]
    listen = free_port()
    upstream = ",".join(f"127.0.0.1:{m.server_port}" for m in machines)
    name = f"bhscaletest-proxy-{listen}"
    subprocess.run(
        ["docker", "run", "-d", "--rm", "--name", name, "--network", "host",
         "-e", f"PROXY_LISTEN=127.0.0.1:{listen}", "-e", f"PROXY_UPSTREAM={upstream}",
         "bh-ci/benchhub-proxy:test"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    try:
        wait_until(lambda: port_answers(listen), 30, "the proxy listening")
        answers = Counter()
        for _ in range(6):
            conn = http.client.HTTPConnection("127.0.0.1", listen, timeout=10)
            conn.request("GET", "/", headers={"Host": "localhost"})
            answers[conn.getresponse().read().decode()] += 1
            conn.close()
        # Each nginx process (one per core) takes its own turns: both, not exactly 3 each.
        assert sum(answers.values()) == 6 and answers["first"] > 0 and answers["second"] > 0

        # One of them gone: the other answers everything, nothing fails.
        machines[0].shutdown()
        machines[0].server_close()
        statuses = Counter()
        for _ in range(6):
            conn = http.client.HTTPConnection("127.0.0.1", listen, timeout=10)
            conn.request("GET", "/", headers={"Host": "localhost"})
            response = conn.getresponse()
            statuses[(response.status, response.read().decode())] += 1
            conn.close()
        assert statuses == {(200, "second"): 6}
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True, check=False)
        for machine in machines:
            machine.shutdown()

    # A list with a resolver is refused, naming the variables.
    refused = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-e", "PROXY_UPSTREAM=a:1,b:2",
         "-e", "PROXY_RESOLVER=127.0.0.11", "bh-ci/benchhub-proxy:test", "true"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "PROXY_UPSTREAM='a:1,b:2' lists several addresses" in refused.stderr
