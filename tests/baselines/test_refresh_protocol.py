"""The refresh protocol under the conditions a community produces: a key
recomputed again and again, two refreshes at once, more dirty keys than one
batch, and a point spelled as a query string spells it."""

from __future__ import annotations

import threading
import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connection, connections

from benchhub.baselines import refresh as services
from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.baselines.services import baselines_mark_dirty, baselines_refresh
from benchhub.baselines.tasks import baselines_refresh_task
from benchhub.celery import app
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import small_document


def publish(user, throughput_at_20: float, status=Submission.Status.APPROVED, **environment):
    document = small_document(**environment)
    document["runs"][0]["measurements"][1]["value"] = throughput_at_20
    return submission_create(submitter=user, document=document, status=status).submission


def approve(submission: Submission) -> None:
    """What a moderator's approval does to the baselines: the status
    changes and the key is marked dirty again."""
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.APPROVED)
    baselines_mark_dirty(fingerprints=submission.runs.values_list("fingerprint", flat=True))


def test_a_key_recomputed_after_an_approval_replaces_its_baselines(bob):
    publish(bob, 1000.0)
    baselines_refresh()
    pending = publish(bob, 3000.0, status=Submission.Status.PENDING)
    baselines_refresh()  # the pending upload marked the key: same numbers again

    approve(pending)
    assert baselines_refresh() == (1, 0)

    baseline = Baseline.objects.get(metric__name="throughput", parameters={"clients": 20})
    assert (baseline.n, baseline.median, baseline.maximum) == (2, 2000.0, 3000.0)
    assert Baseline.objects.count() == 2  # clients 1 and 20, once each


@pytest.mark.django_db(transaction=True)
def test_more_dirty_keys_than_one_batch_are_all_refreshed_by_the_task(bob):
    """Three keys (three major versions), one task with a batch of one: it
    queues itself again until no mark is left."""
    for major in ("13", "14", "15"):
        publish(bob, 1000.0, database={"version_string": f"PostgreSQL {major}.2"})
    assert DirtyKey.objects.count() == 3
    app.control.purge()  # only the one task below

    baselines_refresh_task.delay(batch=1)
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        deadline = time.monotonic() + 20
        while DirtyKey.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.2)

    assert DirtyKey.objects.count() == 0
    assert Baseline.objects.values("fingerprint").distinct().count() == 3


@pytest.mark.django_db(transaction=True)
def test_two_refreshes_at_once_never_claim_the_same_key(bob):
    """A claim locks its marks; a second refresh running meanwhile skips
    them instead of waiting, and takes the other keys."""
    for major in ("13", "14"):
        publish(bob, 1000.0, database={"version_string": f"PostgreSQL {major}.2"})
    first_claimed = threading.Event()
    release = threading.Event()
    claims: dict[str, list[str]] = {}

    def slow_claim() -> None:
        try:
            from django.db import transaction

            with transaction.atomic():
                marks = list(
                    services._claimable()
                    .select_for_update(skip_locked=True)
                    .order_by("marked_at")[:1]
                )
                claims["slow"] = [m.fingerprint for m in marks]
                first_claimed.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=slow_claim)
    thread.start()
    assert first_claimed.wait(10)
    try:
        # With the first claim's row lock held, a refresh must not block on it.
        claims["other"] = [m.fingerprint for m in services._claim(10)]
    finally:
        release.set()
        thread.join(10)

    assert len(claims["slow"]) == 1 and len(claims["other"]) == 1
    assert set(claims["slow"]).isdisjoint(claims["other"])
    assert connection.vendor == "postgresql"


def test_rank_finds_a_point_however_its_number_is_spelled(anonymous_api, bob):
    """param.clients=20.0 is the point the measurement list finds with it."""
    for value in (1000.0, 1100.0, 1200.0, 1300.0):
        submission = publish(bob, value)
    baselines_refresh()
    fingerprint = Run.objects.filter(submission=submission).get().fingerprint
    listed = anonymous_api.get(
        "/api/v1/measurements/", {"param.clients": "20.0", "metric": "throughput"}
    ).json()
    assert len(listed["results"]) == 4

    for spelling in ("20", "20.0", "2e1"):
        rank = anonymous_api.get(
            "/api/v1/baselines/rank/",
            {
                "fingerprint": fingerprint,
                "metric": "throughput",
                "value": 1250,
                "param.clients": spelling,
            },
        )
        assert rank.status_code == 200, (spelling, rank.json())
        assert rank.json()["n"] == 4
