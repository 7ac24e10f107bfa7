"""The benchmark catalog (benchmarks.json) and what a document must agree
with it on: benchmarks, metrics, units, ranges, points."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from .errors import DocumentError
from .times import parse_time, time_problem


@functools.cache
def benchmark_catalog() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("benchmarks.json").read_text("utf-8")
    return json.loads(text)


def metric_catalog() -> dict[str, dict[str, dict[str, Any]]]:
    """benchmark name → metric name → metric definition."""
    return {
        b["name"]: {m["name"]: m for m in b["metrics"]} for b in benchmark_catalog()["benchmarks"]
    }


def catalog_errors(document: dict[str, Any]) -> list[DocumentError]:
    """What the schema cannot say: benchmarks and metrics from the catalog,
    units, measurement points given once per run, start before end."""
    catalog = metric_catalog()
    errors = []
    for r, run in enumerate(document["runs"]):
        path = f"$.runs[{r}]"
        metrics = catalog.get(run["benchmark"])
        if metrics is None:
            known = ", ".join(sorted(catalog))
            errors.append(
                DocumentError(
                    f"{path}.benchmark", f"unknown benchmark {run['benchmark']!r}; known: {known}"
                )
            )
            continue
        times = {}
        for field in ("started_at", "ended_at"):
            if field in run:
                problem = time_problem(run[field])
                if problem:
                    errors.append(DocumentError(f"{path}.{field}", problem))
                else:
                    times[field] = parse_time(run[field])
        started, ended = times.get("started_at"), times.get("ended_at")
        if started and ended and ended < started:
            errors.append(DocumentError(f"{path}.ended_at", "ended_at is before started_at"))
        seen: dict[tuple[str, str], int] = {}
        for m, measurement in enumerate(run["measurements"]):
            mpath = f"{path}.measurements[{m}]"
            definition = metrics.get(measurement["metric"])
            if definition is None:
                known = ", ".join(sorted(metrics))
                errors.append(
                    DocumentError(
                        f"{mpath}.metric",
                        f"benchmark {run['benchmark']!r} has no metric "
                        f"{measurement['metric']!r}; known: {known}",
                    )
                )
                continue
            unit = measurement.get("unit")
            if unit is not None and unit != definition["unit"]:
                errors.append(
                    DocumentError(
                        f"{mpath}.unit",
                        f"metric {measurement['metric']!r} is measured in "
                        f"{definition['unit']!r}, not {unit!r}",
                    )
                )
            errors.extend(_range_errors(definition, measurement, mpath))
            point = (measurement["metric"], _canonical(measurement.get("parameters", {})))
            if point in seen:
                errors.append(
                    DocumentError(
                        mpath,
                        f"duplicate of measurements[{seen[point]}]: same metric and parameters",
                    )
                )
            else:
                seen[point] = m
    return errors


def _range_errors(
    definition: dict[str, Any], measurement: dict[str, Any], path: str
) -> list[DocumentError]:
    """The value and samples within the metric's range in the catalog."""
    low, high = definition.get("minimum"), definition.get("maximum")
    value, samples = measurement["value"], measurement.get("samples", [])
    if (low is None or (low <= value and all(low <= sample for sample in samples))) and (
        high is None or (value <= high and all(sample <= high for sample in samples))
    ):
        return []  # the common case, without a path written for each number
    numbers = [("value", measurement["value"])] + [
        (f"samples[{i}]", sample) for i, sample in enumerate(measurement.get("samples", []))
    ]
    errors = []
    for where, number in numbers:
        if (low is not None and number < low) or (high is not None and number > high):
            bounds = f"from {'-∞' if low is None else low} to {'∞' if high is None else high}"
            errors.append(
                DocumentError(
                    f"{path}.{where}",
                    f"{number} is out of range for {definition['name']} ({bounds})",
                )
            )
    return errors


def _canonical(parameters: dict[str, Any]) -> str:
    return repr(sorted(parameters.items()))
