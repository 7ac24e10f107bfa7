"""Changes between two versions of a server (``/changes/?engine=postgresql&from=16&to=17``).

Evidence is paired by environment: only an environment (the same hardware,
storage, operating system and client) that has runs of both versions says
anything, and it says it by comparing its runs of the new version with its
runs of the old one. Each run counts once per metric, at its best point for
that metric. Per benchmark and metric, every paired environment's verdict is
listed; the change is called only when paired environments agree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from benchhub_contract.verdicts import RunValues, Verdict, verdict
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection
from django.db.models import Case, F, IntegerField, Q, Value, When
from rest_framework.exceptions import ValidationError

from benchhub.lib.api import FieldErrors
from benchhub.lib.collector import cyclic_gc_paused
from benchhub.lib.spread import spread_of
from benchhub.results import selectors
from benchhub.results.filters import closed_value
from benchhub.results.models import Client, Hardware, Metric, OperatingSystem, Run, Storage
from benchhub.results.normalization.versions import version_order

BETTER, WORSE = "better", "worse"


class InvalidChanges(FieldErrors):
    """Versions that cannot be compared."""


@dataclass(frozen=True)
class Evidence:
    """One environment that ran both versions."""

    hardware: Hardware
    storage: Storage
    os: OperatingSystem
    client: Client
    before: list[RunValues]
    after: list[RunValues]
    verdict: Verdict  # after against before

    @property
    def before_median(self) -> float:
        return spread_of(v.value for v in self.before).median

    @property
    def after_median(self) -> float:
        return spread_of(v.value for v in self.after).median


@dataclass
class MetricChange:
    benchmark: str
    metric: str
    unit: str
    direction: str
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def call(self) -> str:
        """better or worse when every paired environment says so, else mixed or no change."""
        words = {e.verdict.verdict for e in self.evidence}
        if words == {BETTER}:
            return BETTER
        if words == {WORSE}:
            return WORSE
        if BETTER in words or WORSE in words:
            return "mixed"
        return "no clear change"


@dataclass
class Changes:
    engine: str
    before: str
    after: str
    metrics: list[MetricChange]
    unpaired_runs: int  # runs on an environment that ran only one of the versions: not evidence


def _version_q(version: str, prefix: str = "run__server") -> Q:
    return Q(**{f"{prefix}__version_major": version}) | Q(
        **{f"{prefix}__version_major__startswith": version + "."}
    )


def changes_build(*, user: User | AnonymousUser, engine: str, before: str, after: str) -> Changes:
    errors = {}
    try:
        engine = closed_value("engine", engine)
    except ValidationError as exc:
        errors.update({k: str(v) for k, v in exc.detail.items()})
    for key, value in (("from", before), ("to", after)):
        if not value or not all(part.isdigit() for part in value.split(".")) or not value.isascii():
            errors[key] = f"{value!r} is not a version number such as 16 or 10.11"
    if not errors and before == after:
        errors["to"] = "the same version as from: nothing to compare"
    if errors:
        raise InvalidChanges(errors)

    # One row per run and metric (RunMetric, kept at upload: a run's least and
    # greatest value of the metric), its best value: grouping every measurement of
    # both versions' runs by run and metric took most of the page's time. What the
    # run and the metric are comes from their own small queries (as columns of each
    # row, the run's four ids and side cost more to send and read than the rows).
    # The ranked metrics, read once: their ids name the rows.
    metric_keys = {
        metric.pk: (metric.benchmark.name, metric.name, metric.unit, metric.direction)
        for metric in Metric.objects.filter(direction__in=("higher", "lower")).select_related(
            "benchmark"
        )
    }
    lower = [pk for pk, key in metric_keys.items() if key[-1] == "lower"]
    rows = (
        selectors.run_metric_list(user=user)
        .filter(run__server__engine=engine, metric_id__in=list(metric_keys))
        .filter(_version_q(before) | _version_q(after))
        .annotate(best=Case(When(metric_id__in=lower, then=F("low")), default=F("high")))
        .order_by("run_id", "metric_id")  # each side's runs in upload order
        .values_list("run_id", "metric_id", "best")
    )
    # The versions' runs by the same filter, not by thousands of ids: one the
    # summaries' visibility rule left out is never looked up.
    runs = {
        run_id: ((hw, st, os_id, cl), is_after)
        for run_id, hw, st, os_id, cl, is_after in Run.objects.filter(server__engine=engine)
        .filter(_version_q(before, prefix="server") | _version_q(after, prefix="server"))
        .annotate(
            is_after=Case(
                When(_version_q(after, prefix="server"), then=Value(1)),
                default=Value(0),
                output_field=IntegerField(),
            )
        )
        .values_list("id", "hardware_id", "storage_id", "os_id", "client_id", "is_after")
    }
    sides: dict[tuple, dict[tuple, tuple[list[RunValues], list[RunValues]]]] = defaultdict(
        lambda: defaultdict(lambda: ([], []))
    )
    runs_of: dict[tuple, set[int]] = defaultdict(set)
    # Read as the cursor gives them: Django's iteration of 30,000 rows of three
    # numbers (chunks, converters) cost more than their query. Tens of thousands of
    # acyclic tuples: built with the cyclic collector paused (benchhub.lib.collector).
    statement, params = rows.query.sql_with_params()
    with cyclic_gc_paused(), connection.cursor() as cursor:
        cursor.execute(statement, params)
        for run_id, metric_id, best in cursor.fetchall():
            env, is_after = runs[run_id]
            # A run is one observation of its machine: the verdict compares runs.
            sides[metric_keys[metric_id]][env][is_after].append(RunValues(best))
            runs_of[env].add(run_id)
    paired_keys = {env for envs in sides.values() for env, (b, a) in envs.items() if b and a}
    dimensions = _dimensions(paired_keys)
    metrics = []
    for (benchmark, metric, unit, direction), envs in sorted(sides.items()):
        change = MetricChange(benchmark, metric, unit, direction)
        for env, (old, new) in envs.items():
            if not (old and new):
                continue
            change.evidence.append(
                Evidence(
                    *(dimensions[i][env[i]] for i in range(4)),
                    before=old,
                    after=new,
                    verdict=verdict(new, old, direction=direction),
                )
            )
        if change.evidence:
            metrics.append(change)
    unpaired = {run for env, runs in runs_of.items() if env not in paired_keys for run in runs}
    return Changes(engine, before, after, metrics, len(unpaired))


def _dimensions(keys: set[tuple[int, int, int, int]]) -> list[dict]:
    models = (Hardware, Storage, OperatingSystem, Client)
    return [model.objects.in_bulk({key[i] for key in keys}) for i, model in enumerate(models)]


def changes_versions(*, user: User | AnonymousUser, engine: str) -> list[str]:
    """The major versions of ``engine`` with runs ``user`` may see, in version
    order (9.6 < 10 < 16; as text, 10 < 16 < 9.6): what the form's from and
    to offer."""
    runs = selectors.run_list(user=user).filter(server__engine=engine.strip().lower())
    majors = set(runs.order_by().values_list("server__version_major", flat=True).distinct())
    return sorted(majors - {""}, key=version_order)
