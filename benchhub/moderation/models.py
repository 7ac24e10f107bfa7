from __future__ import annotations

from django.conf import settings
from django.db import models

from benchhub.results.models import TEXT, Submission


class AuditEntry(models.Model):
    """One change made by a person or by BenchHub itself (actor None):
    a submission's change of status, or an alias rule added or removed."""

    class Action(models.TextChoices):
        APPROVE = "approve"
        REJECT = "reject"
        FLAG = "flag"
        REQUEST_RERUN = "request_rerun", "request a re-run"
        HIDE = "hide"
        UNHIDE = "unhide"
        DELETE = "delete"
        REPORT = "report"
        DISMISS = "dismiss", "dismiss the reports"
        ALIAS_ADD = "alias_add", "add an alias rule"
        ALIAS_REMOVE = "alias_remove", "remove an alias rule"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="audit_entries",
    )
    action = models.CharField(max_length=20, choices=Action.choices, db_index=True)
    submission = models.ForeignKey(
        Submission,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="audit_entries",
    )
    reason = models.TextField(blank=True)
    before = models.CharField(max_length=TEXT, blank=True)
    after = models.CharField(max_length=TEXT, blank=True)
    # What an automatic flag saw: [{"run", "metric", "parameters", "value",
    # "median", "n", "score"}, …]
    evidence = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["submission", "created_at"], name="audit_submission_time")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action} {self.before}→{self.after}"


class AliasRule(models.Model):
    """ "``from_value`` is ``to_value``" for one normalized field of one
    dimension: applied by normalization to new uploads, and to stored rows
    by moderation.tasks.alias_rules_apply_task."""

    class Dimension(models.TextChoices):
        HARDWARE = "hardware"
        STORAGE = "storage"
        OS = "os", "OS"

    dimension = models.CharField(max_length=10, choices=Dimension.choices)
    field = models.CharField(max_length=40)
    from_value = models.CharField(max_length=TEXT)
    to_value = models.CharField(max_length=TEXT)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="alias_rules"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dimension", "field", "from_value"], name="alias_rule_unique_from"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dimension}.{self.field}: {self.from_value!r} → {self.to_value!r}"


class AliasMark(models.Model):
    """A field whose alias rules changed and whose stored rows are not all
    normalized again yet. Written in the rule change's transaction and taken
    off by the task that finishes the field (services.alias_rules_apply), so
    that the work outlives a task the broker lost or never took: the next
    task to run, whoever queued it (a rule change, beat's sweep, a starting
    worker), does it."""

    dimension = models.CharField(max_length=10, choices=AliasRule.Dimension.choices)
    field = models.CharField(max_length=40)
    marked_at = models.DateTimeField()
    # The rows up to this id are normalized with the rules as they are now;
    # a rule change of the field starts it again from 0.
    done_to_id = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dimension", "field"], name="alias_mark_unique_field")
        ]

    def __str__(self) -> str:
        return f"{self.dimension}.{self.field} from id {self.done_to_id}"


class Report(models.Model):
    """A reader's report of a submission: it changes no status (one account
    must not unpublish a result) but puts the submission in front of the
    moderators, who act on it or dismiss it; either way it is then handled.
    One open report per reader per submission; once handled, the reader may
    report it again (something new may look wrong)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="reports")
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reports"
    )
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    handled_at = models.DateTimeField(null=True, blank=True)
    handled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "reporter"],
                condition=models.Q(handled_at__isnull=True),
                name="report_one_open_per_reader",
            )
        ]
        indexes = [
            models.Index(
                fields=["submission"],
                condition=models.Q(handled_at__isnull=True),
                name="report_open",
            )
        ]

    def __str__(self) -> str:
        return f"{self.reporter_id} on {self.submission_id}: {self.reason[:40]}"
