"""Running the real ``benchhub-agent`` (this checkout's agents/) against a server, for the
deployment and fault tests: its own process, its own outbox, no user config."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PGBENCH_OUTPUT = ROOT / "agents" / "tests" / "importers" / "fixtures" / "pgbench15-tpcb.txt"


def _agent_environment(outbox: Path) -> dict[str, str]:
    return {
        **os.environ,
        "BENCHHUB_OUTBOX": str(outbox),
        "BENCHHUB_CONFIG": str(outbox.parent / "no-config.toml"),
        "BENCHHUB_BACKOFF": "0.05,0.05",
    }


def agent(*args: str, outbox: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchhub_agent.cli", *args],
        capture_output=True,
        text=True,
        env=_agent_environment(outbox),
        timeout=timeout,
        check=False,
    )


def agent_started(*args: str, outbox: Path) -> subprocess.Popen:
    """The agent running in the background; ``communicate()`` waits for it."""
    return subprocess.Popen(
        [sys.executable, "-m", "benchhub_agent.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_agent_environment(outbox),
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pgbench_output(directory: Path, tps: float) -> Path:
    """The fixture's pgbench output with another tps: the agent names a document after its
    content, so each value is a new upload (the same output twice is the same document)."""
    lines = PGBENCH_OUTPUT.read_text().splitlines(keepends=True)
    text = "".join(
        f"tps = {tps:.6f} (without initial connection time)\n" if line.startswith("tps =") else line
        for line in lines
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"pgbench-{tps:.6f}.txt"
    path.write_text(text)
    return path


def kept_uuids(outbox: Path) -> set[str]:
    """The uuids of the documents waiting in an outbox."""
    return {json.loads(path.read_text())["uuid"] for path in outbox.glob("*.json")}


def import_kept(outbox: Path, count: int) -> set[str]:
    """``count`` pgbench imports kept in the outbox (sent to a port where nothing
    listens), so that a later ``push`` sends them; returns their uuids."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    for _ in range(count):
        kept = agent(
            "import", "pgbench", str(PGBENCH_OUTPUT), "--upload",
            "--server", nowhere, "--token", "unused", outbox=outbox,
        )  # fmt: skip
        assert kept.returncode == 3, kept.stderr
    uuids = kept_uuids(outbox)
    assert len(uuids) == count
    return uuids
