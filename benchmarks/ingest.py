"""Upload throughput of BenchHub: POST /api/v1/submissions/ under gunicorn on PostgreSQL.

Self-contained and bounded in time. One run:

1. drops and creates a scratch PostgreSQL database, migrates it, creates a user and an
   API token;
2. serves BenchHub with gunicorn on 127.0.0.1 (a free port), DEBUG off, on that database,
   configured by gunicorn.conf.py as docker-compose.yml runs it (options override it);
3. posts select-update sweeps (docs/examples/select-update-submission.json: 9 client
   levels x 6 metrics x 3 samples, full environment), each with a new uuid and jittered
   values, from N client threads (http.client, keep-alive where the server allows it)
   for a warm-up and then a measured window. About one upload in ten describes an
   environment never seen before (one new dimension row); the rest reuse known ones;
4. prints the throttles in force, uploads/s, p50/p95/p99 latency, errors by status, CPU
   used by the client, the gunicorn workers and the whole machine, and each worker's RSS
   afterwards; with a worker (or in-process tasks), the runs still marked for a baseline
   refresh at the end of the window and how long the backlog took to drain;
5. checks that the database holds exactly one submission per 201 answer (and its runs
   and measurements), stops gunicorn and drops the database.

    .venv/bin/python benchmarks/ingest.py --duration 30
    .venv/bin/python benchmarks/ingest.py --worker-class sync --workers 4 --tasks worker
    .venv/bin/python benchmarks/ingest.py --server runserver --database sqlite --tasks eager \
        --clients 8      # the embedded default (`make run`): no request may take over 1 s
    .venv/bin/python benchmarks/ingest.py --tasks worker --throttles deployed

The Celery worker runs with docker-compose.yml's --concurrency. By default the throttles
count every request at a rate never reached (one token sends everything); with
``--throttles deployed`` they keep the deployed defaults (settings.py) and each client
thread uploads as a user of its own, as a community of agents would, so a refused upload
(429) is the throttle at work and not an error.

Every upload is the same select-update sweep on the same engine and major version: one
comparability key, the hot key whose baselines every upload marks.

Exit status 0 when the run was correct (stored == 201 answers, no 5xx or transport
errors); the speed targets are reported, not enforced.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import random
import re
import resource
import runpy
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "select-update-submission.json"
UPLOAD_PATH = "/api/v1/submissions/"
TICKS = os.sysconf("SC_CLK_TCK")

# Markers put into the template's environment strings; each upload replaces them, which
# decides whether its dimension rows already exist.
UUID_MARK = "00000000-0000-4000-8000-00000000feed"
DIMENSION_MARKS = {
    "hardware": "@@HW@@",
    "storage": "@@ST@@",
    "os": "@@OS@@",
    "database": "@@DB@@",
    "client": "@@CL@@",
}
KNOWN_ENVIRONMENTS = 4  # the reused environments: placeholders "", " e1", " e2", " e3"

MEASUREMENTS_PER_UPLOAD = sum(
    len(r["measurements"]) for r in json.loads(EXAMPLE.read_text("utf-8"))["runs"]
)

CELERY_QUEUE = "celery"  # the default queue's Redis list

TASK_MODES = {
    "redis": "queued to Redis, no Celery worker (the web tier alone, as deployed)",
    "worker": "queued to Redis, a Celery worker on the same machine consumes them",
    "eager": "run inside the upload request (the embedded default, no REDIS_URL)",
}

COMPOSE_FILE = ROOT / "docker-compose.yml"
THROTTLE_VARIABLES = ("BENCHHUB_THROTTLE_TOKEN", "BENCHHUB_THROTTLE_USER")
UNREACHED_RATE = "10000000/minute"

TARGET_RATE = 150.0
TARGET_P99_MS = 300.0
TARGET_RSS_MB = 250.0


# --- documents ------------------------------------------------------------------------


def document_templates(count: int, rng: random.Random) -> list[str]:
    """``count`` JSON texts of the example sweep with jittered values (±3 %), the uuid
    and the environment markers still in them."""
    base = json.loads(EXAMPLE.read_text("utf-8"))
    base["uuid"] = UUID_MARK
    env = base["environment"]
    env["hardware"]["cpu"] += DIMENSION_MARKS["hardware"]
    env["storage"]["device_model"] += DIMENSION_MARKS["storage"]
    env["os"]["kernel"] += DIMENSION_MARKS["os"]
    env["database"]["version_string"] += DIMENSION_MARKS["database"]
    env["client"]["driver_version"] += DIMENSION_MARKS["client"]
    texts = []
    for _ in range(count):
        doc = json.loads(json.dumps(base))
        for run in doc["runs"]:
            for m in run["measurements"]:
                factor = rng.uniform(0.97, 1.03)
                m["value"] = round(m["value"] * factor, 3)
                if "samples" in m:
                    m["samples"] = [round(s * factor, 3) for s in m["samples"]]
        texts.append(json.dumps(doc))
    return texts


class Bodies:
    """Makes upload bodies cheaply: a pre-built template, a fresh uuid, and markers
    replaced by a known environment or (with probability ``new_rate``) one new value in
    one dimension. Thread-safe."""

    def __init__(self, templates: list[str], new_rate: float, seed: int) -> None:
        self.templates = templates
        self.new_rate = new_rate
        self.run_tag = uuid.uuid4().hex[:8]
        self._counter = 0
        self._lock = threading.Lock()
        self._local = threading.local()
        self._seed = seed

    def _rng(self) -> random.Random:
        rng = getattr(self._local, "rng", None)
        if rng is None:
            rng = self._local.rng = random.Random(f"{self._seed}-{threading.get_ident()}")
        return rng

    def next(self) -> bytes:
        rng = self._rng()
        text = rng.choice(self.templates).replace(UUID_MARK, str(uuid.uuid4()))
        known = rng.randrange(KNOWN_ENVIRONMENTS)
        new_dimension = None
        if rng.random() < self.new_rate:
            new_dimension = rng.choice(list(DIMENSION_MARKS))
        for dimension, mark in DIMENSION_MARKS.items():
            if dimension == new_dimension:
                with self._lock:
                    self._counter += 1
                    n = self._counter
                value = f" n{self.run_tag}.{n}"
            else:
                value = f" e{known}" if known else ""
            text = text.replace(mark, value)
        return text.encode()


# --- load -----------------------------------------------------------------------------


@dataclass
class Sample:
    started: float
    ended: float
    status: str  # "201", "400", ..., or "conn:<exception name>"


@dataclass
class Load:
    samples: list[Sample] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Uploader:
    """One keep-alive HTTP/1.1 connection that posts upload bodies: the bytes
    http.client.HTTPConnection.request() sends (request line, Host,
    Accept-Encoding: identity, Content-Length, then the given headers; head and
    body in one send), with the answer read by plain byte operations instead
    of http.client's email-parser headers, which took most of the client's
    CPU in profiles: the load
    generator shares the two cores it measures."""

    def __init__(self, port: int, headers: dict[str, str], timeout: float) -> None:
        self.address = ("127.0.0.1", port)
        self.timeout = timeout
        lines = [
            f"POST {UPLOAD_PATH} HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            "Accept-Encoding: identity",
            "Content-Length: {length}",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        self.head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.sock: socket.socket | None = None
        self.buffer = b""

    def post(self, body: bytes) -> str:
        """The answer's status code, its body read; OSError or
        http.client.HTTPException when the connection fails."""
        if self.sock is None:
            self.sock = socket.create_connection(self.address, timeout=self.timeout)
            self.buffer = b""
        head = self.head.replace(b"{length}", str(len(body)).encode(), 1)
        self.sock.sendall(head + body)
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            self._receive()
        header, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
        status_line, *fields = header.split(b"\r\n")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise http.client.BadStatusLine(status_line.decode("latin-1"))
        values = {}
        for line in fields:
            name, _, value = line.partition(b":")
            values[name.strip().lower()] = value.strip().lower()
        if b"content-length" in values:
            self._skip(int(values[b"content-length"]))
        elif values.get(b"transfer-encoding") == b"chunked":
            self._skip_chunks()
        else:  # the body ends with the connection
            with contextlib.suppress(http.client.IncompleteRead):
                while True:
                    self._receive()
            self.close()
        if values.get(b"connection") == b"close" or parts[0] == b"HTTP/1.0":
            self.close()
        return parts[1].decode()

    def _receive(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise http.client.IncompleteRead(self.buffer)
        self.buffer += chunk

    def _skip(self, length: int) -> None:
        while len(self.buffer) < length:
            self._receive()
        self.buffer = self.buffer[length:]

    def _skip_chunks(self) -> None:
        while True:
            while (end := self.buffer.find(b"\r\n")) < 0:
                self._receive()
            size = int(self.buffer[:end].split(b";")[0], 16)
            self.buffer = self.buffer[end + 2 :]
            self._skip(size + 2)  # the chunk and its CRLF
            if size == 0:
                return

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def client_loop(
    port: int, token: str, bodies: Bodies, stop_at: float, load: Load, timeout: float
) -> None:
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    uploader = Uploader(port, headers, timeout)
    mine = []
    while time.perf_counter() < stop_at:
        body = bodies.next()
        started = time.perf_counter()
        try:
            status = uploader.post(body)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            status = f"conn:{type(exc).__name__}"
            uploader.close()  # reconnects on the next request
        mine.append(Sample(started, time.perf_counter(), status))
    uploader.close()
    with load.lock:
        load.samples.extend(mine)


# --- processes and /proc ---------------------------------------------------------------


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            # pid (comm) state ppid ...; comm may hold spaces, so split after ")".
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return sorted(found)


def cpu_seconds(pid: int) -> float:
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return 0.0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])
    return (total - idle) / TICKS, total / TICKS


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


# --- database ---------------------------------------------------------------------------


def database_url(admin_url: str, name: str) -> str:
    return admin_url.rsplit("/", 1)[0] + "/" + name


def recreate_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def backend_pids(admin_url: str, name: str) -> list[int]:
    """The PostgreSQL server processes serving connections to the benchmark database."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        ).fetchall()
    return [row[0] for row in rows]


def connect(url: str):
    if url.startswith("sqlite:///"):
        return contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///")))
    return psycopg.connect(url)


def count_rows(url: str, tables: tuple[str, ...]) -> dict[str, int]:
    with connect(url) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
            for table in tables
        }


def stored_counts(url: str) -> dict[str, int]:
    counts = count_rows(url, ("results_submission", "results_run", "results_measurement"))
    return {table.removeprefix("results_"): n for table, n in counts.items()}


def dimension_counts(url: str) -> dict[str, int]:
    tables = ("hardware", "storage", "operatingsystem", "databaseserver", "client")
    counts = count_rows(url, tuple(f"results_{t}" for t in tables))
    return {table.removeprefix("results_"): n for table, n in counts.items()}


def marked_runs(url: str) -> int:
    with connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM baselines_dirtyrun").fetchone()[0])


def drain_marks(url: str, limit: float) -> str:
    """Wait until no run is marked for a baseline refresh, or ``limit`` seconds."""
    started = time.perf_counter()
    while (left := marked_runs(url)) and time.perf_counter() - started < limit:
        time.sleep(0.5)
    waited = time.perf_counter() - started
    if left:
        return f"{left} runs still marked after waiting {waited:.0f} s"
    return f"every mark cleared {waited:.1f} s after the window"


def compose_worker_concurrency() -> int:
    """The worker's --concurrency in docker-compose.yml, so the benchmark runs it as deployed."""
    match = re.search(r"--concurrency[= ](\d+)", COMPOSE_FILE.read_text("utf-8"))
    if match is None:
        raise SystemExit(f"no --concurrency for the worker in {COMPOSE_FILE}: pass --concurrency")
    return int(match.group(1))


def deployed_throttles() -> dict[str, str]:
    """The throttle rates settings.py gives when the environment names none."""
    source = (ROOT / "benchhub" / "settings.py").read_text("utf-8")
    rates = {}
    for variable in THROTTLE_VARIABLES:
        match = re.search(rf'envrate\("{variable}", "([^"]+)"\)', source)
        if match is None:
            raise SystemExit(f"settings.py no longer reads {variable} with a default")
        rates[variable] = match.group(1)
    return rates


def baseline_state(url: str) -> str:
    """How far the baselines got: keys, runs counted, runs still marked, and
    the baselines' n summed (every approved measured value, once caught up)."""
    with connect(url) as conn:
        keys, runs = conn.execute(
            "SELECT count(DISTINCT fingerprint), count(*) FROM results_run"
        ).fetchone()
        counted = conn.execute("SELECT count(*) FROM baselines_countedrun").fetchone()[0]
        dirty = conn.execute("SELECT count(*) FROM baselines_dirtyrun").fetchone()[0]
        n = conn.execute("SELECT coalesce(sum(n), 0) FROM baselines_baseline").fetchone()[0]
    return (
        f"{keys} key(s) over {runs} runs; {counted} runs counted in the baselines, "
        f"{dirty} still marked; baselines hold {n} values"
    )


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


# --- gunicorn -------------------------------------------------------------------------


def gunicorn_settings(args: argparse.Namespace) -> dict[str, object]:
    """workers, worker_class and threads as gunicorn.conf.py gives them (production's,
    docker-compose.yml; its GUNICORN_* variables are this process's, passed on to
    gunicorn), each overridden by the option given."""
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    return {
        "workers": args.workers if args.workers is not None else config["workers"],
        "worker_class": args.worker_class or config["worker_class"],
        "threads": args.threads if args.threads is not None else config["threads"],
    }


def start_gunicorn(
    args: argparse.Namespace, env: dict[str, str], port: int, settings: dict[str, object]
) -> subprocess.Popen:
    """gunicorn as docker-compose.yml runs it (``--config gunicorn.conf.py``), bound to
    the loopback port; the command line overrides the configuration file."""
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        str(ROOT / "gunicorn.conf.py"),
        "benchhub.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(settings["workers"]),
        "--worker-class",
        str(settings["worker_class"]),
        "--log-level",
        "warning",
    ]
    if settings["worker_class"] == "gthread":
        command += ["--threads", str(settings["threads"])]
    return subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)


def start_runserver(env: dict[str, str], port: int) -> subprocess.Popen:
    """`manage.py runserver` as `make run` starts it (threaded, one process)."""
    command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    return subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL
    )


def wait_ready(server: subprocess.Popen, port: int, workers: int, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"gunicorn exited with status {server.returncode}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/benchmarks/")
            if conn.getresponse().status == 200 and (
                not workers or len(children_of(server.pid)) >= workers
            ):
                return
        time.sleep(0.2)
    sys.exit("gunicorn did not answer in time")


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # graceful: workers finish their request
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def start_celery(env: dict[str, str], concurrency: int) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "benchhub",
        "worker",
        "--concurrency",
        str(concurrency),
        "--pool",
        "prefork",
        "--loglevel",
        "warning",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    return subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)


def queue_length(redis_url: str) -> int:
    return int(redis.Redis.from_url(redis_url).llen(CELERY_QUEUE))


def drop_queue(redis_url: str) -> None:
    """Remove the messages this run left in its Redis database (the default queue and the
    bindings kombu records for it)."""
    redis.Redis.from_url(redis_url).delete(
        CELERY_QUEUE,
        f"_kombu.binding.{CELERY_QUEUE}",
        f"_kombu.binding_permanent.{CELERY_QUEUE}",
        "_kombu.binding_deadlines",
    )


# --- report ---------------------------------------------------------------------------


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def run(args: argparse.Namespace) -> int:
    sqlite_path = Path(f"/tmp/{args.db_name}.sqlite3")  # noqa: S108 -- a scratch file
    if args.database == "sqlite":
        url = f"sqlite:///{sqlite_path}"
    else:
        url = database_url(args.admin_url, args.db_name)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "false",
        "SECRET_KEY": "ingest-benchmark-" + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "benchhub.settings",
        # WhiteNoise warns once per worker that collectstatic has not run: not our concern.
        "PYTHONWARNINGS": "ignore:No directory at",
    }
    if args.throttles == "deployed":
        throttles = deployed_throttles()
        for variable in THROTTLE_VARIABLES:
            env.pop(variable, None)
    else:
        # One token sends everything: the throttles still count every request
        # (their Redis round trips are in the figures), at a rate never reached.
        throttles = {v: os.environ.get(v, UNREACHED_RATE) for v in THROTTLE_VARIABLES}
        env.update(throttles)
    concurrency = args.concurrency or compose_worker_concurrency()
    if args.tasks == "eager":
        env.pop("REDIS_URL", None)  # the embedded default: tasks run inside the upload
    else:
        env["REDIS_URL"] = args.redis_url
        drop_queue(args.redis_url)
    load1 = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} CPUs, {cpu_model()}; load average before: {load1:.2f}")
    print(f"database: {url} (dropped and created)")
    if args.database == "sqlite":
        sqlite_path.unlink(missing_ok=True)
    else:
        recreate_database(args.admin_url, args.db_name)
    server = celery = None
    try:
        manage(env, "migrate", "--noinput")
        users = args.clients if args.throttles == "deployed" else 1
        tokens = [
            manage(env, "create_api_token", f"ingest-bench-{i}", "--create-user").split()[-1]
            for i in range(users)
        ]
        port = free_port()
        if args.tasks == "worker":
            celery = start_celery(env, concurrency)
        if args.server == "runserver":
            server = start_runserver(env, port)
            wait_ready(server, port, 0)
            workers = [server.pid]
            print(f"runserver: 127.0.0.1:{port}, one threaded process (pid {server.pid})")
        else:
            settings = gunicorn_settings(args)
            server = start_gunicorn(args, env, port, settings)
            wait_ready(server, port, int(settings["workers"]))
            workers = children_of(server.pid)
            threads = (
                f" x {settings['threads']} threads" if settings["worker_class"] == "gthread" else ""
            )
            print(
                f"gunicorn: 127.0.0.1:{port}, gunicorn.conf.py, {settings['workers']} "
                f"{settings['worker_class']} workers{threads} "
                f"(pids {', '.join(map(str, workers))})"
            )
        worker_text = f" (--concurrency {concurrency})" if args.tasks == "worker" else ""
        print(f"tasks: {TASK_MODES[args.tasks]}{worker_text}")
        print(
            f"throttles: per token {throttles['BENCHHUB_THROTTLE_TOKEN']}, per user "
            f"{throttles['BENCHHUB_THROTTLE_USER']} ({args.throttles}); {users} user(s) uploading"
        )

        rng = random.Random(args.seed)
        bodies = Bodies(document_templates(64, rng), args.new_rate, args.seed)
        print(
            f"load: {args.clients} client threads, {args.warmup:g} s warm-up + "
            f"{args.duration:g} s measured, {len(bodies.next())} bytes per upload, "
            f"{args.new_rate:.0%} with a new environment"
        )
        load = Load()
        t0 = time.perf_counter()
        window_start = t0 + args.warmup
        window_end = window_start + args.duration
        clients = [
            threading.Thread(
                target=client_loop,
                args=(port, tokens[i % users], bodies, window_end, load, args.timeout),
                daemon=True,
            )
            for i in range(args.clients)
        ]
        for t in clients:
            t.start()
        time.sleep(max(0.0, window_start - time.perf_counter()))
        # Connections persist (CONN_MAX_AGE), so the backends of the warm-up are those of
        # the window.
        backends = (
            backend_pids(args.admin_url, args.db_name) if args.database == "postgresql" else []
        )
        # The pool's process is forked once the worker is up, which may be after
        # gunicorn's start: looked for here, or its CPU counted as "everything else".
        celery_pids = [celery.pid, *children_of(celery.pid)] if celery else []
        cpu_at_start = (
            own_cpu_seconds(),
            sum(cpu_seconds(p) for p in workers),
            machine_busy_seconds(),
            sum(cpu_seconds(p) for p in celery_pids),
            sum(cpu_seconds(p) for p in backends),
        )
        time.sleep(max(0.0, window_end - time.perf_counter()))
        cpu_at_end = (
            own_cpu_seconds(),
            sum(cpu_seconds(p) for p in workers),
            machine_busy_seconds(),
            sum(cpu_seconds(p) for p in celery_pids),
            sum(cpu_seconds(p) for p in backends),
        )
        load_after = os.getloadavg()[0]
        for t in clients:
            t.join(timeout=args.timeout + 5)
        rss = {p: rss_mb(p) for p in workers}
        queued = queue_length(args.redis_url) if args.tasks != "eager" else 0
        marks_at_end = drained = None
        if args.tasks != "redis":
            # Whoever refreshes baselines (the worker, or the server's in-process
            # rounds) keeps running while the backlog drains.
            marks_at_end = marked_runs(url)
            drained = drain_marks(url, args.drain_timeout)
    finally:
        if server is not None:
            stop_process(server)
        if celery is not None:
            stop_process(celery)
        if args.tasks != "eager":
            drop_queue(args.redis_url)
    try:
        counts = stored_counts(url)
        dimensions = dimension_counts(url)
        baselines = baseline_state(url)
    finally:
        if args.keep_db:
            print(f"database kept: {url}")
        elif args.database == "sqlite":
            sqlite_path.unlink(missing_ok=True)
        else:
            drop_database(args.admin_url, args.db_name)

    window = [s for s in load.samples if s.started >= window_start and s.ended <= window_end]
    created = [s for s in window if s.status == "201"]
    latencies = sorted((s.ended - s.started) * 1000 for s in window)
    rate = len(created) / args.duration
    p50, p95, p99 = (percentile(latencies, q) for q in (50, 95, 99))
    statuses = Counter(s.status for s in load.samples)
    errors = {k: v for k, v in statuses.items() if k != "201"}
    client_cpu = (cpu_at_end[0] - cpu_at_start[0]) / args.duration
    worker_cpu = (cpu_at_end[1] - cpu_at_start[1]) / args.duration
    celery_cpu = (cpu_at_end[3] - cpu_at_start[3]) / args.duration
    backend_cpu = (cpu_at_end[4] - cpu_at_start[4]) / args.duration
    busy = (cpu_at_end[2][0] - cpu_at_start[2][0]) / args.duration
    ncpu = os.cpu_count() or 1

    print()
    print(
        f"uploads/s      {rate:8.1f}   ({len(created)} created in the {args.duration:g} s window)"
    )
    print(f"latency ms     p50 {p50:.1f}   p95 {p95:.1f}   p99 {p99:.1f}   max {latencies[-1]:.1f}")
    print(f"errors         {dict(sorted(errors.items())) or 'none'} (whole run, warm-up included)")
    celery_text = f"celery worker {celery_cpu:.2f}   " if celery_pids else ""
    print(
        f"CPU (cores)    client {client_cpu:.2f}   gunicorn workers {worker_cpu:.2f}   "
        f"PostgreSQL backends {backend_cpu:.2f}   {celery_text}"
        f"whole machine {busy:.2f} of {ncpu} (everything else: "
        f"{busy - client_cpu - worker_cpu - celery_cpu - backend_cpu:.2f}; "
        f"load average at the end {load_after:.2f})"
    )
    if created:
        per = 1000 / rate
        print(
            f"CPU ms/upload  gunicorn {worker_cpu * per:.1f}   PostgreSQL backends "
            f"{backend_cpu * per:.1f}   client {client_cpu * per:.1f}"
        )
    print(
        "worker RSS MB  "
        + "   ".join(f"{pid}: {mb:.0f}" for pid, mb in rss.items())
        + "   (after the load)"
    )
    print(f"dimension rows {dimensions}")
    print(f"baselines      {baselines}")
    if marks_at_end is not None:
        print(f"marks          {marks_at_end} runs marked at the end of the window; {drained}")
    if args.server == "runserver":
        slow = sum(1 for ms in latencies if ms > 1000)
        print(f"over 1 s       {slow} of {len(latencies)} requests in the window")
    if args.tasks != "eager":
        print(f"task queue     {queued} messages waiting at the end (dropped)")

    total_created = statuses.get("201", 0)
    expected = {
        "submission": total_created,
        "run": total_created,
        "measurement": total_created * MEASUREMENTS_PER_UPLOAD,
    }
    correct = counts == expected
    print(
        f"stored         {counts}; 201 answers {total_created} -> "
        f"{'consistent' if correct else 'MISMATCH, expected ' + str(expected)}"
    )
    worst_rss = max(rss.values(), default=math.nan)
    met = rate >= TARGET_RATE and p99 < TARGET_P99_MS and worst_rss < TARGET_RSS_MB
    print(
        f"target         >= {TARGET_RATE:g}/s, p99 < {TARGET_P99_MS:g} ms, "
        f"RSS < {TARGET_RSS_MB:g} MB: {'met' if met else 'MISSED'}"
    )
    if args.server == "runserver":
        # The embedded default's own target (issue 10): no request over 1 s.
        print(
            f"target         no request over 1 s (embedded default): "
            f"{'met' if latencies and max(latencies) <= 1000 else 'MISSED'}"
        )
    refused = {"429"} if args.throttles == "deployed" else set()
    bad = any(k.startswith(("5", "conn")) for k in errors)
    if args.strict:
        bad = bool(set(errors) - refused)
    return 0 if correct and not bad else 1


def build_parser(description: str = __doc__.split("\n\n")[0]) -> argparse.ArgumentParser:
    """The options of this benchmark; benchmarks/load.py runs it with other defaults."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--duration", type=float, default=30, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=5, help="seconds before measuring")
    parser.add_argument("--clients", type=int, default=16, help="concurrent client threads")
    # gunicorn runs with production's gunicorn.conf.py (as docker-compose.yml runs it);
    # these override its settings (docs/performance.md "Ingest").
    parser.add_argument(
        "--workers", type=int, help="gunicorn worker processes (default: gunicorn.conf.py's)"
    )
    parser.add_argument(
        "--worker-class", choices=["sync", "gthread"], help="default: gunicorn.conf.py's"
    )
    parser.add_argument(
        "--threads", type=int, help="threads per gthread worker (default: gunicorn.conf.py's)"
    )
    parser.add_argument(
        "--new-rate", type=float, default=0.1, help="share of uploads with a new environment"
    )
    parser.add_argument("--timeout", type=float, default=30, help="client timeout, seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("INGEST_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="PostgreSQL URL allowed to create databases",
    )
    parser.add_argument("--db-name", default="benchhub_ingest_bench")
    parser.add_argument(
        "--tasks",
        choices=sorted(TASK_MODES),
        default="redis",
        help="where the upload's Celery task (baselines refresh) goes",
    )
    parser.add_argument(
        "--redis-url",
        default="redis://127.0.0.1:6379/13",
        help="Redis database for the task queue; its 'celery' list is deleted before and after",
    )
    parser.add_argument(
        "--server",
        choices=["gunicorn", "runserver"],
        default="gunicorn",
        help="runserver: the embedded default's `make run` (one threaded process)",
    )
    parser.add_argument(
        "--database",
        choices=["postgresql", "sqlite"],
        default="postgresql",
        help="sqlite: a scratch file /tmp/<db-name>.sqlite3 (the embedded default)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        help="Celery worker processes (default: docker-compose.yml's worker --concurrency)",
    )
    parser.add_argument(
        "--throttles",
        choices=["raised", "deployed"],
        default="raised",
        help="raised: counted at a rate never reached; deployed: settings.py's defaults, "
        "one user per client thread",
    )
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=120,
        help="seconds to wait after the window for the baseline backlog to drain",
    )
    parser.add_argument("--keep-db", action="store_true", help="do not drop the database")
    parser.add_argument(
        "--strict", action="store_true", help="any answer but 201 fails the run (not only 5xx)"
    )
    return parser


def main() -> int:
    return run(build_parser().parse_args())


if __name__ == "__main__":
    sys.exit(main())
