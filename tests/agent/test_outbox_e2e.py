"""The agent against the real server: a run kept while the server was down is stored once.

The agent runs as its own process (the installed ``benchhub-agent`` module),
first with a server address where nothing listens, then pushing to the live
Django server; resending afterwards must not store anything twice.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Submission

FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "agents" / "tests" / "importers" / "fixtures" / "pgbench15-tpcb.txt"
)  # fmt: skip


def agent(*args: str, outbox: Path) -> subprocess.CompletedProcess:
    environment = {
        **os.environ,
        "BENCHHUB_OUTBOX": str(outbox),
        "BENCHHUB_CONFIG": str(outbox.parent / "no-config.toml"),
        "BENCHHUB_BACKOFF": "0.05,0.05",
    }
    return subprocess.run(
        [sys.executable, "-m", "benchhub_agent.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def nobody_listening() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.django_db(transaction=True)
def test_a_run_kept_while_the_server_was_down_is_stored_exactly_once(live_server, alice, tmp_path):
    _, token = api_token_create(user=alice, name="agent")
    outbox = tmp_path / "outbox"
    upload = ["import", "pgbench", str(FIXTURE), "--upload", "--token", token]

    down = agent(*upload, "--server", nobody_listening(), outbox=outbox)
    assert down.returncode == 3, down.stderr
    (kept,) = outbox.glob("*.json")
    document_uuid = json.loads(kept.read_text())["uuid"]

    pushed = agent("push", "--server", live_server.url, "--token", token, outbox=outbox)
    assert pushed.returncode == 0, pushed.stderr + pushed.stdout
    assert "stored" in pushed.stdout
    # A person reads the submission's page, not its JSON address.
    assert f"{live_server.url}/submissions/{document_uuid}/" in pushed.stdout
    assert list(outbox.glob("*.json")) == []
    assert Submission.objects.filter(uuid=document_uuid).count() == 1

    again = agent(*upload, "--server", live_server.url, outbox=outbox)
    assert again.returncode == 0, again.stderr
    assert f"already stored: {live_server.url}/submissions/{document_uuid}/" in again.stderr
    assert Submission.objects.filter(uuid=document_uuid).count() == 1
    assert Submission.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_refused_upload_shows_the_servers_reason_and_stays_in_the_outbox(
    live_server, alice, tmp_path
):
    outbox = tmp_path / "outbox"
    refused = agent(
        "import", "pgbench", str(FIXTURE), "--upload",
        "--server", live_server.url, "--token", "not-a-token", outbox=outbox,
    )  # fmt: skip
    assert refused.returncode == 3
    assert "refused the token (HTTP 401)" in refused.stderr
    assert len(list(outbox.glob("*.json"))) == 1  # kept for a push with the right token
    assert Submission.objects.count() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("wrong_path", ["/benchhub", "/api"])
def test_a_wrong_server_path_keeps_the_document_for_a_plain_push(
    live_server, alice, tmp_path, wrong_path
):
    _, token = api_token_create(user=alice, name="agent")
    outbox = tmp_path / "outbox"
    wrong = live_server.url + wrong_path

    sent = agent(
        "import", "pgbench", str(FIXTURE), "--upload", "--server", wrong, "--token", token,
        outbox=outbox,
    )  # fmt: skip

    assert sent.returncode == 3, sent.stderr
    said = [line for line in sent.stderr.splitlines() if "answered HTTP 404" in line]
    assert said == [
        line for line in sent.stderr.splitlines() if line.startswith(f"{wrong}/api/v1/")
    ]
    assert len(said) == 1 and "<" not in sent.stderr
    assert len(sent.stderr.splitlines()) <= 4, sent.stderr
    assert list(outbox.glob("*.rejected.json")) == []
    pushed = agent("push", "--server", live_server.url, "--token", token, outbox=outbox)
    assert pushed.returncode == 0, pushed.stderr + pushed.stdout
    assert Submission.objects.count() == 1
    assert list(outbox.glob("*.json")) == []
