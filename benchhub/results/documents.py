"""Checks of a submission document beyond its JSON Schema: the catalog
(benchmarks, metrics, units), version strings, times and duplicates."""

from __future__ import annotations

import datetime as dt
from typing import Any

from benchhub_agent.schema import DocumentError, metric_catalog, validation_errors

from benchhub.results.normalization import UnknownEngineError, parse_server_version

SECTIONS = ("hardware", "storage", "os", "database", "client")


def run_environment(document: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The document's environment with the run's own sections replacing it."""
    return {**document.get("environment", {}), **run.get("environment", {})}


def document_errors(document: Any) -> list[DocumentError]:
    errors = validation_errors(document)
    if errors:
        return errors  # the checks below assume the document's shape
    return _catalog_errors(document) + _environment_errors(document)


def _catalog_errors(document: dict[str, Any]) -> list[DocumentError]:
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
                times[field] = parse_time(run[field])
                if times[field] is None:
                    errors.append(
                        DocumentError(
                            f"{path}.{field}",
                            f"{run[field]!r} is not a date-time like 2026-11-20T10:00:00Z",
                        )
                    )
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


def _environment_errors(document: dict[str, Any]) -> list[DocumentError]:
    errors = []
    top = document.get("environment", {}).get("database")
    if top is not None:
        errors.extend(_database_errors(top, "$.environment.database"))
    for r, run in enumerate(document["runs"]):
        own = run.get("environment", {}).get("database")
        if own is not None:
            errors.extend(_database_errors(own, f"$.runs[{r}].environment.database"))
        elif top is None:
            errors.append(
                DocumentError(
                    f"$.runs[{r}].environment.database",
                    "no database described: give environment.database in the document "
                    "or in this run",
                )
            )
    return errors


def _database_errors(section: dict[str, Any], path: str) -> list[DocumentError]:
    try:
        parse_server_version(section["version_string"], section.get("engine"))
    except UnknownEngineError as exc:
        return [DocumentError(f"{path}.version_string", str(exc))]
    return []


def parse_time(value: str) -> dt.datetime | None:
    """An ISO 8601 date-time; naive ones are taken as UTC. None if unparsable."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _canonical(parameters: dict[str, Any]) -> str:
    return repr(sorted(parameters.items()))
