"""Readers' reports made before 0003 become Report rows, and a result they
took off the public pages is put back as it was.

Before 0003 a report set the submission's status to flagged and left only
an audit entry ("report", before → flagged). Those results stayed hidden
from the public with no Report: not "reported" in the queue, no "Dismiss the
reports", and their readers could report them again. Now a report changes
no status, so each such result returns to the status it had before the
report (approved: public again), logged by BenchHub, and its reports wait
for the moderators, unless a moderator has decided on the result since.
"""

from django.db import migrations
from django.utils import timezone

REPORT = "report"
FLAGGED = "flagged"
HIDDEN = "hidden"
APPROVED = "approved"
# A decision that answers the readers' reports (services.MODERATOR_ACTIONS).
DECISIONS = ("approve", "reject", "flag", "request_rerun")
# Status changes that keep what came before: a hide and its unhide.
HIDING = ("hide", "unhide")
REASON = (
    "a reader's report no longer unpublishes a result: back to {status} as before "
    "the report, which waits for the moderators"
)


def reports_from_flags(apps, schema_editor) -> None:
    AuditEntry = apps.get_model("moderation", "AuditEntry")
    Report = apps.get_model("moderation", "Report")
    Submission = apps.get_model("results", "Submission")
    reported = (
        AuditEntry.objects.filter(action=REPORT, submission__isnull=False)
        .values_list("submission_id", flat=True)
        .distinct()
    )
    for submission in Submission.objects.filter(pk__in=reported).order_by("pk"):
        entries = list(
            AuditEntry.objects.filter(submission=submission).order_by("created_at", "pk")
        )
        _record_reports(Report, submission, entries)
        _restore_status(apps, AuditEntry, submission, entries)


def _record_reports(Report, submission, entries) -> None:
    """A Report per reader (their first report; the log keeps them all),
    handled by the first moderator's decision after it, if any."""
    first = {}
    for entry in entries:
        if entry.action == REPORT and entry.actor_id is not None:
            first.setdefault(entry.actor_id, entry)
    for reader, entry in first.items():
        if Report.objects.filter(submission=submission, reporter_id=reader).exists():
            continue  # reported after 0003: recorded then
        decision = next(
            (
                later
                for later in entries
                if later.action in DECISIONS
                and later.actor_id is not None
                and (later.created_at, later.pk) > (entry.created_at, entry.pk)
            ),
            None,
        )
        report = Report.objects.create(
            submission=submission, reporter_id=reader, reason=entry.reason
        )
        # created_at is auto_now_add: the day the reader reported is set after.
        Report.objects.filter(pk=report.pk).update(
            created_at=entry.created_at,
            handled_at=decision.created_at if decision else None,
            handled_by_id=decision.actor_id if decision else None,
        )


def _restore_status(apps, AuditEntry, submission, entries) -> None:
    """Flagged (or hidden while flagged) because of a report, and nobody
    changed the status since but by hiding: back to the status before it."""
    changes = [e for e in entries if e.before != e.after and e.action not in HIDING]
    if not changes or changes[-1].action != REPORT or changes[-1].after != FLAGGED:
        return
    flag = changes[-1]
    restored = flag.before
    earlier = [e for e in changes[:-1] if e.after == restored]
    reason = earlier[-1].reason if earlier else ""
    if submission.status == FLAGGED:
        before = submission.status
        submission.status = restored
        submission.status_reason = reason
        after = restored
    elif submission.status == HIDDEN and submission.status_before_hidden == FLAGGED:
        before = after = HIDDEN
        submission.status_before_hidden = restored
    else:
        return
    submission.save(update_fields=["status", "status_reason", "status_before_hidden"])
    AuditEntry.objects.create(
        actor=None,
        action=REPORT,
        submission=submission,
        reason=REASON.format(status=restored),
        before=before,
        after=after,
    )
    if after == APPROVED:
        _mark_baselines(apps, submission)


def _mark_baselines(apps, submission) -> None:
    """The public set of these runs' keys changed: the marks the baselines'
    refresh reads (baselines.refresh), which the periodic sweep queues."""
    DirtyRun = apps.get_model("baselines", "DirtyRun")
    DirtyKey = apps.get_model("baselines", "DirtyKey")
    Run = apps.get_model("results", "Run")
    now = timezone.now()
    runs = list(Run.objects.filter(submission=submission).values_list("pk", "fingerprint"))
    for run_id, fingerprint in runs:
        DirtyRun.objects.update_or_create(
            run_id=run_id, defaults={"fingerprint": fingerprint, "marked_at": now}
        )
    for fingerprint in sorted({fingerprint for _, fingerprint in runs}):
        DirtyKey.objects.update_or_create(fingerprint=fingerprint, defaults={"marked_at": now})


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0003_reports"),
        ("baselines", "0004_claim_token"),
        ("results", "0009_document_lz4"),
    ]

    operations = [migrations.RunPython(reports_from_flags, migrations.RunPython.noop)]
