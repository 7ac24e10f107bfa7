"""`benchhub-agent run --like RUN_URL` against the live Django server.

What every seed article asks of its readers: repeat a published run on
your machine. The published run here was itself measured by the agent on
the real PostgreSQL; the repeat is too, and it is uploaded, then compared
with that run and with the community baseline the server computed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from benchhub.accounts.services import api_token_create
from benchhub.baselines.services import baselines_refresh
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.agent.databases import measured_database
from tests.agent.test_outbox_e2e import agent


@pytest.fixture
def bench_dsn(django_db_setup) -> Iterator[str]:
    with measured_database("like_e2e") as dsn:
        yield dsn


@pytest.mark.django_db(transaction=True)
def test_run_like_repeats_a_published_run_and_ranks_it(
    live_server, bob, alice, bench_dsn, tmp_path
):
    outbox = tmp_path / "outbox"
    measured = agent(
        "run", "select-update", "--dsn", bench_dsn, "--clients", "1,2",
        "--transactions", "100", "--repeat", "1", "--dry-run",
        outbox=outbox,
    )  # fmt: skip
    assert measured.returncode == 0, measured.stderr
    published = submission_create(
        submitter=bob, document=json.loads(measured.stdout), status=Submission.Status.APPROVED
    ).submission
    run = published.runs.get()
    baselines_refresh()
    _, token = api_token_create(user=alice, name="agent")

    repeated = agent(
        "run", "--like", f"{live_server.url}/api/v1/runs/{run.pk}/",
        "--dsn", bench_dsn, "--token", token, "--repeat", "1", "--upload",
        outbox=outbox,
    )  # fmt: skip

    assert repeated.returncode == 0, repeated.stderr + repeated.stdout
    mine = Submission.objects.get(submitter=alice)
    (my_run,) = Run.objects.filter(submission=mine)
    # The same benchmark with the same parameters: the same comparability key.
    assert my_run.parameters == run.parameters
    assert my_run.fingerprint == run.fingerprint
    assert "compared with" in repeated.stdout
    table = repeated.stdout.split("compared with", 1)[1]
    throughput_rows = [line for line in table.splitlines() if line.startswith("throughput")]
    assert len(throughput_rows) == 2  # clients=1 and clients=2
    for line in throughput_rows:
        assert "(1)" in line  # the baseline median, over the one approved run
        assert "% of 1" in line  # your percentile among them
        # One run of one repetition on each side: no verdict can be drawn from that.
        assert "insufficient data" in line
