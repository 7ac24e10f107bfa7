"""Checks of a submission document beyond its JSON Schema: the catalog
(benchmarks, metrics, units), version strings, times and duplicates."""

from __future__ import annotations

from typing import Any

from benchhub_contract.schema import DocumentError, catalog_errors, validation_errors

from benchhub.results.normalization import UnknownEngineError, parse_server_version
from benchhub.results.normalization.empty import EMPTY_SHOWN, means_empty

SECTIONS = ("hardware", "storage", "os", "database", "client")


def run_environment(document: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The document's environment with the run's own sections replacing it."""
    return {**document.get("environment", {}), **run.get("environment", {})}


def document_errors(document: Any) -> list[DocumentError]:
    errors = validation_errors(document)
    if errors:
        return errors  # the checks below assume the document's shape
    return catalog_errors(document) + _environment_errors(document) + _empty_shown_errors(document)


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


# "(none)" is how the pages show an empty value, and as a filter or a
# reference it means that empty value; stored as a value of its own, it
# would be shown like the empty one and found by its filter with it. Mount
# options are the exception of old: there "(none)" is read as the empty set.
_EMPTY_SHOWN_MESSAGE = (
    f'"{EMPTY_SHOWN}" is how BenchHub shows an empty value, so it cannot be a value: '
    'leave the field out, or give "" for none'
)
_EMPTY_SET_FIELDS = {("storage", "mount_options")}


def _empty_shown_errors(document: dict[str, Any]) -> list[DocumentError]:
    """Every environment field and parameter whose text is "(none)"."""
    places = [("$.environment", document.get("environment", {}))]
    parameters = []
    for r, run in enumerate(document["runs"]):
        places.append((f"$.runs[{r}].environment", run.get("environment", {})))
        parameters.append((f"$.runs[{r}].parameters", run.get("parameters", {})))
        for m, measurement in enumerate(run["measurements"]):
            parameters.append(
                (f"$.runs[{r}].measurements[{m}].parameters", measurement.get("parameters", {}))
            )
    fields = [
        (f"{path}.{section}.{name}", value)
        for path, environment in places
        for section, content in environment.items()
        if isinstance(content, dict)
        for name, value in content.items()
        if (section, name) not in _EMPTY_SET_FIELDS
    ]
    fields.extend(
        (f"{path}.{name}", value) for path, given in parameters for name, value in given.items()
    )
    return [
        DocumentError(path, _EMPTY_SHOWN_MESSAGE)
        for path, value in fields
        if isinstance(value, str) and means_empty(value)
    ]
