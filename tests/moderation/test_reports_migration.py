"""Moderation migration 0004: a report made before 0003 flagged its result
(taking it off the public pages) and left only an audit entry. The migration
records it as a Report and puts the result back as it was."""

from __future__ import annotations

import importlib

from django.apps import apps
from django.db import connection

from benchhub.baselines.models import DirtyKey, DirtyRun
from benchhub.moderation.models import AuditEntry, Report
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Submission
from tests.moderation.conftest import upload

Status = Submission.Status


def reported_the_old_way(submission: Submission, reader, reason: str) -> None:
    """What services.submission_moderate(action="report") did before 0003."""
    AuditEntry.objects.create(
        actor=reader,
        action="report",
        submission=submission,
        reason=reason,
        before=submission.status,
        after=Status.FLAGGED,
    )
    submission.status = Status.FLAGGED
    submission.status_reason = reason
    submission.save()


def migrate() -> None:
    migration = importlib.import_module("benchhub.moderation.migrations.0004_reports_from_flags")
    with connection.schema_editor() as editor:
        migration.reports_from_flags(apps, editor)


def test_a_result_a_report_unpublished_is_public_again_with_its_report_open(
    alice, bob, trent, maud, anonymous_api
):
    submission = upload(alice)
    submission_moderate(submission=submission, actor=maud, action="approve", reason="fine")
    reported_the_old_way(submission, bob, "10x faster than anywhere")
    reported_the_old_way(submission, trent, "the disk cannot do that")  # flagged → flagged
    when = AuditEntry.objects.get(actor=bob).created_at
    DirtyRun.objects.all().delete()
    DirtyKey.objects.all().delete()

    migrate()

    submission.refresh_from_db()
    assert (submission.status, submission.status_reason) == (Status.APPROVED, "fine")
    listed = anonymous_api.get("/api/v1/submissions/").json()["results"]
    assert [s["uuid"] for s in listed] == [str(submission.uuid)]
    reports = Report.objects.order_by("reporter__username")
    assert [(r.reporter.username, r.reason, r.handled_at) for r in reports] == [
        ("bob", "10x faster than anywhere", None),
        ("trent", "the disk cannot do that", None),
    ]
    assert reports[0].created_at == when
    restored = AuditEntry.objects.latest("pk")
    assert (restored.actor, restored.action, restored.before, restored.after) == (
        None,
        "report",
        Status.FLAGGED,
        Status.APPROVED,
    )
    run = submission.runs.get()
    assert list(DirtyRun.objects.values_list("run_id", flat=True)) == [run.pk]
    assert list(DirtyKey.objects.values_list("fingerprint", flat=True)) == [run.fingerprint]

    migrate()  # a second run changes nothing
    assert Report.objects.count() == 2
    assert AuditEntry.objects.filter(actor=None).count() == 1


def test_a_report_a_moderator_decided_on_since_is_handled_and_the_decision_stays(alice, bob, maud):
    rejected = upload(alice)
    reported_the_old_way(rejected, bob, "copied numbers")
    submission_moderate(submission=rejected, actor=maud, action="reject", reason="copied")
    flagged = upload(alice)
    submission_moderate(submission=flagged, actor=maud, action="flag", reason="odd")
    reported_the_old_way(flagged, bob, "odd indeed")

    migrate()

    rejected.refresh_from_db()
    flagged.refresh_from_db()
    assert (rejected.status, flagged.status) == (Status.REJECTED, Status.FLAGGED)
    handled = Report.objects.get(submission=rejected)
    assert (handled.handled_by, handled.handled_at) == (
        maud,
        AuditEntry.objects.get(action="reject").created_at,
    )
    assert Report.objects.get(submission=flagged).handled_at is None
    assert not AuditEntry.objects.filter(actor=None).exists()


def test_a_result_hidden_by_its_owner_after_the_report_unhides_to_its_status_before(alice, bob):
    submission = upload(alice)  # pending
    reported_the_old_way(submission, bob, "impossible latency")
    submission_moderate(submission=submission, actor=alice, action="hide")

    migrate()

    submission.refresh_from_db()
    assert (submission.status, submission.status_before_hidden) == (Status.HIDDEN, Status.PENDING)
    submission_moderate(submission=submission, actor=alice, action="unhide")
    assert submission.status == Status.PENDING
    assert Report.objects.get().reporter == bob
