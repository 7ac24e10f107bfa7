"""Incremental baselines: an approval, a rejection or a deletion changes its
key's histograms by its own values only, and the nightly rebuild from the
data gives the same numbers."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchhub.baselines import marking, refresh
from benchhub.baselines.marking import baselines_mark_all
from benchhub.baselines.models import Baseline, BaselineBucket, CountedRun, DirtyKey, DirtyRun
from benchhub.baselines.refresh import baselines_refresh
from benchhub.baselines.selectors import baseline_point
from benchhub.baselines.statistics import Summary, outlier_score
from benchhub.baselines.tasks import IN_PROCESS_RUNS
from benchhub.celery import app
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Measurement, Run, Submission
from benchhub.results.services import submission_create
from tests.baselines import baselines_callbacks
from tests.factories import small_document

Status = Submission.Status

# Skewed and repeated: a cluster, exact repeats, a far outlier, zero, a
# tiny value, values that share a 4-digit bucket without being equal.
VALUES = (
    1000.0, 1000.0, 1000.0, 1000.4, 999.96, 1000.2, 1234.5678, 1234.61, 5000.0,
    0.0, 0.001, 1500.0, 1500.0, 2.5e6, 1010.0, 990.0, 1000.0, 1003.0, 997.0, 1500.0,
)  # fmt: skip


def publish(user, value: float, status=Status.APPROVED, major: str = "15") -> Submission:
    document = small_document(database={"version_string": f"PostgreSQL {major}.1"})
    document["runs"][0]["measurements"][1]["value"] = value
    return submission_create(submitter=user, document=document, status=status).submission


def drain(**limits) -> None:
    while baselines_refresh(**limits)[1]:
        pass


def state() -> tuple[list, list, list]:
    baselines = sorted(
        Baseline.objects.values_list(
            "fingerprint", "metric_id", "point", "n", "median", "q1", "q3", "minimum", "maximum",
            "mad",
        )
    )  # fmt: skip
    buckets = sorted(
        BaselineBucket.objects.values_list(
            "baseline__fingerprint", "baseline__metric_id", "baseline__point", "value", "count"
        )
    )
    counted = sorted(CountedRun.objects.values_list("run_id", "fingerprint"))
    return baselines, buckets, counted


def expected_scores() -> dict[int, float | None]:
    """Every measured value's score against its baseline as stored now."""
    baselines = {
        (b.fingerprint, b.metric_id, b.point): Summary(
            b.n, b.median, b.q1, b.q3, b.minimum, b.maximum, b.mad
        )
        for b in Baseline.objects.all()
    }
    out = {}
    for m in Measurement.objects.select_related("run"):
        summary = baselines.get((m.run.fingerprint, m.metric_id, baseline_point(m.parameters)))
        out[m.pk] = outlier_score(m.value, summary) if summary else None
    return out


def test_incremental_updates_after_approvals_and_rejections_equal_the_full_recompute(bob, alice):
    """Uploads to two keys, some approved on arrival, others pending; then
    approvals, flags, hides, unhides and deletions in a seeded random order,
    refreshed in rounds of one or two runs at random moments. The histograms,
    baselines and counted runs equal what the nightly rebuild computes from
    the data, and every score it writes is the score against its baseline."""
    rng = random.Random(10)
    submissions = []
    for index, value in enumerate(VALUES * 2):
        status = Status.APPROVED if rng.random() < 0.5 else Status.PENDING
        submissions.append(publish(bob, value, status, major="15" if index % 3 else "16"))
        if rng.random() < 0.2:
            baselines_refresh(runs=rng.choice((1, 2)))
    actions = {
        Status.PENDING: ("approve", "reject", "flag"),
        Status.APPROVED: ("flag", "hide", "delete"),
        Status.HIDDEN: ("unhide",),
        Status.FLAGGED: ("approve",),
    }
    changed = 0
    for _ in range(60):
        submission = rng.choice(submissions)
        submission.refresh_from_db()
        choices = actions.get(submission.status)
        if not choices:
            continue
        action = rng.choice(choices)
        owner = action in ("hide", "unhide", "delete")
        submission_moderate(
            submission=submission,
            actor=bob if owner else None,
            action=action,
            reason="" if owner or action == "approve" else "test",
        )
        changed += 1
        if rng.random() < 0.3:
            baselines_refresh(runs=rng.choice((1, 2)))
    drain(runs=3)
    assert changed > 30
    assert not DirtyRun.objects.exists() and not DirtyKey.objects.exists()
    incremental = state()
    # The data really is skewed and repeated, and something was taken out again.
    assert any(count > 1 for *_, count in incremental[1])
    assert len(incremental[0]) == 4  # two keys, two points each
    approved = Submission.objects.filter(status=Status.APPROVED).count()
    assert 0 < approved < len(submissions)
    assert len(incremental[2]) == approved

    assert baselines_mark_all() == 2
    drain()

    assert state() == incremental
    assert sorted(Measurement.objects.values_list("id", "outlier_score")) == sorted(
        expected_scores().items()
    )


def test_an_approval_reads_its_own_runs_not_the_rest_of_its_key(bob):
    """A value changed behind the baselines' back (a direct UPDATE, which no
    path of BenchHub makes) stays out of the baseline after an approval,
    because the approval's update never reads the other runs; the rebuild,
    which reads everything, takes it in."""
    for value in (1000.0, 1100.0, 1200.0, 1300.0):
        publish(bob, value)
    pending = publish(bob, 1400.0, status=Status.PENDING)
    drain()
    Measurement.objects.filter(value=1000.0).update(value=9_000_000.0)

    submission_moderate(submission=pending, actor=None, action="approve")
    with CaptureQueriesContext(connection) as queries:
        baselines_refresh()

    baseline = Baseline.objects.get(metric__name="throughput", parameters={"clients": 20})
    assert (baseline.n, baseline.minimum, baseline.maximum) == (5, 1000.0, 1400.0)
    read_measurements = [q["sql"] for q in queries if 'FROM "results_measurement"' in q["sql"]]
    assert read_measurements and all(
        f"IN ({pending.runs.get().pk})" in sql for sql in read_measurements
    ), read_measurements

    baselines_mark_all()
    drain()
    baseline = Baseline.objects.get(metric__name="throughput", parameters={"clients": 20})
    assert (baseline.n, baseline.minimum, baseline.maximum) == (5, 1100.0, 9_000_000.0)


def test_a_rejection_of_an_approved_submission_takes_its_values_out(bob, alice):
    kept = [publish(bob, v) for v in (1000.0, 1000.0, 1200.0)]
    flagged = publish(alice, 7000.0)
    drain()
    assert Baseline.objects.get(parameters={"clients": 20}).maximum == 7000.0

    submission_moderate(submission=flagged, actor=None, action="flag", reason="too fast")
    drain()

    baseline = Baseline.objects.get(parameters={"clients": 20})
    assert (baseline.n, baseline.median, baseline.maximum) == (3, 1000.0, 1200.0)
    assert sorted(baseline.buckets.values_list("value", "count")) == [(1000.0, 2), (1200.0, 1)]
    for submission in kept:
        submission_moderate(submission=submission, actor=bob, action="delete")
    drain()
    assert not Baseline.objects.filter(parameters={"clients": 20}).exists()
    assert not BaselineBucket.objects.exists() and not CountedRun.objects.exists()


def test_a_round_applies_at_most_its_limit_of_dirty_runs(bob):
    for value in range(1000, 1007):
        publish(bob, float(value))

    assert baselines_refresh(runs=3) == (1, 1)  # the key is left for the next round

    assert DirtyRun.objects.count() == 4
    assert Baseline.objects.get(parameters={"clients": 20}).n == 3
    assert baselines_refresh(runs=3) == (1, 1)
    assert baselines_refresh(runs=3) == (1, 0)
    assert Baseline.objects.get(parameters={"clients": 20}).n == 7


@pytest.mark.django_db(transaction=True)
def test_a_run_deleted_outright_has_its_key_rebuilt(bob):
    """The admin (or a shell) deletes a counted submission's rows: its values
    cannot be subtracted any more, so its key is rebuilt from what is left."""
    for value in (1000.0, 1100.0, 1200.0):
        publish(bob, value)
    gone = publish(bob, 5000.0)
    drain()
    Submission.objects.filter(pk=gone.pk).delete()

    assert DirtyKey.objects.get().rebuild_at is not None
    assert baselines_refresh(rebuild=False) == (0, 0)  # not in a request
    drain()

    baseline = Baseline.objects.get(parameters={"clients": 20})
    assert (baseline.n, baseline.maximum) == (3, 1200.0)
    assert CountedRun.objects.count() == 3
    assert not Run.objects.filter(submission=gone.pk).exists()


def test_an_upload_to_a_key_whose_claim_expired_queues_a_refresh(
    bob, django_capture_on_commit_callbacks
):
    """No beat, no worker restart: a process died holding the key's claim,
    and the next upload to that key is what notices, once the claim expired."""
    publish(bob, 1000.0)
    refresh._claim(limit=10)
    with django_capture_on_commit_callbacks() as fresh_claim:
        publish(bob, 1100.0)
    DirtyKey.objects.update(claimed_at=timezone.now() - marking.CLAIM_EXPIRY * 2)
    with django_capture_on_commit_callbacks() as expired_claim:
        publish(bob, 1200.0)

    assert baselines_callbacks(fresh_claim) == []  # its worker is on it
    assert len(baselines_callbacks(expired_claim)) == 1
    assert baselines_refresh() == (1, 0)
    assert Baseline.objects.get(parameters={"clients": 20}).n == 3


def test_in_process_an_upload_runs_one_bounded_round_and_never_a_rebuild(
    bob, django_capture_on_commit_callbacks, settings
):
    """The embedded default (no broker: tasks run inside the request): each
    upload applies at most IN_PROCESS_RUNS dirty runs of one key after its
    commit, then returns; a key marked for a rebuild waits for a worker."""
    for value in range(30):
        publish(bob, 1000.0 + value)  # marked, nothing run (no commit here)
    rebuild_me = publish(bob, 1000.0, major="16").runs.get().fingerprint
    marking.mark_keys([rebuild_me], timezone.now(), rebuild=True)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            publish(bob, 2000.0)
    finally:
        app.conf.task_always_eager = False

    assert len(baselines_callbacks(callbacks)) == 1
    assert DirtyRun.objects.filter(fingerprint=rebuild_me).count() == 1
    left = DirtyRun.objects.exclude(fingerprint=rebuild_me).count()
    assert left == 31 - IN_PROCESS_RUNS
    assert Baseline.objects.get(parameters={"clients": 20}, n__gt=0).n == IN_PROCESS_RUNS
    assert not Baseline.objects.filter(fingerprint=rebuild_me).exists()
