"""A benchmark's history over server versions (``/benchmarks/<name>/history/``).

For one engine, one metric at one point (``param.clients=16``; the catalog's
headline point where it names one) and the environments the filters pick
(machines like mine: the filters of every page), the median per server
version with its quartiles and n, versions in version order (15.2 < 15.10 <
16.1), each judged against the version before it.

The numbers are a comparison's with the version on x: the one aggregation
(comparisons.aggregation) computes them and the one verdict judges them. A
parameter the query leaves open, whose values would be pooled in one median,
is set to its most measured value and said so, so that the page and the API
answer the same numbers for the same address.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field

from benchhub_contract.verdicts import Verdict
from django.contrib.auth.models import AnonymousUser, User
from django.http import QueryDict

from benchhub.comparisons.aggregation import Comparison, Point
from benchhub.comparisons.apis import refuse_pooling
from benchhub.comparisons.query import ComparisonQuery, InvalidComparison, comparison_query_parse
from benchhub.comparisons.selectors import (
    comparison_build,
    comparison_may_pool,
    comparison_measurements,
    comparison_parameter_names,
    comparison_pooling,
)
from benchhub.lib.api import FieldErrors
from benchhub.results.filters import known_values
from benchhub.results.headlines import headline_rules
from benchhub.results.models import Benchmark, Metric, Submission
from benchhub.results.normalization.versions import version_order
from benchhub.results.selectors import run_list

# What the versions are: each release (15.2, 15.10) or each major (15, 16).
BY = {"version": "each release", "version_major": "each major version"}
# The history's own parameters; every other one is a measurement filter.
OWN_PARAMETERS = ("metric", "by", "format", "minimum_effect", "scale")
# How the page draws the value axis (?scale=log); the numbers are the same.
SCALES = ("linear", "log")
# A comparison's parameters a history sets itself.
NOT_HERE = ("benchmark", "x", "series", "reference")


class InvalidHistory(FieldErrors):
    """A history that cannot be drawn."""


@dataclass(frozen=True)
class Step:
    """One version: the comparison's point there, the machines behind it."""

    version: str
    point: Point  # median, n, quartiles, min, max; verdict against the previous version
    machines: int  # distinct hardware rows its runs ran on
    # The verdict's 95 % interval in the metric's unit: the previous
    # version's median times the ratio's bounds; None where it has none.
    interval: tuple[float, float] | None = None
    # The workload and agent versions its runs measured with, and what changed of them
    # since the version before: a step there may be the workload's, not the server's.
    workloads: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    changed: str = ""

    @property
    def verdict(self) -> Verdict | None:
        return self.point.verdict


@dataclass
class History:
    benchmark: Benchmark
    metric: Metric
    engine: str
    by: str
    unit: str  # the values': the metric's, or per core / GiB of RAM
    filters: dict[str, list[str]]  # as applied: the point, the environment
    chosen: dict[str, list[str]] = field(default_factory=dict)  # set here → values measured
    steps: list[Step] = field(default_factory=list)
    machines_differ: bool = False  # not every version ran on the same machines
    notes: list[str] = field(default_factory=list)
    minimum_effect: float = 0.05
    per: str | None = None


def history_build(*, user: User | AnonymousUser, benchmark_name: str, params: QueryDict) -> History:
    benchmark = Benchmark.objects.filter(name=benchmark_name.lower()).first()
    if benchmark is None:
        known = ", ".join(known_values("benchmark") or [])
        raise InvalidHistory({"benchmark": f"no benchmark {benchmark_name!r}; known: {known}"})
    query = _query(benchmark, params)
    comparison, chosen = _comparison(user, query)
    query = comparison.query
    history = History(
        benchmark,
        query.metric,
        query.filters["engine"][0].strip().lower(),
        query.x.name,
        query.unit,
        query.filters,
        chosen,
        minimum_effect=query.minimum_effect,
        per=query.per,
    )
    history.notes = list(comparison.notes)
    for name, values in chosen.items():
        others = ", ".join(values[1:6]) + (" …" if len(values) > 6 else "")
        history.notes.append(
            f"{name} is not fixed and its values differ within a version: shown at "
            f"{name}={values[0]}, the most measured value (the lowest of a tie; also "
            f"measured: {others}). Fix {name} above for another."
        )
    machines, workloads, agents = _runs_behind(user, query)
    series = comparison.series[0].points if comparison.series else []
    previous: Point | None = None
    for point in series:
        interval = None
        judged = point.verdict
        if previous is not None and judged is not None and None not in _bounds(judged):
            interval = (previous.value * judged.ratio_low, previous.value * judged.ratio_high)
        version = str(point.x)
        step = Step(
            version,
            point,
            len(machines.get(version, ())),
            interval,
            tuple(sorted(workloads.get(version, ()), key=version_order)),
            tuple(sorted(agents.get(version, ()), key=version_order)),
        )
        if history.steps:
            step = dataclasses.replace(step, changed=_changed(history.steps[-1], step))
        history.steps.append(step)
        previous = point
    sets = {frozenset(machines.get(step.version, ())) for step in history.steps}
    history.machines_differ = len(sets) > 1
    marked = [step.version for step in history.steps if step.changed]
    if marked:
        history.notes.append(
            f"The workload or the agent changed at {', '.join(marked)} (marked ▲): the step "
            "there may be theirs, not the server's."
        )
    return history


def _bounds(judged: Verdict) -> tuple[float | None, float | None]:
    return judged.ratio_low, judged.ratio_high


def _query(benchmark: Benchmark, params: QueryDict) -> ComparisonQuery:
    errors: dict[str, str] = {}
    rule = headline_rules().get(benchmark.name, {})
    metric = (params.get("metric") or "").strip().lower() or rule.get("metric", "")
    if not metric:
        errors["metric"] = "required: " + ", ".join(
            m.name for m in benchmark.metrics.order_by("id")
        )
    by = (params.get("by") or "version").strip()
    if by not in BY:
        errors["by"] = f"{by!r}: one of {', '.join(BY)}"
    scale = (params.get("scale") or "linear").strip()
    if scale not in SCALES:
        errors["scale"] = f"{scale!r}: one of {', '.join(SCALES)}"
    for key in NOT_HERE:
        if key in params:
            errors[key] = "not a history's: its x is the version (by) and it draws one line"
    engines = [value for value in params.getlist("engine") if value.strip()]
    if len(engines) != 1:
        known = ", ".join(known_values("engine") or [])
        errors["engine"] = (
            "one engine: a history is over one server's versions"
            + (f" (given {len(engines)})" if engines else "")
            + f"; known values: {known}"
        )
    raw = {
        key: [value for value in values if value.strip()]
        for key, values in params.lists()
        if key not in OWN_PARAMETERS
    }
    raw = {key: values for key, values in raw.items() if values}
    fixed = rule.get("at") if metric == rule.get("metric") else None
    if isinstance(fixed, dict) and not any(key.startswith("param.") for key in raw):
        for name, value in fixed.items():
            raw[f"param.{name}"] = [str(value)]
    raw.update(benchmark=[benchmark.name], metric=[metric], x=[by])
    if params.get("minimum_effect"):
        raw["minimum_effect"] = [params["minimum_effect"]]
    try:
        query = comparison_query_parse(raw)
    except InvalidComparison as exc:
        named = _named(dict(exc.errors))
        errors.update({key: message for key, message in named.items() if key not in errors})
    if errors:
        raise InvalidHistory(errors)
    return dataclasses.replace(query, steps=True)


def _named(errors: dict[str, str]) -> dict[str, str]:
    """The comparison's parameter names as the history's: its x is ``by``."""
    if "x" in errors:
        errors["by"] = errors.pop("x")
    return errors


def _comparison(
    user: User | AnonymousUser, query: ComparisonQuery
) -> tuple[Comparison, dict[str, list[str]]]:
    """The comparison, with each open parameter that would pool set to its
    most measured value (one more read), and those values by filter."""
    names = comparison_parameter_names(metric=query.metric)
    chosen: dict[str, list[str]] = {}
    try:
        for _ in range(2):
            may_pool = comparison_may_pool(query, *names)
            comparison = comparison_build(user=user, query=query, check_parameters=may_pool)
            if not (may_pool and comparison.parameters_may_differ and not comparison.is_empty):
                return comparison, chosen
            pooled = comparison_pooling(user=user, query=query)
            if not pooled:
                return comparison, chosen
            if chosen:  # fixed once already, and still pooled: say what, as the API does
                refuse_pooling(query, pooled)
            filters = dict(query.filters)
            for parameter in pooled:
                filters[parameter.filter] = [parameter.values[0]]
                chosen[parameter.filter] = parameter.values
            query = dataclasses.replace(query, filters=filters)
    except InvalidComparison as exc:
        raise InvalidHistory(_named(dict(exc.errors))) from exc
    raise AssertionError("unreachable: the second round returns or refuses")


def _runs_behind(user: User | AnonymousUser, query: ComparisonQuery) -> tuple[dict, dict, dict]:
    """Version → the hardware rows its runs ran on, the benchmark versions they ran and
    the agent versions that measured them (an import or an article's runs name none):
    one query, a row per combination."""
    rows = (
        comparison_measurements(user=user, query=query)
        .order_by()
        .values_list(
            query.x.path,
            "run__hardware_id",
            "run__benchmark_version",
            "run__submission__source",
            "run__submission__tool_version",
        )
        .distinct()
    )
    machines: dict[str, set[int]] = defaultdict(set)
    workloads: dict[str, set[str]] = defaultdict(set)
    agents: dict[str, set[str]] = defaultdict(set)
    for version, hardware, workload, source, tool_version in rows:
        machines[str(version)].add(hardware)
        workloads[str(version)].add(workload)
        if source == Submission.Source.AGENT and tool_version:
            agents[str(version)].add(tool_version)
    return machines, workloads, agents


def _changed(before: Step, step: Step) -> str:
    """What of the workload or the agent differs from the version before, in words."""
    said = []
    for what, old, new in (
        ("benchmark version", before.workloads, step.workloads),
        ("agent", before.agents, step.agents),
    ):
        if old and new and old != new:
            said.append(f"{what} {', '.join(old)} → {', '.join(new)}")
    return "; ".join(said)


def history_engines(*, user: User | AnonymousUser, benchmark: str) -> list[str]:
    """The engines with runs of ``benchmark`` that ``user`` may see: what a
    history can be drawn for."""
    runs = run_list(user=user).filter(benchmark__name=benchmark.lower()).order_by()
    return sorted(runs.values_list("server__engine", flat=True).distinct())
