"""What benchmarks/ingest.py measures and how it reads it: the scratch database, gunicorn
(or runserver) and the Celery worker it starts, and their processes' CPU and memory."""

from __future__ import annotations

import argparse
import contextlib
import http.client
import math
import os
import re
import resource
import runpy
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import redis
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")
CELERY_QUEUE = "celery"  # the default queue's Redis list
COMPOSE_FILE = ROOT / "docker-compose.yml"
THROTTLE_VARIABLES = ("BENCHHUB_THROTTLE_TOKEN", "BENCHHUB_THROTTLE_USER")


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
