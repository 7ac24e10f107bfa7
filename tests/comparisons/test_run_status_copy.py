"""A comparison judges who may see a run by the run's copy of its
submission's status (Run.submission_status): written with the run on either
storage path, and changed with the status by every moderation action, so a
computed comparison follows a moderation change at once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from benchhub.comparisons import selectors
from benchhub.comparisons.query import comparison_query_parse
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

QUERY = {
    "benchmark": ["select-update"],
    "metric": ["throughput"],
    "x": ["param.clients"],
    "series": ["filesystem"],
}


def upload(user, filesystem: str, status: str) -> Submission:
    document = sweep_document({1: 100.0, 8: 420.0}, storage={"filesystem": filesystem})
    return submission_create(submitter=user, document=document, status=status).submission


def computed(user=None) -> dict[str, int]:
    """Measurements per series of a comparison computed now (nothing kept)."""
    query = comparison_query_parse(QUERY)
    comparison = selectors._comparison_compute(
        user or AnonymousUser(),
        query,
        selectors._measurements(user or AnonymousUser(), query),
        strict_reference=True,
        check_parameters=False,
    )
    return {series.label: sum(p.n for p in series.points) for series in comparison.series}


def copies_agree() -> bool:
    return all(
        run.submission_status == run.submission.status
        for run in Run.objects.select_related("submission")
    )


def test_a_moderation_change_reaches_a_computed_comparison(bob):
    upload(bob, "ext4", Submission.Status.APPROVED)
    xfs = upload(bob, "xfs", Submission.Status.APPROVED)
    pending = upload(bob, "zfs", Submission.Status.PENDING)
    assert copies_agree()
    assert computed() == {"ext4": 2, "xfs": 2}

    submission_moderate(submission=xfs, actor=None, action="reject", reason="copied")
    assert computed() == {"ext4": 2}
    assert copies_agree()

    submission_moderate(submission=pending, actor=None, action="approve")
    submission_moderate(submission=xfs, actor=None, action="approve")
    assert copies_agree()
    assert computed() == {"ext4": 2, "xfs": 2, "zfs": 2}

    submission_moderate(submission=xfs, actor=bob, action="hide")
    assert computed() == {"ext4": 2, "zfs": 2}
    assert computed(bob) == {"ext4": 2, "xfs": 2, "zfs": 2}  # their own, hidden
    submission_moderate(submission=xfs, actor=bob, action="delete")
    assert copies_agree()
    assert computed(bob) == {"ext4": 2, "zfs": 2}  # gone for its owner too


@pytest.mark.parametrize("vendor", ["postgresql", "orm"])
def test_both_storage_paths_write_the_copy(bob, monkeypatch, vendor):
    if vendor == "orm":  # the embedded default's path, on this database
        from benchhub.results import storage

        monkeypatch.setattr(storage, "_insert_postgresql", storage._insert_orm)
    for status in (Submission.Status.PENDING, Submission.Status.APPROVED):
        upload(bob, "ext4", status)
    assert sorted(Run.objects.values_list("submission_status", flat=True)) == [
        "approved",
        "pending",
    ]
