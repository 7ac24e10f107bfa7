"""A benchmark's leaderboard: one row per comparable environment.

An environment is the hardware, storage, operating system and database
server rows a run points at (the server row holds the version and the
settings profile), so two runs share a row exactly when they ran on the
same normalized setup. Each run counts once, with its value of the metric
at its best point (or at the point the filters fix: ``param.clients=16``;
sql-bench's headline is its TOTALS); a row is the median of its runs,
with n runs, relative to the best row and judged against it by the test
every comparison uses.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from benchhub_contract.verdicts import RunValues, Verdict, verdict
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Max, Min
from django.http import QueryDict
from rest_framework.exceptions import ValidationError

from benchhub.lib.api import FieldErrors
from benchhub.lib.spread import spread_of
from benchhub.results import selectors
from benchhub.results.filters import MeasurementFilter
from benchhub.results.headlines import headline_rules
from benchhub.results.models import (
    Benchmark,
    DatabaseServer,
    Hardware,
    Metric,
    OperatingSystem,
    Storage,
)

MAX_ROWS = 100
# The leaderboard's own parameters; every other one is a measurement filter.
OWN_PARAMETERS = ("metric", "format")


class InvalidLeaderboard(FieldErrors):
    """A leaderboard that cannot be built."""


@dataclass(frozen=True)
class Environment:
    hardware: Hardware
    storage: Storage
    os: OperatingSystem
    server: DatabaseServer


@dataclass
class Row:
    environment: Environment
    values: list[RunValues]  # one per run: its value at its best (or the fixed) point
    run_ids: list[int]
    median: float = 0.0
    relative: float | None = None  # % of the best row: 100 for the best
    verdict: Verdict | None = None  # against the best row; None for the best itself

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def shade(self) -> int:
        """The colour step of ``relative``, 0 to 10."""
        return 0 if self.relative is None else max(0, min(10, round(self.relative / 10)))


@dataclass
class Leaderboard:
    benchmark: Benchmark
    metric: Metric
    point: str  # what each run's value is: "its best point" or the fixed point
    filters: dict[str, list[str]]
    rows: list[Row] = field(default_factory=list)
    more: int = 0  # environments beyond MAX_ROWS, not shown


def _metric(benchmark: Benchmark, name: str) -> Metric:
    metric = benchmark.metrics.filter(name=name).first()
    known = ", ".join(
        m.name for m in benchmark.metrics.order_by("id") if m.direction in ("higher", "lower")
    )
    if metric is None:
        raise InvalidLeaderboard(
            {"metric": f"{benchmark.name} has no metric {name!r}; ranked ones: {known}"}
        )
    if metric.direction not in ("higher", "lower"):
        raise InvalidLeaderboard(
            {"metric": f"{name} has no better direction, so nothing ranks by it; ranked: {known}"}
        )
    return metric


def leaderboard_build(
    *, user: User | AnonymousUser, benchmark_name: str, params: QueryDict
) -> Leaderboard:
    benchmark = Benchmark.objects.filter(name=benchmark_name).first()
    if benchmark is None:
        raise InvalidLeaderboard({"benchmark": f"no benchmark {benchmark_name!r}"})
    rule = headline_rules().get(benchmark.name, {})
    metric = _metric(benchmark, params.get("metric") or rule.get("metric", ""))
    filters = params.copy()
    for key in OWN_PARAMETERS:
        filters.pop(key, None)
    point = "each run's best point"
    fixed = rule.get("at") if metric.name == rule.get("metric") else None
    if isinstance(fixed, dict) and not any(key.startswith("param.") for key in filters):
        for name, value in fixed.items():
            filters[f"param.{name}"] = str(value)
    given_points = sorted(key for key in filters if key.startswith("param."))
    if given_points:
        point = ", ".join(f"{key.removeprefix('param.')}={filters[key]}" for key in given_points)
    filters["benchmark"] = benchmark.name
    filters["metric"] = metric.name
    board = Leaderboard(
        benchmark, metric, point, {k: v for k, v in filters.lists() if k != "benchmark"}
    )
    board.rows, board.more = _rows(user, filters, metric)
    return board


def _best_per_run(user: User | AnonymousUser, filters: QueryDict, metric: Metric) -> list[tuple]:
    measurements = MeasurementFilter(data=filters, queryset=selectors.measurement_list(user=user))
    if not measurements.is_valid():
        raise InvalidLeaderboard(
            {key: " ".join(map(str, messages)) for key, messages in measurements.errors.items()}
        )
    try:
        queryset = measurements.qs
    except ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"filters": exc.detail}
        raise InvalidLeaderboard(
            {k: " ".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in detail.items()}
        ) from exc
    # One row per run: its best value, by a hash aggregate over the metric's slice of
    # the covering index (a window function sorted every measurement of the metric).
    best = Max("value") if metric.direction == "higher" else Min("value")
    # The metric by its id as well as by the filter's name: the planner then reads that
    # slice of the covering index instead of every measurement of the benchmark's runs.
    per_run = (
        queryset.filter(metric_id=metric.pk)
        .order_by()
        .values("run_id", "run__hardware_id", "run__storage_id", "run__os_id", "run__server_id")
        .annotate(best=best)
        .values_list(
            "run_id",
            "run__hardware_id",
            "run__storage_id",
            "run__os_id",
            "run__server_id",
            "best",
        )
    )
    return list(per_run)


def _rows(user: User | AnonymousUser, filters: QueryDict, metric: Metric) -> tuple[list[Row], int]:
    grouped: dict[tuple[int, int, int, int], list[tuple[int, RunValues]]] = defaultdict(list)
    # A run is one observation of its environment: the verdict compares runs.
    for run_id, hardware, storage, os_id, server, value in _best_per_run(user, filters, metric):
        grouped[(hardware, storage, os_id, server)].append((run_id, RunValues(value)))
    higher = metric.direction == "higher"
    medians = {key: spread_of(v.value for _, v in runs).median for key, runs in grouped.items()}
    order = sorted(grouped, key=lambda key: medians[key], reverse=higher)
    shown, more = order[:MAX_ROWS], max(0, len(order) - MAX_ROWS)
    dimensions = _dimensions(shown)
    rows = []
    for key in shown:
        runs = grouped[key]
        rows.append(
            Row(
                environment=Environment(*(dimensions[i][key[i]] for i in range(4))),
                values=[value for _, value in runs],
                run_ids=[run_id for run_id, _ in runs],
                median=medians[key],
            )
        )
    if rows:
        best = rows[0]
        for row in rows:
            row.relative = _relative(row.median, best.median, higher)
            if row is not best:
                row.verdict = verdict(row.values, best.values, direction=metric.direction)
    return rows, more


def _relative(value: float, best: float, higher: bool) -> float | None:
    """% of the best: the value's share of the best (higher is better) or the best's share
    of the value (lower is better), so that 100 is the best and less is worse either way."""
    numerator, denominator = (value, best) if higher else (best, value)
    if denominator <= 0 or numerator < 0:
        return None
    return 100.0 * numerator / denominator


def _dimensions(keys: list[tuple[int, int, int, int]]) -> list[dict[int, Any]]:
    models = (Hardware, Storage, OperatingSystem, DatabaseServer)
    return [model.objects.in_bulk({key[i] for key in keys}) for i, model in enumerate(models)]
