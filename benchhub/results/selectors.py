"""Reads of the results app. Every query that lists rows lives here, with
its joins spelled out, so that no page or endpoint queries in a loop."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Hardware,
    Measurement,
    OperatingSystem,
    Run,
    Storage,
    Submission,
)

User = AbstractBaseUser | AnonymousUser

RUN_RELATED = ("benchmark", "hardware", "storage", "os", "server", "client", "submission")


def _visible(user: User, prefix: str = "") -> Q:
    """Approved for everyone; a signed-in submitter also sees their own."""
    condition = Q(**{f"{prefix}status": Submission.Status.APPROVED})
    if user.is_authenticated:
        condition |= Q(**{f"{prefix}submitter": user})
    return condition


def submission_list(*, user: User) -> QuerySet[Submission]:
    return (
        Submission.objects.filter(_visible(user))
        .select_related("submitter")
        .order_by("-created_at", "-id")
    )


def submission_get(*, user: User, uuid) -> Submission | None:
    return submission_list(user=user).filter(uuid=uuid).first()


def run_list(*, user: User) -> QuerySet[Run]:
    return (
        Run.objects.filter(_visible(user, "submission__"))
        .select_related(*RUN_RELATED)
        .order_by("-id")
    )


def run_get(*, user: User, pk: int) -> Run | None:
    return (
        run_list(user=user)
        .select_related("submission__submitter")
        .prefetch_related("measurements__metric")
        .filter(pk=pk)
        .first()
    )


def measurement_list(*, user: User) -> QuerySet[Measurement]:
    return (
        Measurement.objects.filter(_visible(user, "run__submission__"))
        .select_related("metric", *(f"run__{name}" for name in RUN_RELATED))
        .order_by("-id")
    )


def _used_by_visible_runs(model, user: User) -> QuerySet:
    """Dimension rows referenced by at least one run the user may see: a
    pending upload must not reveal its machine before it is approved."""
    field = {
        Hardware: "hardware",
        Storage: "storage",
        OperatingSystem: "os",
        DatabaseServer: "server",
        Client: "client",
    }[model]
    visible_runs = Run.objects.filter(_visible(user, "submission__"), **{field: OuterRef("pk")})
    return model.objects.filter(Exists(visible_runs)).order_by("-id")


def hardware_list(*, user: User) -> QuerySet[Hardware]:
    return _used_by_visible_runs(Hardware, user)


def storage_list(*, user: User) -> QuerySet[Storage]:
    return _used_by_visible_runs(Storage, user)


def os_list(*, user: User) -> QuerySet[OperatingSystem]:
    return _used_by_visible_runs(OperatingSystem, user)


def server_list(*, user: User) -> QuerySet[DatabaseServer]:
    return _used_by_visible_runs(DatabaseServer, user)


def client_list(*, user: User) -> QuerySet[Client]:
    return _used_by_visible_runs(Client, user)


def benchmark_list() -> QuerySet[Benchmark]:
    return Benchmark.objects.prefetch_related("metrics").order_by("name")


@dataclass(frozen=True)
class SubmissionSummary:
    submission: Submission
    benchmarks: list[str]  # distinct, in order of first appearance
    servers: list[str]


def latest_submissions(*, user: User, limit: int = 10) -> list[SubmissionSummary]:
    submissions = submission_list(user=user).prefetch_related("runs__benchmark", "runs__server")
    return [
        SubmissionSummary(
            submission,
            list(dict.fromkeys(run.benchmark.name for run in submission.runs.all())),
            list(dict.fromkeys(str(run.server) for run in submission.runs.all())),
        )
        for submission in submissions[:limit]
    ]


def submission_runs(*, user: User, submission: Submission) -> QuerySet[Run]:
    """The runs of one submission the user may see, in document order, with
    how many measurements each holds (one query)."""
    return (
        run_list(user=user)
        .filter(submission=submission)
        .annotate(measurement_count=Count("measurements"))
        .order_by("position")
    )
