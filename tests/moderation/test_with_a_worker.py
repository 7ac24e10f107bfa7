"""The community loop with a real Celery worker on the real Redis broker:
what a moderator decides reaches the public queries and the baselines."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.celery import app
from benchhub.results.models import Hardware, Submission
from tests.moderation.conftest import upload, web
from tests.workers import in_process_worker

pytestmark = pytest.mark.django_db(transaction=True)

XEON = {"cpu": "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "cores": 14}
XEON_OTHER_SPELLING = {"cpu": "Intel Xeon E5-2680v4", "cores": 14}


@pytest.fixture
def worker():
    app.control.purge()
    with in_process_worker():
        yield


def wait_for(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"after {seconds}s still waiting for {what}")
        time.sleep(0.2)


def baselines_settled() -> bool:
    return not DirtyKey.objects.exists()


def rank(api, submission: Submission, value: float):
    return api.get(
        "/api/v1/baselines/rank/",
        {
            "fingerprint": submission.runs.get().fingerprint,
            "metric": "throughput",
            "value": value,
            "param.clients": 20,
        },
    )


def public_values(api) -> list[float]:
    rows = api.get("/api/v1/measurements/", {"param.clients": 20}).json()["results"]
    return sorted(row["value"] for row in rows)


def test_the_tests_tasks_wait_in_a_queue_of_this_run_that_no_other_worker_takes(alice):
    """A worker of someone else's on this Redis database (Celery's default
    queue, "celery") took the uploads' refresh tasks, ran them against its own
    database, and the tests' worker waited for the baselines in vain."""
    queue = app.conf.task_default_queue
    assert queue != "celery" and queue.startswith("celery_tests_")
    app.control.purge()

    upload(alice, 1234.5)  # queues the refresh of its key when it commits

    with app.connection_for_write() as connection:
        waiting = connection.default_channel.client.llen(queue)
    app.control.purge()
    assert waiting == 1


def test_approving_recomputes_the_baseline_and_the_run_gets_a_rank(
    worker, alice, maud_api, anonymous_api
):
    submission = upload(alice, 1234.5)
    wait_for(baselines_settled, "the upload's refresh")
    assert rank(anonymous_api, submission, 1234.5).status_code == 404  # pending: no baseline

    answer = maud_api.post(
        f"/api/v1/submissions/{submission.uuid}/moderation/", {"action": "approve"}, format="json"
    )
    assert answer.status_code == 200
    wait_for(baselines_settled, "the approval's refresh")

    ranked = rank(anonymous_api, submission, 1234.5)
    assert ranked.status_code == 200, ranked.content
    # 1234.5 has five significant digits: the histogram counts it at 1234
    # (within 0.05 %, baselines/histogram.py)
    assert ranked.json()["n"] == 1 and ranked.json()["median"] == 1234.0
    assert public_values(anonymous_api) == [1234.5]


@pytest.mark.parametrize(
    ("actor", "action", "reason"),
    [
        ("maud", "reject", "clients=20 on a 2-core VM? re-check"),
        ("alice", "hide", ""),
        ("alice", "delete", ""),
    ],
)
def test_reject_hide_and_delete_take_it_out_of_public_queries_and_baselines(
    worker, alice, bob, maud, anonymous_api, actor, action, reason
):
    kept = [upload(bob, v, status=Submission.Status.APPROVED) for v in (1000.0, 1100.0)]
    target = upload(alice, 5000.0, status=Submission.Status.APPROVED)
    wait_for(baselines_settled, "the uploads' refresh")
    assert public_values(anonymous_api) == [1000.0, 1100.0, 5000.0]
    users = {"maud": maud, "alice": alice}
    from tests.conftest import _client_for

    answer = _client_for(users[actor]).post(
        f"/api/v1/submissions/{target.uuid}/moderation/",
        {"action": action, "reason": reason},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    wait_for(baselines_settled, "the refresh after the change")

    assert public_values(anonymous_api) == [1000.0, 1100.0]
    baseline = Baseline.objects.get(
        fingerprint=kept[0].runs.get().fingerprint, parameters={"clients": 20}
    )
    assert (baseline.n, sorted(baseline.buckets.values_list("value", "count"))) == (
        2,
        [(1000.0, 1), (1100.0, 1)],
    )
    comparison = anonymous_api.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"},
    ).json()
    (series,) = comparison["series"]
    assert {p["x"]: p["n"] for p in series["points"]}[20] == 2
    csv = b"".join(anonymous_api.get("/api/v1/measurements/export.csv").streaming_content).decode()
    assert "5000" not in csv and "1100" in csv
    assert anonymous_api.get(f"/api/v1/submissions/{target.uuid}/").status_code == 404


def by_cpu(api) -> dict:
    """Throughput by clients, one series per CPU model."""
    query = {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}
    return api.get("/api/v1/comparisons/", {**query, "series": "cpu_model"}).json()


def test_merging_two_cpu_spellings_makes_one_value_and_refreshes_baselines(
    worker, bob, maud, anonymous_api
):
    upload(bob, 1000.0, status=Submission.Status.APPROVED, hardware=XEON)
    upload(bob, 1200.0, status=Submission.Status.APPROVED, hardware=XEON_OTHER_SPELLING)
    wait_for(baselines_settled, "the uploads' refresh")
    before = by_cpu(anonymous_api)
    assert sorted(s["label"] for s in before["series"]) == ["Xeon E5-2680 v4", "Xeon E5-2680v4"]
    computed_at = Baseline.objects.get(parameters={"clients": 20}).computed_at

    page = web(maud).post(
        "/moderation/dimensions/",
        {
            "target": "hardware.cpu_model",
            "from_value": "Xeon E5-2680v4",
            "to_value": "Xeon E5-2680 v4",
        },
    )
    assert page.status_code == 302
    wait_for(
        lambda: set(Hardware.objects.values_list("cpu_model", flat=True)) == {"Xeon E5-2680 v4"},
        "the alias task",
    )
    wait_for(baselines_settled, "the refresh after the merge")
    # The answer from before the merge is served (BENCHHUB_COMPARISON_STALE_SECONDS)
    # until the worker has computed it again, which the renaming queued.
    wait_for(lambda: len(by_cpu(anonymous_api)["series"]) == 1, "the comparisons' refresh")

    after = by_cpu(anonymous_api)
    (series,) = after["series"]
    assert series["label"] == "Xeon E5-2680 v4"
    assert {p["x"]: p["n"] for p in series["points"]}[20] == 2
    filtered = anonymous_api.get("/api/v1/runs/", {"cpu_model": "E5-2680 v4"}).json()["results"]
    assert len(filtered) == 2
    # The CPU is not part of the comparability key: the baseline stays as it was.
    baseline = Baseline.objects.get(parameters={"clients": 20})
    assert (baseline.n, baseline.median, baseline.computed_at) == (2, 1100.0, computed_at)
    # the raw strings are kept: what the agent sent is still there
    assert set(Hardware.objects.values_list("cpu_raw", flat=True)) == {
        XEON["cpu"],
        XEON_OTHER_SPELLING["cpu"],
    }

    # a new upload of the other spelling takes the alias at once
    # (a machine not seen before: a new row, normalized with the rule)
    bigger = {**XEON_OTHER_SPELLING, "cores": 28}
    fresh = upload(bob, 1100.0, status=Submission.Status.APPROVED, hardware=bigger)
    assert fresh.runs.get().hardware.cpu_model == "Xeon E5-2680 v4"

    # removing the rule normalizes from the raw strings again
    from benchhub.moderation.models import AliasRule

    web(maud).post(f"/moderation/aliases/{AliasRule.objects.get().pk}/remove/")
    wait_for(
        lambda: (
            sorted(Hardware.objects.values_list("cpu_model", flat=True).distinct())
            == ["Xeon E5-2680 v4", "Xeon E5-2680v4"]
        ),
        "the task after removing the rule",
    )
