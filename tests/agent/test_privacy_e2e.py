"""A Firebird run uploaded to the real server: its file path never arrives, the list of
what was removed does."""

from __future__ import annotations

import json
import os
import re

import pytest

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Submission
from tests.agent.test_outbox_e2e import agent

FIREBIRD_DIR = "/var/lib/firebird/3.0/data"


@pytest.mark.django_db(transaction=True)
def test_a_firebird_runs_file_path_is_reduced_to_its_filesystem_on_the_server(
    live_server, alice, tmp_path
):
    _, token = api_token_create(user=alice, name="agent")
    prefix = os.environ.get("BENCHHUB_TEST_DB_PREFIX", "").lower()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = f"{FIREBIRD_DIR}/{prefix}bh_{worker}_privacy_e2e.fdb"
    done = agent(
        "run", "backup", "--dsn", f"firebird://SYSDBA@localhost:3050/{path}",
        "--rows", "2000", "--repeat", "1", "--protocols", "tcp_loopback",
        "--upload", "--server", live_server.url, "--token", token,
        outbox=tmp_path / "outbox",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "redacted database_path at $.source.command" in done.stderr
    (stored,) = Submission.objects.all()
    sent = json.dumps(stored.document)
    assert FIREBIRD_DIR not in sent and "privacy_e2e" not in sent
    # The filesystem the data directory is on (ext4 here), not where on it.
    placeholder = re.search(r"firebird://USER@HOST:3050/FILE_ON_[A-Z0-9_]+", sent).group(0)
    assert placeholder in stored.document["source"]["command"]
    assert stored.document["redacted"] == [
        {"kind": "database_path", "path": "$.source.command", "replacement": placeholder}
    ]
