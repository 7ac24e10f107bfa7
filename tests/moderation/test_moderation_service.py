"""moderation.services.submission_moderate: the one way a status changes."""

from __future__ import annotations

import pytest

from benchhub.baselines.models import DirtyKey
from benchhub.baselines.services import baselines_refresh
from benchhub.moderation.models import AuditEntry
from benchhub.moderation.selectors import submission_history
from benchhub.moderation.services import (
    NotPermitted,
    ReasonRequired,
    TransitionNotAllowed,
    submission_moderate,
    submission_report,
    submissions_autoflag,
)
from benchhub.results.models import Submission
from tests.moderation.conftest import upload

Status = Submission.Status


def test_approving_logs_who_when_why_and_marks_the_baselines(alice, maud):
    submission = upload(alice)
    DirtyKey.objects.all().delete()

    submission_moderate(submission=submission, actor=maud, action="approve", reason="looks right")

    submission.refresh_from_db()
    assert submission.status == Status.APPROVED
    (entry,) = AuditEntry.objects.all()
    assert (entry.actor, entry.action, entry.before, entry.after, entry.reason) == (
        maud,
        "approve",
        "pending",
        "approved",
        "looks right",
    )
    assert list(DirtyKey.objects.values_list("fingerprint", flat=True)) == [
        submission.runs.get().fingerprint
    ]


def test_a_change_that_leaves_the_public_set_alone_marks_nothing(alice, maud):
    submission = upload(alice)
    DirtyKey.objects.all().delete()

    submission_moderate(submission=submission, actor=maud, action="reject", reason="wrong unit")

    assert not DirtyKey.objects.exists()


@pytest.mark.parametrize("action", ["reject", "flag", "request_rerun"])
def test_a_decision_against_a_submission_needs_a_reason(alice, maud, action):
    submission = upload(alice)

    with pytest.raises(ReasonRequired):
        submission_moderate(submission=submission, actor=maud, action=action, reason="  \n ")

    submission.refresh_from_db()
    assert submission.status == Status.PENDING
    assert not AuditEntry.objects.exists()


def test_an_approved_submission_cannot_be_approved_again_said_in_english(alice, maud):
    submission = upload(alice)
    submission_moderate(submission=submission, actor=maud, action="approve")

    with pytest.raises(TransitionNotAllowed, match=r"^an approved submission cannot be approved$"):
        submission_moderate(submission=submission, actor=maud, action="approve")


def test_a_deleted_submission_cannot_be_approved(alice, maud):
    submission = upload(alice)
    submission_moderate(submission=submission, actor=alice, action="delete")

    with pytest.raises(TransitionNotAllowed, match="deleted submission cannot be approved"):
        submission_moderate(submission=submission, actor=maud, action="approve")

    assert AuditEntry.objects.count() == 1


def test_a_submitter_may_not_approve_their_own(alice):
    submission = upload(alice)

    with pytest.raises(NotPermitted):
        submission_moderate(submission=submission, actor=alice, action="approve")


def test_another_submitter_may_not_hide_someone_elses(alice, bob):
    submission = upload(alice)

    with pytest.raises(NotPermitted):
        submission_moderate(submission=submission, actor=bob, action="hide")


def test_unhide_restores_the_status_it_had(alice, maud):
    submission = upload(alice)
    submission_moderate(submission=submission, actor=maud, action="approve")
    submission_moderate(submission=submission, actor=alice, action="hide")
    assert submission.status == Status.HIDDEN

    submission_moderate(submission=submission, actor=alice, action="unhide")

    assert submission.status == Status.APPROVED
    assert [e.after for e in AuditEntry.objects.order_by("id")] == [
        "approved",
        "hidden",
        "approved",
    ]


def test_hiding_and_unhiding_keep_the_moderators_reason(alice, maud):
    submission = upload(alice)
    submission_moderate(
        submission=submission, actor=maud, action="reject", reason="latencies off; --repeat 3"
    )

    submission_moderate(submission=submission, actor=alice, action="hide", reason="an old run")
    hidden_reason = submission.status_reason
    submission_moderate(submission=submission, actor=alice, action="unhide")

    assert hidden_reason == "latencies off; --repeat 3"
    submission.refresh_from_db()
    assert (submission.status, submission.status_reason) == (
        Status.REJECTED,
        "latencies off; --repeat 3",
    )
    assert AuditEntry.objects.get(action="hide").reason == "an old run"


def test_a_trusted_submitters_upload_is_approved_on_arrival_and_logged(trent, alice):
    trusted = upload(trent)
    ordinary = upload(alice)

    assert (trusted.status, ordinary.status) == (Status.APPROVED, Status.PENDING)
    (entry,) = AuditEntry.objects.all()
    assert entry.actor is None and entry.submission == trusted
    assert "trusted" in entry.reason


def test_an_outlier_is_flagged_automatically_with_its_evidence(bob, alice, trent, maud, settings):
    settings.BENCHHUB_AUTOFLAG_SCORE = 3.5
    for value in (1000.0, 1050.0, 1100.0, 1150.0, 1200.0):  # approved, skewed spread
        upload(bob, value, status=Status.APPROVED)
    suspicious = upload(alice, 9000.0)
    ordinary = upload(alice, 1120.0)
    on_arrival = upload(trent, 15.0)  # approved on arrival, far below
    baselines_refresh()

    assert submissions_autoflag() == 2

    statuses = {s.pk: s.status for s in Submission.objects.all()}
    assert statuses[suspicious.pk] == Status.FLAGGED
    assert statuses[on_arrival.pk] == Status.FLAGGED
    assert statuses[ordinary.pk] == Status.PENDING
    flag = AuditEntry.objects.get(submission=suspicious, action="flag")
    assert flag.actor is None
    (evidence,) = flag.evidence
    assert evidence["value"] == 9000.0
    # the baseline counts what was approved, the trusted upload too (until flagged)
    assert (evidence["median"], evidence["n"]) == (1075.0, 6)
    assert evidence["score"] > 3.5
    assert "outlier score" in flag.reason
    # A moderator who approves it after seeing the evidence is not overruled
    # by the next sweep.
    for flagged in (suspicious, on_arrival):
        submission_moderate(submission=flagged, actor=maud, action="approve")
    assert submissions_autoflag() == 0
    assert Submission.objects.get(pk=on_arrival.pk).status == Status.APPROVED


def test_the_threshold_is_a_setting(bob, alice, settings):
    for value in (1000.0, 1050.0, 1100.0, 1150.0, 1200.0):
        upload(bob, value, status=Status.APPROVED)
    upload(alice, 1400.0)  # score ≈ 4
    baselines_refresh()

    settings.BENCHHUB_AUTOFLAG_SCORE = 5.0
    assert submissions_autoflag() == 0
    settings.BENCHHUB_AUTOFLAG_SCORE = 3.5
    assert submissions_autoflag() == 1


def test_a_submitter_sees_the_history_of_their_own_but_not_who_reported_it(alice, bob, maud):
    submission = upload(alice)
    submission_moderate(submission=submission, actor=maud, action="approve")
    submission_report(submission=submission, reporter=bob, reason="too fast")

    own = submission_history(submission, alice)
    moderators = submission_history(submission, maud)

    assert [(h.actor_label, h.entry.action) for h in own] == [
        ("maud", "approve"),
        ("a reader", "report"),
    ]
    assert [h.actor_label for h in moderators] == ["maud", "bob"]
    assert submission_history(submission, bob) == []


def test_a_moderators_flag_keeps_the_evidence_they_saw(bob, alice, maud):
    for value in (1000.0, 1050.0, 1100.0, 1150.0, 1200.0):
        upload(bob, value, status=Status.APPROVED)
    submission = upload(alice, 4000.0)
    baselines_refresh()

    submission_moderate(submission=submission, actor=maud, action="flag", reason="too fast")

    evidence = AuditEntry.objects.get(action="flag").evidence
    worst = evidence[0]
    assert (worst["value"], worst["median"], worst["n"]) == (4000.0, 1100.0, 5)
    assert worst["score"] > 3.5
