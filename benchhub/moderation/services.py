"""Writes of the moderation app.

``submission_moderate`` is the one way a submission's status changes —
from the queue, the REST API, the admin, approval on arrival and
auto-flagging alike: it checks who may, which transition is allowed and
whether a reason is needed, writes the audit log and marks the affected
baselines dirty, in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from benchhub.accounts.roles import is_moderator, is_trusted
from benchhub.baselines.services import baselines_mark_dirty
from benchhub.lib.api import database_trouble
from benchhub.lib.queueing import task_queue
from benchhub.moderation.aliases import ALIASABLE, alias_map, alias_map_forget, renormalized
from benchhub.moderation.models import AliasMark, AliasRule, AuditEntry, Report
from benchhub.results import events
from benchhub.results.models import Run, Submission
from benchhub.results.normalization.empty import EMPTY_SHOWN, means_empty
from benchhub.results.selectors import submission_metric_ids

Action = AuditEntry.Action
Status = Submission.Status
_EVERY_STATUS = frozenset(Status.values)

# action → (statuses it may start from, status it leads to; None: the one before hiding)
TRANSITIONS: dict[str, tuple[frozenset[str], str | None]] = {
    Action.APPROVE: (
        frozenset({Status.PENDING, Status.FLAGGED, Status.RERUN, Status.REJECTED}),
        Status.APPROVED,
    ),
    Action.REJECT: (
        frozenset({Status.PENDING, Status.FLAGGED, Status.RERUN, Status.APPROVED}),
        Status.REJECTED,
    ),
    Action.FLAG: (frozenset({Status.PENDING, Status.APPROVED}), Status.FLAGGED),
    Action.REQUEST_RERUN: (
        frozenset({Status.PENDING, Status.FLAGGED, Status.APPROVED}),
        Status.RERUN,
    ),
    Action.HIDE: (_EVERY_STATUS - {Status.HIDDEN, Status.DELETED}, Status.HIDDEN),
    Action.UNHIDE: (frozenset({Status.HIDDEN}), None),
    Action.DELETE: (_EVERY_STATUS - {Status.DELETED}, Status.DELETED),
}
# A reader's report changes no status (see submission_report): these may be reported.
REPORTABLE = frozenset({Status.PENDING, Status.APPROVED, Status.FLAGGED})
SUBMISSION_ACTIONS = tuple(TRANSITIONS)
REASON_REQUIRED = frozenset({Action.REJECT, Action.FLAG, Action.REQUEST_RERUN})
MODERATOR_ACTIONS = frozenset({Action.APPROVE, Action.REJECT, Action.FLAG, Action.REQUEST_RERUN})
OWNER_ACTIONS = frozenset({Action.HIDE, Action.UNHIDE, Action.DELETE})


class ModerationError(Exception):
    """Refused; nothing changed. ``code`` names the kind for the API."""

    code = "invalid"


class NotPermitted(ModerationError):
    code = "permission_denied"


class TransitionNotAllowed(ModerationError):
    code = "conflict"


class ReasonRequired(ModerationError):
    code = "reason_required"


class InvalidReason(ModerationError):
    """A reason no form or API may store: see REASON_MAX_LENGTH."""


# The API's limit, kept by every way in (the queue's form had none).
REASON_MAX_LENGTH = 2000


class ConcurrentChange(ModerationError):
    """A concurrent change broke the action's transaction (a deadlock, say):
    rolled back, nothing changed; doing it again is the remedy."""

    code = "concurrent_change"


def action_permitted(*, user: AbstractBaseUser | None, submission: Submission, action: str) -> bool:
    """Who may: moderators everything; the owner hides, unhides and deletes
    their own; BenchHub itself (None) anything. (Any signed-in reader
    reports: submission_report.)"""
    if user is None:
        return True
    if not user.is_authenticated or not user.is_active:
        return False
    if is_moderator(user):
        return True
    if action in OWNER_ACTIONS:
        return submission.submitter_id == user.pk
    return False


def submission_moderate(
    *,
    submission: Submission,
    actor: AbstractBaseUser | None,
    action: str,
    reason: str = "",
    evidence: list[dict[str, Any]] | None = None,
) -> Submission:
    """Apply ``action`` to ``submission`` as ``actor`` (None: BenchHub
    itself). Returns the submission with its new status (``submission`` is
    updated in place too); raises a ModerationError, changing nothing."""
    if action not in TRANSITIONS:
        raise ModerationError(f"unknown action {action!r}; one of {', '.join(TRANSITIONS)}")
    reason = reason.strip()
    if action in REASON_REQUIRED and not reason:
        raise ReasonRequired(f"{action} needs a reason, shown to the submitter")
    if "\x00" in reason:  # PostgreSQL text cannot hold one
        raise InvalidReason("the reason contains a null character, which text cannot hold")
    if len(reason) > REASON_MAX_LENGTH:
        raise InvalidReason(
            f"the reason is {len(reason)} characters long; at most {REASON_MAX_LENGTH}"
        )
    if not action_permitted(user=actor, submission=submission, action=action):
        raise NotPermitted(f"you may not {action} this submission")
    with transaction.atomic():
        locked = Submission.objects.select_for_update().get(pk=submission.pk)
        sources, target = TRANSITIONS[action]
        before = locked.status
        if before not in sources:
            raise TransitionNotAllowed(f"{_a(before)} submission cannot be {_past(action)}")
        after = target or locked.status_before_hidden or Status.PENDING
        locked.status = after
        locked.status_before_hidden = before if action == Action.HIDE else ""
        if evidence is None and action == Action.FLAG:
            # What a moderator saw when flagging: the most unusual results
            # against their baselines, as the queue shows them.
            from benchhub.moderation.selectors import submission_evidence

            evidence = [e.as_dict() for e in submission_evidence(locked)]
        # Hiding keeps the moderator's reason for the status it hides (the
        # hider's reason is in the audit log): it was overwritten, shown on
        # "My submissions" as the moderator's, and lost when unhidden.
        if action not in (Action.HIDE, Action.UNHIDE):
            locked.status_reason = reason
        locked.save(update_fields=["status", "status_reason", "status_before_hidden"])
        # Its runs' copy (Run.submission_status), read by the comparisons.
        Run.objects.filter(submission=locked).update(submission_status=after)
        AuditEntry.objects.create(
            actor=actor,
            action=action,
            submission=locked,
            reason=reason,
            before=before,
            after=after,
            evidence=evidence or [],
        )
        if actor is not None and is_moderator(actor):
            # A moderator's decision answers the readers' reports.
            _reports_handle(locked, actor)
        if Status.APPROVED in (before, after):
            # The public set of this key changed: its baselines must follow.
            baselines_mark_dirty(runs=locked.runs.values_list("pk", "fingerprint"))
            events.public_data_changed.send(
                sender=Submission, metrics=submission_metric_ids(locked)
            )
    for field in ("status", "status_reason", "status_before_hidden"):
        setattr(submission, field, getattr(locked, field))
    return locked


def _a(status: str) -> str:
    """The status with its article, as read in a sentence: "an approved",
    "a re-run requested" (its label, not the stored "rerun")."""
    label = str(Status(status).label).lower()
    return f"{'an' if label[0] in 'aeiou' else 'a'} {label}"


def _past(action: str) -> str:
    return {
        Action.APPROVE: "approved",
        Action.REJECT: "rejected",
        Action.FLAG: "flagged",
        Action.REQUEST_RERUN: "sent back for a re-run",
        Action.HIDE: "hidden",
        Action.UNHIDE: "unhidden",
        Action.DELETE: "deleted",
    }[action]


# --- readers' reports ---------------------------------------------------------------


class AlreadyReported(ModerationError):
    code = "already_reported"


def _reason_checked(reason: str, *, what: str) -> str:
    reason = reason.strip()
    if not reason:
        raise ReasonRequired(f"{what} needs a reason: what looks wrong")
    if "\x00" in reason:
        raise InvalidReason("the reason contains a null character, which text cannot hold")
    if len(reason) > REASON_MAX_LENGTH:
        raise InvalidReason(
            f"the reason is {len(reason)} characters long; at most {REASON_MAX_LENGTH}"
        )
    return reason


def submission_report(*, submission: Submission, reporter: AbstractBaseUser, reason: str) -> Report:
    """A signed-in reader reports ``submission``: the report is recorded and
    logged, and the submission waits in the moderation queue; its status does
    not change, so an approved result stays public until a moderator decides.
    One open report per reader per submission: a repeat before a moderator
    has handled the first raises AlreadyReported; after, it is a new report
    (the result may have been dismissed for what the first one said)."""
    reason = _reason_checked(reason, what="a report")
    if not reporter.is_authenticated or not reporter.is_active:
        raise NotPermitted("sign in to report a result")
    if submission.submitter_id == reporter.pk:
        raise NotPermitted("you cannot report your own submission; hide or delete it instead")
    with transaction.atomic():
        locked = Submission.objects.select_for_update().get(pk=submission.pk)
        if locked.status not in REPORTABLE:
            raise TransitionNotAllowed(f"{_a(locked.status)} submission cannot be reported")
        if Report.objects.filter(
            submission=locked, reporter=reporter, handled_at__isnull=True
        ).exists():
            raise AlreadyReported(
                "you have already reported this submission and the moderators have not "
                "looked at it yet; once they have, you can report it again"
            )
        report = Report.objects.create(submission=locked, reporter=reporter, reason=reason)
        AuditEntry.objects.create(
            actor=reporter,
            action=Action.REPORT,
            submission=locked,
            reason=reason,
            before=locked.status,
            after=locked.status,
        )
    return report


def reports_dismiss(*, submission: Submission, actor: AbstractBaseUser, reason: str = "") -> int:
    """A moderator finds nothing wrong: the open reports of ``submission`` are
    marked handled (it leaves the queue), its status stays. Returns how many."""
    if not is_moderator(actor):
        raise NotPermitted("only moderators dismiss reports")
    with transaction.atomic():
        locked = Submission.objects.select_for_update().get(pk=submission.pk)
        handled = _reports_handle(locked, actor)
        if not handled:
            raise TransitionNotAllowed("this submission has no open reports")
        AuditEntry.objects.create(
            actor=actor,
            action=Action.DISMISS,
            submission=locked,
            reason=reason.strip() or f"{handled} report{'s' if handled != 1 else ''} dismissed",
            before=locked.status,
            after=locked.status,
        )
    return handled


def _reports_handle(submission: Submission, actor: AbstractBaseUser) -> int:
    return Report.objects.filter(submission=submission, handled_at__isnull=True).update(
        handled_at=timezone.now(), handled_by=actor
    )


@dataclass(frozen=True)
class BulkOutcome:
    submission: Submission
    error: ModerationError | None = None


def submissions_moderate(
    *, submissions: Iterable[Submission], actor: AbstractBaseUser, action: str, reason: str = ""
) -> list[BulkOutcome]:
    """The same action on a selection, each on its own: one refused (already
    approved meanwhile, say) does not undo the others. One that a concurrent
    change broke (a deadlock) is refused too: the others done before it are
    committed, so a 503 saying that nothing was done would be wrong."""
    outcomes = []
    for submission in submissions:
        try:
            submission_moderate(submission=submission, actor=actor, action=action, reason=reason)
            outcomes.append(BulkOutcome(submission))
        except ModerationError as exc:
            outcomes.append(BulkOutcome(submission, exc))
        except DatabaseError as exc:
            trouble = database_trouble(exc)
            if trouble is None or trouble.code != "concurrent_change":
                raise
            refused = ConcurrentChange(f"not done: {trouble.reason}; try it again")
            outcomes.append(BulkOutcome(submission, refused))
    return outcomes


def arrival_moderated(*, submission: Submission) -> bool:
    """Whether submission_arrived has anything to do for this new upload."""
    return submission.status == Status.PENDING and is_trusted(submission.submitter)


def submission_arrived(*, submission: Submission) -> None:
    """A new upload: a trusted submitter's is approved on arrival (auto-flagging
    still reviews it once the baselines have scored it)."""
    if arrival_moderated(submission=submission):
        submission_moderate(
            submission=submission,
            actor=None,
            action=Action.APPROVE,
            reason="approved on arrival: trusted submitter",
        )


# --- automatic flags ----------------------------------------------------------------


def submissions_autoflag(*, limit: int = 100) -> int:
    """Flag the submissions with a measurement whose outlier score reached
    BENCHHUB_AUTOFLAG_SCORE (see selectors.autoflag_candidates), with the
    evidence. Returns how many were flagged."""
    from benchhub.moderation.selectors import autoflag_candidates, evidence_for

    flagged = 0
    candidates = autoflag_candidates(limit=limit)
    submissions = Submission.objects.in_bulk(list(candidates))
    threshold = settings.BENCHHUB_AUTOFLAG_SCORE
    for pk, measurements in candidates.items():
        evidence = [e.as_dict() for e in evidence_for(measurements)]
        worst = max(evidence, key=lambda e: abs(e["score"]))
        reason = (
            f"automatic: {worst['metric']} {worst['value']:g} at {worst['parameters'] or '—'} "
            f"against a median of {worst['median']:g} (n={worst['n']}), outlier score "
            f"{worst['score']:.1f} beyond ±{threshold:g}"
        )
        try:
            submission_moderate(
                submission=submissions[pk],
                actor=None,
                action=Action.FLAG,
                reason=reason,
                evidence=evidence,
            )
            flagged += 1
        except TransitionNotAllowed:
            continue  # changed meanwhile (a moderator was quicker)
    return flagged


# --- alias rules --------------------------------------------------------------------

ALIAS_BATCH = 500


class AliasRuleError(ModerationError):
    pass


def alias_rule_add(
    *,
    actor: AbstractBaseUser,
    dimension: str,
    field: str,
    from_value: str,
    to_value: str,
    reason: str = "",
) -> AliasRule:
    """Declare ``from_value`` to be ``to_value``; stored rows follow in a
    Celery task, new uploads at once."""
    if not is_moderator(actor):
        raise NotPermitted("only moderators curate dimension values")
    if (dimension, field) not in ALIASABLE:
        names = ", ".join(f"{d}.{f}" for d, f in ALIASABLE)
        raise AliasRuleError(f"{dimension}.{field} cannot be aliased; one of {names}")
    from_value, to_value = from_value.strip(), to_value.strip()
    if not from_value or not to_value or from_value == to_value:
        raise AliasRuleError("an alias needs two different values")
    if means_empty(from_value) or means_empty(to_value):
        # Uploads refuse the text for the same reason: a value stored as
        # "(none)" would be shown as the empty one, and every filter and
        # facet link reads "(none)" as empty, so its runs could not be found.
        raise AliasRuleError(
            f'"{EMPTY_SHOWN}" is how BenchHub shows an empty value, so it cannot be '
            "either side of an alias: runs given that value would look empty and "
            "no filter would find them"
        )
    with transaction.atomic():
        # Checked under the field's lock: two moderators adding a -> b and
        # b -> c at once each passed the check before either committed.
        _alias_rules_lock(dimension, field)
        rules = AliasRule.objects.filter(dimension=dimension, field=field)
        if rules.filter(from_value=from_value).exists():
            raise AliasRuleError(f"{from_value!r} already has an alias; remove it first")
        if rules.filter(from_value=to_value).exists() or rules.filter(to_value=from_value).exists():
            # No chains: every rule maps straight to the value it means.
            raise AliasRuleError(
                "an alias cannot lead to or from another alias; map to the end value"
            )
        rule = _alias_rule_created(
            dimension=dimension,
            field=field,
            from_value=from_value,
            to_value=to_value,
            created_by=actor,
        )
        AuditEntry.objects.create(
            actor=actor,
            action=Action.ALIAS_ADD,
            reason=reason.strip(),
            before=f"{dimension}.{field} = {from_value}",
            after=f"{dimension}.{field} = {to_value}",
        )
        _rules_changed(dimension, field)
    return rule


_ALIAS_LOCKS = 0x616C  # "al": advisory locks of alias rule fields


def _alias_rules_lock(dimension: str, field: str) -> None:
    """Hold the field's rule additions one at a time until this transaction
    ends. PostgreSQL: an advisory lock of the field; SQLite's transactions
    (BEGIN IMMEDIATE, settings.py) already take the one write lock."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [_ALIAS_LOCKS, f"{dimension}.{field}"]
        )


def _alias_rule_created(**fields: Any) -> AliasRule:
    """The rule, or AliasRuleError if another moderator's rule for the same
    value was added since alias_rule_add's check (two submits at once): its
    unique violation was a 500."""
    try:
        with transaction.atomic():
            return AliasRule.objects.create(**fields)
    except IntegrityError:
        raise AliasRuleError(
            f"{fields['from_value']!r} already has an alias; remove it first"
        ) from None


def alias_rule_remove(*, actor: AbstractBaseUser, rule_id: int, reason: str = "") -> AliasRule:
    """Remove a rule; stored rows are normalized again from their raw strings."""
    if not is_moderator(actor):
        raise NotPermitted("only moderators curate dimension values")
    with transaction.atomic():
        rule = AliasRule.objects.select_for_update().filter(pk=rule_id).first()
        if rule is None:
            raise AliasRuleError(f"no alias rule {rule_id}")
        AuditEntry.objects.create(
            actor=actor,
            action=Action.ALIAS_REMOVE,
            reason=reason.strip(),
            before=f"{rule.dimension}.{rule.field} = {rule.to_value}",
            after=f"{rule.dimension}.{rule.field} = {rule.from_value}",
        )
        rule.delete()
        _rules_changed(rule.dimension, rule.field)
    return rule


def _rules_changed(dimension: str, field: str) -> None:
    """Mark the field in the rule change's transaction, and queue the task
    that normalizes its stored rows once that commits. New uploads take the
    rule at once; stored rows once a task takes the mark: this one, or, when
    the broker fails, beat's sweep or a starting worker (the mark stays in
    PostgreSQL until the field is done)."""
    from benchhub.moderation.tasks import alias_rules_apply_task

    AliasMark.objects.bulk_create(
        [AliasMark(dimension=dimension, field=field, marked_at=timezone.now(), done_to_id=0)],
        update_conflicts=True,  # marked already: start again, with the new rules
        unique_fields=["dimension", "field"],
        update_fields=["marked_at", "done_to_id"],
    )
    transaction.on_commit(alias_map_forget)
    left_to = "the sweep (the mark stays in PostgreSQL)"
    transaction.on_commit(lambda: task_queue(alias_rules_apply_task, left_to=left_to))


def alias_rules_apply() -> bool:
    """Normalize one batch of stored rows of the field marked longest ago
    again from their raw strings, with today's rules, and mark the baselines
    of the runs on changed rows dirty; move its mark past the batch, or take
    it off when the field is done. The mark is held locked meanwhile: one
    process at a time works on a field, and a rule change of it waits for
    the batch, then starts the field again. True while marks are left.
    Idempotent: a batch done again (its worker died) changes nothing more."""
    with transaction.atomic():
        marks = AliasMark.objects.select_for_update(skip_locked=True)
        mark = marks.order_by("marked_at", "pk").first()
        if mark is None:
            return False  # none, or each held by another process that goes on with it
        next_id = _renormalize(mark.dimension, mark.field, after_id=mark.done_to_id)
        if next_id is None:
            mark.delete()
        else:
            AliasMark.objects.filter(pk=mark.pk).update(done_to_id=next_id)
    return AliasMark.objects.exists()


def _renormalize(dimension: str, field: str, *, after_id: int) -> int | None:
    """One batch of ``dimension``'s rows from id ``after_id`` on; the id to go
    on after, or None when the table is done."""
    spec = ALIASABLE[dimension, field]
    rules = _rules_from_database()
    rows = list(
        spec.model.objects.filter(pk__gt=after_id)
        .order_by("pk")
        .select_for_update()
        .only("pk", field, spec.raw_field)[:ALIAS_BATCH]
    )
    changed = []
    for row in rows:
        value = renormalized(dimension, field, getattr(row, spec.raw_field), rules)
        if getattr(row, field) != value:
            setattr(row, field, value)
            changed.append(row)
    spec.model.objects.bulk_update(changed, [field], batch_size=ALIAS_BATCH)
    if changed:
        events.public_data_changed.send(sender=Submission, metrics=None)
        baselines_mark_dirty(
            fingerprints=Run.objects.filter(**{f"{dimension}__in": changed})
            .values_list("fingerprint", flat=True)
            .distinct()
        )
    return rows[-1].pk if len(rows) == ALIAS_BATCH else None


def _rules_from_database() -> dict[tuple[str, str], dict[str, str]]:
    """The rules as committed now: the task must not trust a cache that the
    change it follows has not cleared yet."""
    alias_map_forget()
    return alias_map()
