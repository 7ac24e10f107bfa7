"""Reads of the moderation app: the queue, a submitter's own submissions,
the audit log, the evidence against the baselines, dimension values."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet
from django.utils import timezone

from benchhub.accounts.roles import is_moderator
from benchhub.baselines.models import Baseline
from benchhub.moderation.models import AliasRule, AuditEntry, Report
from benchhub.results.comparability import canonical_json
from benchhub.results.models import Measurement, Run, Submission
from benchhub.results.selectors import RUN_RELATED, User, submission_get

Status = Submission.Status
# What the queue shows unless asked otherwise: what waits for a decision.
QUEUE_DEFAULT_STATES = (Status.PENDING, Status.FLAGGED)
QUEUE_PAGE = 25
# Evidence shown per submission: its most unusual measurements.
EVIDENCE_PER_SUBMISSION = 5


@dataclass
class Evidence:
    run_id: int
    metric: str
    unit: str
    parameters: dict[str, Any]
    value: float
    median: float | None
    n: int
    mad: float | None
    score: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "metric": self.metric,
            "parameters": self.parameters,
            "value": self.value,
            "median": self.median,
            "n": self.n,
            "score": self.score,
        }


def evidence_for(measurements: list[Measurement]) -> list[Evidence]:
    """Each measurement against the approved baseline of its key, metric and
    point (median, n, spread) and its outlier score; one query for all of
    them. ``measurements`` need ``run`` and ``metric`` loaded."""
    fingerprints = {m.run.fingerprint for m in measurements}
    baselines = {
        (b.fingerprint, b.metric_id, b.point): b
        for b in Baseline.objects.filter(fingerprint__in=fingerprints).only(
            "fingerprint", "metric_id", "point", "n", "median", "mad"
        )
    }
    out = []
    for m in measurements:
        baseline = baselines.get((m.run.fingerprint, m.metric_id, canonical_json(m.parameters)))
        out.append(
            Evidence(
                run_id=m.run_id,
                metric=m.metric.name,
                unit=m.metric.unit,
                parameters=m.parameters,
                value=m.value,
                median=baseline.median if baseline else None,
                n=baseline.n if baseline else 0,
                mad=baseline.mad if baseline else None,
                score=m.outlier_score,
            )
        )
    return out


@dataclass
class QueueItem:
    submission: Submission
    runs: list[Run]
    evidence: list[Evidence] = field(default_factory=list)
    # All of its measurements: the evidence is the most unusual few of them.
    measurement_count: int = 0
    # Readers' reports not handled yet, oldest first.
    reports: list[Report] = field(default_factory=list)

    @property
    def worst_score(self) -> float | None:
        scores = [abs(e.score) for e in self.evidence if e.score is not None]
        return max(scores) if scores else None


def _with_runs(submissions: QuerySet[Submission]) -> QuerySet[Submission]:
    runs = Run.objects.select_related(*(name for name in RUN_RELATED if name != "submission"))
    return submissions.select_related("submitter").prefetch_related(
        Prefetch("runs", queryset=runs.order_by("position"))
    )


def queue_q(states: list[str] | None = None) -> Q:
    """Which submissions the queue shows: those of ``states``, or, without
    them, what waits for a decision (the default states and, whatever their
    status, those with open reports). The queue page and the submissions
    list of the API (``status=`` for a moderator) share it.

    Never a deleted one, whatever ``states`` asks: deleted is gone for
    everyone but the audit log, moderators too (its page, its runs and its
    API detail are 404 to them, and no action leads out of it), so listing
    it led to a 404; one reported, then deleted by its submitter, stayed in
    the waiting queue for its open reports, its link a 404 too."""
    if states:
        shown = Q(status__in=states)
    else:
        reported = Exists(Report.objects.filter(submission=OuterRef("pk"), handled_at__isnull=True))
        shown = Q(status__in=QUEUE_DEFAULT_STATES) | reported
    return shown & ~Q(status=Status.DELETED)


def moderation_queue(
    *,
    states: list[str] | None = None,
    benchmark: str = "",
    submitter: str = "",
    page: int = 1,
) -> tuple[list[QueueItem], bool]:
    """A page of submissions for moderators, oldest first (first come, first
    reviewed), with runs, evidence and open reports; and whether there is a
    next page. Unless ``states`` says otherwise, what waits for a decision:
    the default states and, whatever their status, those with open reports.
    A fixed number of queries whatever the page holds."""
    submissions = Submission.objects.filter(queue_q(states))
    if benchmark:
        submissions = submissions.filter(
            Exists(Run.objects.filter(submission=OuterRef("pk"), benchmark__name=benchmark))
        )
    if submitter:
        submissions = submissions.filter(submitter__username=submitter)
    start = (max(page, 1) - 1) * QUEUE_PAGE
    rows = list(
        _with_runs(submissions.order_by("created_at", "id"))[start : start + QUEUE_PAGE + 1]
    )
    has_next = len(rows) > QUEUE_PAGE
    rows = rows[:QUEUE_PAGE]
    return _queue_items(rows), has_next


def _measurements_of(submissions: list[Submission]) -> dict[int, list[Measurement]]:
    measurements = (
        Measurement.objects.filter(run__submission__in=submissions)
        .select_related("metric", "run")
        .order_by("run_id", "id")
    )
    per_submission: dict[int, list[Measurement]] = defaultdict(list)
    for m in measurements:
        per_submission[m.run.submission_id].append(m)
    return per_submission


def _most_unusual(
    submissions: list[Submission], per_submission: dict[int, list[Measurement]] | None = None
) -> dict[int, list[Measurement]]:
    """Each submission's EVIDENCE_PER_SUBMISSION most unusual measurements
    (by outlier score; unscored ones after, in document order)."""
    if per_submission is None:
        per_submission = _measurements_of(submissions)
    return {
        pk: sorted(ms, key=lambda m: -abs(m.outlier_score) if m.outlier_score is not None else 0)[
            :EVIDENCE_PER_SUBMISSION
        ]
        for pk, ms in per_submission.items()
    }


def submission_evidence(submission: Submission) -> list[Evidence]:
    """The evidence the queue shows for one submission."""
    return evidence_for(_most_unusual([submission]).get(submission.pk, []))


def _queue_items(submissions: list[Submission]) -> list[QueueItem]:
    per_submission = _measurements_of(submissions)
    chosen = _most_unusual(submissions, per_submission)
    evidence = evidence_for([m for ms in chosen.values() for m in ms])
    by_submission: dict[int, list[Evidence]] = defaultdict(list)
    run_submission = {run.pk: s.pk for s in submissions for run in s.runs.all()}
    for item in evidence:
        by_submission[run_submission[item.run_id]].append(item)
    reports: dict[int, list[Report]] = defaultdict(list)
    for report in (
        Report.objects.filter(submission__in=submissions, handled_at__isnull=True)
        .select_related("reporter")
        .order_by("created_at", "id")
    ):
        reports[report.submission_id].append(report)
    return [
        QueueItem(
            s,
            list(s.runs.all()),
            by_submission[s.pk],
            len(per_submission[s.pk]),
            reports[s.pk],
        )
        for s in submissions
    ]


def submission_for_action(*, user: User, uuid) -> Submission | None:
    """The submission an action names: moderators find every one (so that
    acting on a deleted one is refused as a transition, not as unknown);
    others, the ones they may see."""
    if is_moderator(user):
        return Submission.objects.select_related("submitter").filter(uuid=uuid).first()
    return submission_get(user=user, uuid=uuid)


def own_report_get(*, user: User, submission: Submission) -> Report | None:
    """``user``'s latest report of ``submission``, for the page to say so
    instead of offering a form whose answer would be "already reported" (and
    to offer it again once a moderator has handled that report). No query
    for a visitor or the submitter, who get no form."""
    if not user.is_authenticated or submission.submitter_id == user.pk:
        return None
    return (
        Report.objects.filter(submission=submission, reporter=user)
        .order_by("-created_at", "-pk")
        .first()
    )


def queue_submissions_get(*, uuids: list[str]) -> list[Submission]:
    return list(
        Submission.objects.filter(uuid__in=uuids)
        .select_related("submitter")
        .order_by("created_at", "id")
    )


def own_submissions(*, user: AbstractBaseUser) -> list[QueueItem]:
    """ "My submissions": every one of the user's, in every state but deleted,
    newest first, with runs and the evidence a moderator sees."""
    submissions = (
        Submission.objects.filter(submitter=user)
        .exclude(status=Status.DELETED)
        .order_by("-created_at", "-id")
    )
    return _queue_items(list(_with_runs(submissions)[:200]))


def own_submission_get(*, user: AbstractBaseUser, uuid) -> Submission | None:
    return (
        Submission.objects.filter(submitter=user, uuid=uuid).exclude(status=Status.DELETED).first()
    )


@dataclass(frozen=True)
class HistoryEntry:
    entry: AuditEntry
    actor_label: str


def submission_history(submission: Submission, user: User) -> list[HistoryEntry]:
    """The audit log of one submission, oldest first, for its submitter and
    moderators (anybody else: empty). Readers who reported it stay
    anonymous to the submitter; BenchHub's own actions say so."""
    return submission_histories([submission], user).get(submission.pk, [])


def submission_histories(
    submissions: list[Submission], user: User
) -> dict[int, list[HistoryEntry]]:
    """submission_history for many submissions in one query."""
    moderator = is_moderator(user)
    allowed = [
        s.pk
        for s in submissions
        if moderator or (user.is_authenticated and s.submitter_id == user.pk)
    ]
    entries = (
        AuditEntry.objects.filter(submission__in=allowed)
        .select_related("actor")
        .order_by("created_at", "id")
    )
    out: dict[int, list[HistoryEntry]] = defaultdict(list)
    for entry in entries:
        out[entry.submission_id].append(HistoryEntry(entry, _actor_label(entry, moderator)))
    return out


def _actor_label(entry: AuditEntry, moderator: bool) -> str:
    if entry.actor is None:
        return "BenchHub"
    if entry.action == AuditEntry.Action.REPORT and not moderator:
        return "a reader"
    return entry.actor.get_username()


def audit_log(
    *,
    action: str = "",
    actor: str = "",
    submission: str = "",
    since: dt.datetime | None = None,
) -> QuerySet[AuditEntry]:
    """The audit log for moderators, newest first; ``actor`` is a username
    ("BenchHub" for automatic changes)."""
    entries = AuditEntry.objects.select_related("actor", "submission").order_by(
        "-created_at", "-id"
    )
    if action:
        entries = entries.filter(action=action)
    if actor == "BenchHub":
        entries = entries.filter(actor__isnull=True)
    elif actor:
        entries = entries.filter(actor__username=actor)
    if submission:
        entries = entries.filter(submission__uuid=submission)
    if since:
        entries = entries.filter(created_at__gte=since)
    return entries


def autoflag_candidates(*, limit: int = 100) -> dict[int, list[Measurement]]:
    """Recent pending or approved-on-arrival submissions with a measurement
    whose outlier score reaches the threshold, never approved by a person
    (who saw the evidence; a flagged one is neither pending nor approved):
    submission id → those measurements."""
    threshold = settings.BENCHHUB_AUTOFLAG_SCORE
    recent = timezone.now() - dt.timedelta(days=30)
    approved_by_a_person = AuditEntry.objects.filter(
        submission=OuterRef("run__submission"),
        action=AuditEntry.Action.APPROVE,
        actor__isnull=False,
    )
    approved_on_arrival = AuditEntry.objects.filter(
        submission=OuterRef("run__submission"),
        action=AuditEntry.Action.APPROVE,
        actor__isnull=True,
    )
    measurements = (
        Measurement.objects.filter(
            Q(outlier_score__gte=threshold) | Q(outlier_score__lte=-threshold),
            Q(run__submission__status=Status.PENDING)
            | Q(Exists(approved_on_arrival), run__submission__status=Status.APPROVED),
            run__submission__created_at__gte=recent,
        )
        .exclude(Exists(approved_by_a_person))
        .select_related("metric", "run")
        .order_by("run__submission_id", "id")
    )
    found: dict[int, list[Measurement]] = defaultdict(list)
    for m in measurements:
        if len(found) >= limit and m.run.submission_id not in found:
            break
        found[m.run.submission_id].append(m)
    return found


# --- dimension values -------------------------------------------------------------


def dimension_value_counts() -> dict[tuple[str, str], list[tuple[str, int]]]:
    """For each field alias rules may rewrite, its values and how many runs
    use each, most used first: where two spellings of one thing show up."""
    from benchhub.moderation.aliases import ALIASABLE

    out = {}
    for (dimension, name), spec in ALIASABLE.items():
        rows = (
            spec.model.objects.values_list(name)
            .annotate(runs=Count("runs"))
            .filter(runs__gt=0)
            .order_by("-runs", name)
        )
        merged: dict[str, int] = defaultdict(int)
        for value, runs in rows:
            merged[value] += runs
        out[dimension, name] = sorted(merged.items(), key=lambda item: (-item[1], item[0]))
    return out


def alias_rule_list() -> QuerySet[AliasRule]:
    return AliasRule.objects.select_related("created_by").order_by("dimension", "field", "to_value")
