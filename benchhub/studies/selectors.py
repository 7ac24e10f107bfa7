"""Reading studies: who may see one, and its table as the articles drew theirs —
the first varied factor along x, the second as series, each cell the median of
its runs' values, relative to the reference = 100 and judged against it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from benchhub_contract.verdicts import RunValues, Verdict, verdict
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from benchhub.comparisons.query import AXIS_DIMENSIONS
from benchhub.lib.spread import spread_of
from benchhub.results.models import Measurement, Run, Submission
from benchhub.studies.models import Study

# Fields shown as "held fixed" when every run of the study has the same value.
HELD_FIELDS = (
    "cpu_model", "cores", "storage_kind", "filesystem", "mount_options", "io_scheduler",
    "os_distribution", "os_version", "engine", "version", "architecture", "config_profile",
    "protocol", "cpu_placement", "load_engine",
)  # fmt: skip


def factor_value(run: Run, name: str) -> Any:
    value: Any = run
    for part in AXIS_DIMENSIONS[name].removeprefix("run__").split("__"):
        value = getattr(value, part)
    return "" if value is None else value


def study_list(*, user: User | AnonymousUser) -> QuerySet[Study]:
    """Public studies (every run approved) and the user's own."""
    unapproved = Study.objects.filter(~Q(runs__submission__status=Submission.Status.APPROVED))
    visible = Study.objects.exclude(pk__in=unapproved.values("pk"))
    if user.is_authenticated:
        visible = visible | Study.objects.filter(owner=user)
    return visible.distinct().select_related("metric__benchmark", "owner")


def study_get(*, user: User | AnonymousUser, uuid: Any) -> Study | None:
    return study_list(user=user).filter(uuid=uuid).first()


@dataclass
class Cell:
    values: list[RunValues]
    median: float
    relative: float | None = None
    verdict: Verdict | None = None

    @property
    def n(self) -> int:
        return len(self.values)


@dataclass
class StudyTable:
    x_values: list[Any]
    series: list[Any]
    cells: dict[tuple[Any, Any], Cell]
    reference: Any | None
    held: list[tuple[str, Any]]
    runs: list[Run] = field(default_factory=list)

    def rows(self) -> list[tuple[Any, list[Cell | None]]]:
        return [(x, [self.cells.get((s, x)) for s in self.series]) for x in self.x_values]


def _run_value(measurements: list[Measurement], point: dict, direction: str) -> RunValues | None:
    if point:
        found = [
            m for m in measurements
            if all(str(m.parameters.get(k)) == str(v) for k, v in point.items())
        ]  # fmt: skip
    else:
        found = measurements
    if not found:
        return None
    best = (
        min(found, key=lambda m: m.value)
        if direction == "lower"
        else max(found, key=lambda m: m.value)
    )
    return RunValues(best.value, tuple(best.samples or ()))


def _order(value: Any) -> tuple:
    return (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value).casefold())


def study_table(study: Study) -> StudyTable:
    runs = list(
        study.runs.select_related("hardware", "storage", "os", "server", "client").order_by("id")
    )
    by_run: dict[int, list[Measurement]] = defaultdict(list)
    for measurement in Measurement.objects.filter(run__in=runs, metric=study.metric):
        by_run[measurement.run_id].append(measurement)
    first, second = [*study.varied, None][:2]
    direction = study.metric.direction
    grouped: dict[tuple[Any, Any], list[RunValues]] = defaultdict(list)
    for run in runs:
        value = _run_value(by_run[run.pk], study.point, direction)
        if value is None:
            continue
        series = factor_value(run, second) if second else ""
        grouped[(series, factor_value(run, first))].append(value)
    x_values = sorted({x for _, x in grouped}, key=_order)
    series = sorted({s for s, _ in grouped}, key=_order)
    reference = (
        next((x for x in x_values if str(x).casefold() == study.reference.casefold()), None)
        if study.reference
        else None
    )
    cells = {
        key: Cell(values, spread_of(v.value for v in values).median)
        for key, values in grouped.items()
    }
    if reference is not None:
        # The reference in each series; a series without one (seed 003's raw device was
        # measured under one scheduler only) is relative to the only one there is.
        only = [cells[(s, reference)] for s in series if (s, reference) in cells]
        for (s, x), cell in cells.items():
            base = cells.get((s, reference)) or (only[0] if len(only) == 1 else None)
            if base is None or base.median == 0:
                continue
            cell.relative = 100.0 * cell.median / base.median
            if x != reference:
                cell.verdict = verdict(cell.values, base.values, direction=direction)
    held = []
    for name in HELD_FIELDS:
        if name in study.varied:
            continue
        values = {factor_value(run, name) for run in runs}
        if len(values) == 1 and (value := next(iter(values))) not in ("", None):
            held.append((name, value))
    return StudyTable(x_values, series, cells, reference, held, runs)


@dataclass
class Machine:
    """One study's values in the comparison of machines: per level of the
    first factor, % of that study's own reference (or of its best level when
    the study has none), and how its order of the levels agrees with the
    original's (pairs of levels in the same order, of those both measured)."""

    study: Study
    relative: dict[Any, float]
    agreeing: int | None = None
    pairs: int | None = None


@dataclass
class Machines:
    levels: list[Any]
    machines: list[Machine]
    basis: str  # what 100 is: "reference ext4" or "the best level"

    def rows(self) -> list[tuple[Any, list[float | None]]]:
        return [(x, [m.relative.get(x) for m in self.machines]) for x in self.levels]


def _relative_levels(table: StudyTable, direction: str) -> dict[Any, float]:
    """The first series' medians per level, as % of the reference's (or of the
    best level's, the seeds' "relative to the best")."""
    series = table.series[0] if table.series else ""
    medians = {x: c.median for x in table.x_values if (c := table.cells.get((series, x)))}
    if not medians:
        return {}
    if table.reference is not None and medians.get(table.reference):
        base = medians[table.reference]
    else:
        base = (min if direction == "lower" else max)(medians.values())
    return {x: 100.0 * value / base for x, value in medians.items() if base}


def machines_side_by_side(study: Study, repetitions: list[Study]) -> Machines | None:
    """The study and each study that repeated it on another machine, side by
    side relative to each one's own 100, with how closely each reproduced the
    original's ranking of the levels. None without a repetition."""
    if not repetitions:
        return None
    direction = study.metric.direction
    original = study_table(study)
    machines = [Machine(study, _relative_levels(original, direction))]
    for other in repetitions:
        machine = Machine(other, _relative_levels(study_table(other), direction))
        shared = [x for x in machines[0].relative if x in machine.relative]
        pairs = [(a, b) for i, a in enumerate(shared) for b in shared[i + 1 :]]
        machine.pairs = len(pairs)
        machine.agreeing = sum(
            1
            for a, b in pairs
            if (machines[0].relative[a] - machines[0].relative[b])
            * (machine.relative[a] - machine.relative[b])
            > 0
        )
        machines.append(machine)
    levels = [x for x in original.x_values if any(x in m.relative for m in machines)]
    extra = {x for m in machines[1:] for x in m.relative} - set(levels)
    levels += sorted(extra, key=_order)
    reference = original.reference
    basis = f"{study.varied[0]} {reference}" if reference is not None else "the best level"
    return Machines(levels, machines, basis)
