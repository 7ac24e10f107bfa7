"""The submission document's JSON Schema and the benchmark catalog.

This is the one thing the agent and the server share: both validate a
document with :func:`validation_errors` before sending or storing it.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jsonschema

SCHEMA_VERSION = 1


@functools.cache
def submission_schema() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("submission-v1.schema.json").read_text("utf-8")
    return json.loads(text)


@functools.cache
def benchmark_catalog() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("benchmarks.json").read_text("utf-8")
    return json.loads(text)


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    schema = submission_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@dataclass(frozen=True)
class DocumentError:
    """One problem in a document: where it is (a JSON path such as
    ``$.runs[0].measurements[3].value``) and what is wrong."""

    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def validation_errors(document: Any) -> list[DocumentError]:
    """Every schema violation in ``document``, in document order."""
    found = []
    for error in _validator().iter_errors(document):
        path = list(error.absolute_path)
        message = error.message
        missing = _REQUIRED.match(message) if error.validator == "required" else None
        if missing:
            # jsonschema reports a missing field on its parent; point at the field.
            path.append(missing.group(1))
            message = "this field is required"
        elif error.validator == "pattern" and "x-hint" in error.schema:
            # A regular expression tells a person little; the schema says in words.
            message = f"{error.instance!r} is not {error.schema['x-hint']}"
        found.append((path, DocumentError(json_path(path), message)))
    found.sort(key=lambda item: [(isinstance(p, str), p) for p in item[0]])
    return [error for _, error in found]


_REQUIRED = re.compile(r"^'(.+)' is a required property$")


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


def parse_time(value: str) -> dt.datetime | None:
    """An ISO 8601 date-time; naive ones are taken as UTC. None if unparsable."""
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _canonical(parameters: dict[str, Any]) -> str:
    return repr(sorted(parameters.items()))
