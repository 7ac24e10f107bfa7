"""The submission document's JSON Schema and the benchmark catalog.

This is the one thing the agent and the server share: both validate a
document with :func:`validation_errors` before sending or storing it.
"""

from __future__ import annotations

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
