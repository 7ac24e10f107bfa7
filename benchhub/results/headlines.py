"""Each run's headline: the one number a reader scans a list of runs for.

The catalog names it per benchmark (``"headline"`` in benchmarks.json): a
metric, and either ``"at": "best"`` — the run's best point, e.g.
select-update's peak throughput and the clients where it peaked — or a fixed
point, e.g. sql-bench's TOTALS. The value is the run's own measurement
(the median of its repetitions, as stored), with the repetitions' count.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from benchhub_contract.schema import benchmark_catalog
from django.db.models import Case, F, FloatField, OuterRef, QuerySet, Subquery, Value, When

from benchhub.results.models import Measurement, Metric, Run
from benchhub.results.points import point_key


@dataclass(frozen=True)
class Headline:
    metric: str
    unit: str
    value: float
    point: dict[str, Any]  # where it was measured: the best point's parameters, or the fixed one
    n: int  # repetitions behind the value
    best: bool  # the run's best point rather than a fixed one

    @property
    def shown(self) -> str:
        """Four significant digits, never fewer than the whole number's."""
        if self.value == 0 or not math.isfinite(self.value):
            return f"{self.value:g}"
        decimals = min(6, max(0, 3 - math.floor(math.log10(abs(self.value)))))
        return f"{self.value:,.{decimals}f}"

    @property
    def where(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in sorted(self.point.items()))


@functools.cache
def headline_rules() -> dict[str, dict[str, Any]]:
    """benchmark → its headline rule, with the metric's unit and direction."""
    rules = {}
    for entry in benchmark_catalog()["benchmarks"]:
        rule = entry.get("headline")
        if rule is None:
            continue
        metric = next(m for m in entry["metrics"] if m["name"] == rule["metric"])
        rules[entry["name"]] = {**rule, "unit": metric["unit"], "direction": metric["direction"]}
    return rules


def _matches(rule: dict[str, Any], parameters: dict[str, Any]) -> bool:
    at = rule["at"]
    return at == "best" or all(parameters.get(k) == v for k, v in at.items())


def _better(rule: dict[str, Any], value: float, than: float) -> bool:
    return value > than if rule["direction"] == "higher" else value < than


def run_headlines(runs: list[Run]) -> dict[int, Headline]:
    """The headline of each run that has one: one query for the whole list."""
    wanted = {run.pk: run.benchmark.name for run in runs if run.benchmark.name in headline_rules()}
    metrics = {(b, headline_rules()[b]["metric"]) for b in set(wanted.values())}
    rows = Measurement.objects.filter(
        run_id__in=wanted,
        metric__in=Metric.objects.filter(
            benchmark__name__in=[b for b, _ in metrics], name__in=[m for _, m in metrics]
        ),
    ).values_list("run_id", "metric__name", "parameters", "value", "samples")
    found: dict[int, Headline] = {}
    for run_id, metric, parameters, value, samples in rows:
        rule = headline_rules()[wanted[run_id]]
        if metric != rule["metric"] or not _matches(rule, parameters):
            continue
        held = found.get(run_id)
        if held is None or _better(rule, value, held.value):
            found[run_id] = Headline(
                metric=metric,
                unit=rule["unit"],
                value=value,
                point=parameters,
                n=len(samples) or 1,
                best=rule["at"] == "best",
            )
    return found


def by_headline(runs: QuerySet[Run]) -> QuerySet[Run]:
    """``runs`` by benchmark, then best headline first; runs without one last."""
    cases = []
    for benchmark, rule in headline_rules().items():
        candidates = Measurement.objects.filter(
            run=OuterRef("pk"), metric__benchmark__name=benchmark, metric__name=rule["metric"]
        )
        if rule["at"] != "best":
            for name, value in rule["at"].items():
                candidates = candidates.filter(**{f"parameter_keys__{name}": point_key(value)})
        # Lower-is-better values are negated, so that one descending order is best first.
        sign = 1 if rule["direction"] == "higher" else -1
        best = candidates.order_by(F("value").desc() if sign == 1 else F("value").asc())
        cases.append(
            When(
                benchmark__name=benchmark,
                then=Subquery(best.values("value")[:1]) * Value(float(sign)),
            )
        )
    score = Case(*cases, default=Value(None), output_field=FloatField())
    return runs.annotate(headline_score=score).order_by(
        "benchmark__name", F("headline_score").desc(nulls_last=True), "-id"
    )
