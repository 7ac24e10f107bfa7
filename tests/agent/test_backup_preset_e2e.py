"""A user's backups on the seed 001 chart.

The agent times one backup per protocol in one run, so the protocol is each
measurement's point parameter and the run's environment says ``unknown``;
seed 001 has one protocol a run, and says it in both places. The preset has
to put both on the same axis, or the user's figures sit apart at "unknown".
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from benchhub.comparisons.presets import PRESETS
from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.agent.databases import measured_database
from tests.agent.test_outbox_e2e import agent


@pytest.fixture
def bench_dsn(django_db_setup) -> Iterator[str]:
    with measured_database("backup_preset") as dsn:
        yield dsn


@pytest.mark.django_db(transaction=True)
def test_an_agent_backup_shares_the_seed_001_protocol_axis(client, bob, bench_dsn, tmp_path):
    articles_load()
    measured = agent(
        "run", "backup", "--dsn", bench_dsn, "--rows", "200", "--repeat", "1", "--dry-run",
        outbox=tmp_path / "outbox",
    )  # fmt: skip
    assert measured.returncode == 0, measured.stderr
    submission_create(
        submitter=bob, document=json.loads(measured.stdout), status=Submission.Status.APPROVED
    )
    preset = next(p for p in PRESETS if p.title.startswith("gbak backup time by protocol"))

    body = client.get(f"/api/v1/comparisons/?{preset.query}").json()

    cells = {
        (point["x"], series["label"]): point["n"]
        for series in body["series"]
        for point in series["points"]
    }
    # The article's three figures, where its table puts them...
    assert cells["local", "same_core"] == 1
    assert cells["local", "other_core"] == 1
    # ...and the user's, on the same protocols: over TCP with the article's.
    assert cells["tcp_loopback", "unpinned"] == 2
    assert cells["unix_socket", "unpinned"] == 1
    assert "unknown" not in {x for x, _ in cells}
