"""Reads of the results app. Every query that lists rows lives here, with
its joins spelled out, so that no page or endpoint queries in a loop."""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Exists, F, OuterRef, Prefetch, Q, QuerySet

from benchhub.accounts.roles import is_moderator
from benchhub.results import events
from benchhub.results.filters import PARAM_NAME, RUN_FIELDS, can_be_empty
from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Hardware,
    Measurement,
    Metric,
    OperatingSystem,
    Run,
    RunMetric,
    Storage,
    Submission,
)
from benchhub.results.normalization.empty import EMPTY_SHOWN
from benchhub.results.normalization.versions import version_order

User = AbstractBaseUser | AnonymousUser

RUN_RELATED = ("benchmark", "hardware", "storage", "os", "server", "client", "submission")


def public_submissions_q(prefix: str = "") -> Q:
    """The one rule for what the public sees: approved submissions (a hidden
    or deleted one has its own status, so it is never approved). The
    baselines pool the same set."""
    return Q(**{f"{prefix}status": Submission.Status.APPROVED})


def _visible(user: User, prefix: str = "") -> Q:
    """Public for everyone; a signed-in submitter also sees their own,
    pending or hidden, until they delete it."""
    condition = public_submissions_q(prefix)
    if user.is_authenticated:
        condition |= Q(**{f"{prefix}submitter": user}) & ~Q(
            **{f"{prefix}status": Submission.Status.DELETED}
        )
    return condition


def submission_is_public(submission: Submission) -> bool:
    """public_submissions_q for one submission already loaded."""
    return submission.status == Submission.Status.APPROVED


def visible_in_lists(*, user: User, submission: Submission) -> bool:
    """_visible for one submission already loaded: whether the lists and the
    dimension pages show it to this user (a moderator opens others' pending
    submissions, but the lists do not show them)."""
    if submission_is_public(submission):
        return True
    return (
        user.is_authenticated
        and submission.submitter_id == user.pk
        and submission.status != Submission.Status.DELETED
    )


# A submission's stored document is up to BENCHHUB_MAX_UPLOAD_BYTES (2 MB):
# a list that loaded it for each row would read megabytes to print a uuid.
# Only the submission's own detail answer prints it.
DOCUMENT = "document"
# Of the submission, a measurement row prints only these (and the visibility
# rule reads status and submitter).
MEASUREMENT_SUBMISSION_FIELDS = ("id", "uuid", "status", "source", "submitter")


# ``status=`` on the submissions list: a status, or the moderation queue's
# grouping of what waits for a decision.
WAITING = "waiting"
SUBMISSION_LIST_STATUSES = (WAITING, *(choice.value for choice in Submission.Status))


def submission_list(*, user: User, status: str = "") -> QuerySet[Submission]:
    """The submissions ``user`` may see, newest first. With ``status``, a
    moderator's are the moderation queue's of that status (or, for
    "waiting", the queue's default: pending, flagged and those with open
    reports), everybody's, so that a script finds its work; anybody else's
    are those of their own visible ones with that status ("waiting":
    pending or flagged; readers' reports are the moderators' business)."""
    if status:
        if is_moderator(user):
            visible = events.hooks.moderation_queue(None if status == WAITING else [status])
        else:
            waiting = [Submission.Status.PENDING, Submission.Status.FLAGGED]
            states = waiting if status == WAITING else [status]
            visible = _visible(user) & Q(status__in=states)
    else:
        visible = _visible(user)
    return (
        Submission.objects.filter(visible)
        .select_related("submitter")
        .defer(DOCUMENT)
        .order_by("-created_at", "-id")
    )


def _one_submission(user: User) -> QuerySet[Submission]:
    """Where one submission is looked up by its uuid: moderators find every
    one that is not deleted, to review it; others, the ones they may see."""
    if is_moderator(user):
        return (
            Submission.objects.exclude(status=Submission.Status.DELETED)
            .select_related("submitter")
            .defer(DOCUMENT)
        )
    return submission_list(user=user)


def submission_get(*, user: User, uuid) -> Submission | None:
    return _one_submission(user).filter(uuid=uuid).first()


def submission_detail_get(*, user: User, uuid) -> Submission | None:
    """One submission with its document and its runs' benchmarks: two
    queries, however many runs it holds."""
    runs = Run.objects.select_related("benchmark").order_by("position")
    return (
        _one_submission(user)
        .defer(None)
        .prefetch_related(Prefetch("runs", queryset=runs))
        .filter(uuid=uuid)
        .first()
    )


def run_list(*, user: User) -> QuerySet[Run]:
    return (
        Run.objects.filter(_visible(user, "submission__"))
        .select_related(*RUN_RELATED)
        .defer(f"submission__{DOCUMENT}")
        .order_by("-id")
    )


def runs_in_order(ids: list[int]) -> list[Run]:
    """The runs with these ids, in this order, with their environment.

    One small query per relation instead of one eight-table join: on a big
    database PostgreSQL spends longer planning that join (every join order
    of eight tables) than running it. Still a fixed number of queries."""
    submissions = Submission.objects.defer(DOCUMENT).select_related("submitter")
    rows = Run.objects.filter(pk__in=ids).prefetch_related(
        Prefetch("submission", queryset=submissions),
        *(name for name in RUN_RELATED if name != "submission"),
    )
    by_id = {run.pk: run for run in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


def _runs_of_one_submission(user: User) -> QuerySet[Run]:
    """Runs as their submission is found (_one_submission): a moderator
    reviewing a pending or rejected submission sees and opens its runs."""
    if is_moderator(user):
        return (
            Run.objects.exclude(submission__status=Submission.Status.DELETED)
            .select_related(*RUN_RELATED)
            .defer(f"submission__{DOCUMENT}")
        )
    return run_list(user=user)


def run_get(*, user: User, pk: int) -> Run | None:
    return (
        _runs_of_one_submission(user)
        .select_related("submission__submitter")
        .prefetch_related("measurements__metric")
        .filter(pk=pk)
        .first()
    )


def run_origin(*, pk: int) -> Run:
    """A run with who measured it (its submission's source and tool) and on
    which engine: what tells whether the agent can repeat it."""
    return (
        Run.objects.select_related("submission", "server")
        .only(
            "benchmark_version",
            "server__engine",
            "submission__source",
            "submission__tool",
        )
        .get(pk=pk)
    )


def submission_metric_ids(submission: Submission) -> set[int]:
    """The metrics ``submission``'s measurements are of (what a change of its
    status changes, for public_data_changed)."""
    return set(
        Measurement.objects.filter(run__submission=submission)
        .values_list("metric_id", flat=True)
        .distinct()
    )


def measurement_list(*, user: User, by_run_copy: bool = False) -> QuerySet[Measurement]:
    """``by_run_copy``: by Run.submission_status (comparisons: no join to submissions)."""
    unprinted = [
        f"run__submission__{field.name}"
        for field in Submission._meta.concrete_fields
        if field.name not in MEASUREMENT_SUBMISSION_FIELDS
    ]
    visible = _visible(user, "run__submission__")
    if by_run_copy:  # public_submissions_q of run__submission_status, its owner's
        visible = public_submissions_q("run__submission_")
        if user.is_authenticated:
            visible |= Q(run__submission__submitter=user) & ~Q(run__submission_status="deleted")
    return (
        Measurement.objects.filter(visible)
        .select_related("metric", *(f"run__{name}" for name in RUN_RELATED))
        .defer(*unprinted)
        .order_by("-id")
    )


def run_metric_list(*, user: User) -> QuerySet[RunMetric]:
    """Each visible run's summary per metric (n, least and greatest value)."""
    return RunMetric.objects.filter(_visible(user, "run__submission__"))


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


def benchmark_catalog() -> QuerySet[Benchmark]:
    """The benchmarks by name, without their metrics."""
    return Benchmark.objects.order_by("name")


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
        _runs_of_one_submission(user)
        .filter(submission=submission)
        .annotate(measurement_count=Count("measurements"))
        .order_by("position")
    )


# --- the results browser ---------------------------------------------------------

# (query parameters, label, paths from Run): the dimensions the browser
# counts, in the order it shows them: what people compare first (database,
# filesystem, storage, CPU: DESIGN.md's comparisons) opens the list, the
# finer cuts follow. The query parameters are the API's filters; a facet
# over two of them ("postgresql 15") sets both.
FACETS: tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...] = (
    (("benchmark",), "Benchmark", ("benchmark__name",)),
    (("engine", "version_major"), "Database", ("server__engine", "server__version_major")),
    (("filesystem",), "Filesystem", ("storage__filesystem",)),
    (("storage_kind",), "Storage", ("storage__kind",)),
    (("cpu_model",), "CPU", ("hardware__cpu_model",)),
    (("os_distribution",), "Operating system", ("os__distribution",)),
    (("engine",), "Database engine", ("server__engine",)),
    (("version",), "Database version", ("server__version",)),
    (("cores",), "Cores", ("hardware__cores",)),
    (("mount_options",), "Mount options", ("storage__mount_options",)),
    (("io_scheduler",), "I/O scheduler", ("storage__io_scheduler",)),
    (("protocol",), "Client protocol", ("client__protocol",)),
    (("load_engine",), "Load engine", ("client__load_engine",)),
    (("source",), "Source", ("submission__source",)),
)

# What ?q= searches: every word must appear in one of these.
SEARCHED = (
    "hardware__cpu_model",
    "hardware__cpu_raw",
    "os__distribution",
    "os__distribution_raw",
    "os__version",
    "server__version",
    "server__version_raw",
)

SORTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "newest": ("newest first", ("-submission__created_at", "-id")),
    "oldest": ("oldest first", ("submission__created_at", "id")),
    "benchmark": ("benchmark", ("benchmark__name", "-id")),
    "version": ("database and version", ("server__engine", "-server__version_sort", "-id")),
    "cpu": ("CPU", ("hardware__cpu_model", "-id")),
    # By benchmark, then each run's headline, best first (headlines.by_headline).
    "headline": ("headline, best first", ()),
}


def run_search(runs: QuerySet[Run], text: str) -> QuerySet[Run]:
    """Every word in one of the SEARCHED fields. Matched in the small
    dimension tables first (``hardware_id IN (SELECT …)``): an OR across
    joined tables would be tested on every run instead."""
    for word in text.split()[:10]:
        condition = Q()
        by_relation: dict[str, Q] = defaultdict(Q)
        for path in SEARCHED:
            relation, field = path.split("__", 1)
            by_relation[relation] |= Q(**{f"{field}__icontains": word})
        for relation, matches in by_relation.items():
            model = Run._meta.get_field(relation).related_model
            condition |= Q(**{f"{relation}__in": model.objects.filter(matches).values("pk")})
        runs = runs.filter(condition)
    return runs


@dataclass(frozen=True)
class FacetValue:
    values: tuple[Any, ...]  # one per query parameter of the facet
    count: int

    @property
    def label(self) -> str:
        return " ".join(str(value) for value in self.values if value not in ("", None))


@dataclass(frozen=True)
class Facet:
    names: tuple[str, ...]  # the query parameters it sets
    label: str
    values: list[FacetValue]

    @property
    def name(self) -> str:
        return "+".join(self.names)


# The relations of a run the facets read, by the column that points at them.
_FACET_RELATIONS = {
    "benchmark": "benchmark_id",
    "hardware": "hardware_id",
    "storage": "storage_id",
    "os": "os_id",
    "server": "server_id",
    "client": "client_id",
}


def run_facets(runs: QuerySet[Run], *, with_parameters: bool) -> tuple[list[Facet], int]:
    """Counts of runs per value of every facet. The runs are grouped by the
    ids of their dimension rows (environments repeat, so there are far
    fewer groups than runs) in one query that joins nothing but what the
    filters need; each dimension's few rows are then read by id (one small
    query each) and the groups summed per facet here. ``with_parameters``
    adds the run parameters (run_param.<name>), which only mean something
    once one benchmark is chosen. Also returns how many runs there are
    (the groups' sum: the list needs no COUNT of its own)."""
    columns = [*_FACET_RELATIONS.values(), "submission__source"]
    if with_parameters:
        columns.append("parameters")
    groups = list(runs.order_by().values_list(*columns).annotate(n=Count("id")))
    fields: dict[str, list[str]] = defaultdict(list)
    for _, _, paths in FACETS:
        for path in paths:
            relation, field = path.split("__", 1)
            if relation in _FACET_RELATIONS and field not in fields[relation]:
                fields[relation].append(field)
    # Every facet reads one relation (the database facet: the server's
    # engine and major version): sum the runs per row of each relation,
    # then per facet value.
    per_row: dict[str, dict[Any, int]] = {relation: defaultdict(int) for relation in fields}
    sources: dict[Any, int] = defaultdict(int)
    parameters: dict[str, dict[tuple, int]] = defaultdict(lambda: defaultdict(int))
    source_at = len(_FACET_RELATIONS)
    positions = [(relation, list(_FACET_RELATIONS).index(relation)) for relation in fields]
    for group in groups:
        n = group[-1]
        for relation, position in positions:
            per_row[relation][group[position]] += n
        sources[group[source_at]] += n
        if with_parameters:
            for key, parameter in (group[-2] or {}).items():
                if isinstance(parameter, (str, int, float, bool)):
                    parameters[key][(_parameter_text(parameter),)] += n
    rows: dict[str, dict[Any, dict[str, Any]]] = {}
    for relation, names in fields.items():
        model = Run._meta.get_field(relation).related_model
        found = model.objects.filter(pk__in=list(per_row[relation])).values_list("pk", *names)
        rows[relation] = {pk: dict(zip(names, values, strict=True)) for pk, *values in found}
    counts: list[dict[tuple, int]] = [defaultdict(int) for _ in FACETS]
    for index, (_, _, paths) in enumerate(FACETS):
        relation = paths[0].split("__", 1)[0]
        if relation == "submission":
            for source, n in sources.items():
                counts[index][(source,)] += n
            continue
        names = [path.split("__", 1)[1] for path in paths]
        for pk, n in per_row[relation].items():
            row = rows[relation].get(pk, {})
            counts[index][tuple(row.get(name) for name in names)] += n
    facets = [
        Facet(names, label, _ranked(names, counts[index]))
        for index, (names, label, _) in enumerate(FACETS)
    ]
    for key, values in sorted(parameters.items()):
        if PARAM_NAME.match(key):
            name = f"run_param.{key}"
            facets.append(Facet((name,), f"{key} (run parameter)", _ranked((name,), values)))
    return facets, sum(group[-1] for group in groups)


def _parameter_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ranked(names: tuple[str, ...], counts: dict[tuple, int]) -> list[FacetValue]:
    """Most runs first, a tie in version order for a version (16beta2 before
    16.0), else alphabetically. An empty value is shown, and filtered on, as
    "(none)" (EMPTY_SHOWN), as a comparison's series of it is; a missing
    count (cores: None) is no value to filter on, and is left out."""
    shown: dict[tuple, int] = defaultdict(int)
    for values, n in counts.items():
        if any(
            value in ("", None) and not _can_be_empty(name)
            for name, value in zip(names, values, strict=True)
        ):
            continue
        shown[tuple(EMPTY_SHOWN if value in ("", None) else value for value in values)] += n

    def tie(values: tuple) -> tuple:
        return tuple(
            version_order(str(value)) if name in _VERSION_FACETS else (str(value).casefold(),)
            for name, value in zip(names, values, strict=True)
        )

    ranked = sorted(shown.items(), key=lambda item: (-item[1], tie(item[0])))
    return [FacetValue(values, n) for values, n in ranked]


_VERSION_FACETS = ("version", "version_major")


def _can_be_empty(name: str) -> bool:
    return name.startswith("run_param.") or can_be_empty(name)


# --- dimension and benchmark pages ---------------------------------------------


def primary_metrics(measurements: QuerySet[Measurement]) -> dict[str, Metric]:
    """Per benchmark, the first metric in catalog order that ``measurements``
    hold (throughput for select-update, seconds for sql-bench, tps_relative
    for the curated TPC-B data): what its summaries show. Two queries."""
    present = set(measurements.order_by().values_list("metric_id", flat=True).distinct())
    primary: dict[str, Metric] = {}
    metrics = Metric.objects.filter(pk__in=present).select_related("benchmark")
    for metric in metrics.order_by("benchmark__name", "id"):
        primary.setdefault(metric.benchmark.name, metric)
    return primary


SPREAD_GROUPS = ("run__benchmark__name", "run__server__engine", "run__server__version_major")


def spread_of_runs(run_ids: list[int], metrics: list[Metric]) -> list[dict[str, Any]]:
    """The values of the measurements of ``metrics`` in runs already known
    to be visible, per benchmark, engine, major version and parameters, in
    one query: the pages' summaries of their latest runs. The values, not a
    median per group: a cell of the page may join several groups, and its
    median is the median of all their values (``benchhub.lib.spread``).

    ``metric_id + 0`` keeps the metric index out of the plan: with it,
    PostgreSQL intersected the run index with the metric index (the
    primary metrics are two thirds of a million rows) and hashed every run,
    80 ms for a few thousand values instead of 20."""
    if not run_ids or not metrics:
        return []
    rows = (
        Measurement.objects.filter(run_id__in=run_ids)
        .alias(metric_plain=F("metric_id") + 0)
        .filter(metric_plain__in=[metric.pk for metric in metrics])
        .order_by()
        .values_list(*SPREAD_GROUPS, "parameters", "value")
    )
    groups: dict[str, dict[str, Any]] = {}
    for *keys, parameters, value in rows:
        key = json.dumps([*keys, parameters], sort_keys=True, default=str)
        group = groups.get(key)
        if group is None:
            group = groups[key] = dict(zip(SPREAD_GROUPS, keys, strict=True))
            group["parameters"] = parameters
            group["values"] = []
        group["values"].append(value)
    return list(groups.values())


def latest_run_ids(runs: QuerySet[Run], *, limit: int) -> list[int]:
    """The ids of the ``limit`` most recent of ``runs`` (already visible)."""
    return list(runs.order_by("-id").values_list("id", flat=True)[:limit])


def measurements_of_runs(run_ids: list[int]) -> QuerySet[Measurement]:
    """The measurements of runs already known to be visible (by id: the
    run index answers it without joining the visibility rule again)."""
    return Measurement.objects.filter(run_id__in=run_ids)


def run_parameter_counts(runs: QuerySet[Run]) -> list[tuple[dict, int]]:
    """Each distinct set of run parameters with how many runs used it."""
    rows = runs.order_by().values_list("parameters").annotate(n=Count("id")).order_by("-n")
    return [(parameters or {}, n) for parameters, n in rows]


def curated_citations(*, user: User, benchmark: Benchmark) -> list[dict[str, Any]]:
    """The articles whose data the visible curated submissions of a benchmark transcribe."""
    citations = (
        submission_list(user=user)
        .filter(source=Submission.Source.CURATED, runs__benchmark=benchmark)
        .order_by()
        .values_list("citation", flat=True)
        .distinct()
    )
    return [citation for citation in citations if citation]


def nearest_values(*, user: User, name: str, value: str, limit: int = 3) -> list[str]:
    """The known values of a free filter (``cpu_model``, ``filesystem`` …)
    closest to ``value``, among what the user may see: what to suggest
    when the value matched nothing. One query."""
    path = RUN_FIELDS[name][0]
    known = [
        str(known)
        for known in run_list(user=user).order_by().values_list(path, flat=True).distinct()[:5000]
        if known not in ("", None)
    ]
    folded = {known.casefold(): known for known in known}
    wanted = value.casefold()
    contains = [known for key, known in folded.items() if wanted in key or key in wanted]
    close = difflib.get_close_matches(wanted, list(folded), n=limit, cutoff=0.4)
    return list(dict.fromkeys([*contains, *(folded[key] for key in close)]))[:limit]
