"""Checks of a submission document beyond its JSON Schema: the catalog
(benchmarks, metrics, units), version strings, times and duplicates."""

from __future__ import annotations

from typing import Any

from benchhub_agent.schema import DocumentError, catalog_errors, validation_errors

from benchhub.results.normalization import UnknownEngineError, parse_server_version

SECTIONS = ("hardware", "storage", "os", "database", "client")


def run_environment(document: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The document's environment with the run's own sections replacing it."""
    return {**document.get("environment", {}), **run.get("environment", {})}


def document_errors(document: Any) -> list[DocumentError]:
    errors = validation_errors(document)
    if errors:
        return errors  # the checks below assume the document's shape
    return catalog_errors(document) + _environment_errors(document)


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
