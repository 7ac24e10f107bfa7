"""`benchhub-agent study` against the live Django server: the runs of every cell
uploaded once, the study that links them POSTed and served by /api/v1/studies/, and
`study --like` repeating it on another user's filesystems as a study of its own.

The filesystems are real ones on loop devices (--format-scratch), so these tests
need root and losetup, and skip saying so without them."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Run, Submission
from benchhub.studies.models import Study
from tests.agent.databases import measured_database

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("losetup") is None,
    reason="loop-mounted filesystems need root and losetup (util-linux)",
)


@pytest.fixture
def bench_dsn(django_db_setup) -> Iterator[str]:
    with measured_database("study_e2e") as dsn:
        yield dsn


@pytest.fixture
def folder() -> Iterator[Path]:
    """Where the image files go: a folder PostgreSQL's user can pass through."""
    path = Path(tempfile.mkdtemp(prefix="benchhub-study-e2e-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


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
        timeout=600,
    )


def get(url: str, token: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})  # noqa: S310
    with contextlib.closing(urllib.request.urlopen(request, timeout=30)) as answer:  # noqa: S310
        return json.load(answer)


@pytest.mark.django_db(transaction=True)
def test_a_study_uploads_its_runs_once_and_appears_in_the_api_then_is_repeated(
    live_server, alice, bob, bench_dsn, folder
):
    _, alice_token = api_token_create(user=alice, name="agent")
    outbox = folder / "alice-outbox"
    done = agent(
        "study", "select-update", "--dsn", bench_dsn, "--clients", "1,3",
        "--transactions", "90", "--repeat", "2", "--vary", "filesystem",
        "--format-scratch", str(folder / "alice"), "--fs", "xfs,ext4", "--scratch-size", "330",
        "--yes", "--upload", "--server", live_server.url, "--token", alice_token,
        "--title", "xfs or ext4 for select-update here", "--reference", "ext4",
        outbox=outbox,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    url = re.search(r"^study: (\S+)$", done.stdout, re.MULTILINE).group(1)
    uuid = re.search(r"/studies/([0-9a-f-]{36})/", url).group(1)
    # Every run once, none left behind.
    assert Submission.objects.filter(submitter=alice).count() == 4
    assert list(outbox.glob("*.json")) == []
    listed = get(f"{live_server.url}/api/v1/studies/", alice_token)["results"]
    assert [s["uuid"] for s in listed] == [uuid]
    assert listed[0]["title"] == "xfs or ext4 for select-update here"
    detail = get(f"{live_server.url}/api/v1/studies/{uuid}/", alice_token)
    assert detail["varied"] == ["filesystem"] and detail["reference"] == "ext4"
    assert sorted((c["x"], c["n"]) for c in detail["cells"]) == [("ext4", 2), ("xfs", 2)]
    assert len(detail["runs"]) == 4
    assert "ABAB" in detail["write_up"]  # xfs first, as asked
    assert not (folder / "alice").exists()

    # Public once approved: bob repeats it on filesystems of his own making.
    Submission.objects.filter(submitter=alice).update(status=Submission.Status.APPROVED)
    _, bob_token = api_token_create(user=bob, name="agent")
    again = agent(
        "study", "--like", url, "--dsn", bench_dsn, "--format-scratch", str(folder / "bob"),
        "--scratch-size", "330", "--repeat", "1", "--yes", "--upload", "--token", bob_token,
        outbox=folder / "bob-outbox",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    repeated = Study.objects.get(owner=bob)
    assert str(repeated.repeats.uuid) == uuid
    assert repeated.reference == "ext4" and repeated.varied == ["filesystem"]
    bob_runs = Run.objects.filter(submission__submitter=bob)
    assert sorted(r.storage.filesystem for r in bob_runs) == ["ext4", "xfs"]
    alice_parameters = Run.objects.filter(submission__submitter=alice).first().parameters
    assert {json.dumps(r.parameters, sort_keys=True) for r in bob_runs} == {
        json.dumps(alice_parameters, sort_keys=True)
    }
    assert not (folder / "bob").exists()
