"""Reading fixtures and wrapping parsed runs the way a caller would."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from benchhub_contract.importers import ImportedRuns
from benchhub_contract.schema import validation_errors

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text("utf-8")


def points(imported: ImportedRuns, run: int = 0) -> dict[tuple[Any, ...], float]:
    """(metric, sorted measurement parameters) → value, for exact assertions."""
    return {
        (m["metric"], *sorted(m.get("parameters", {}).items())): m["value"]
        for m in imported.runs[run]["measurements"]
    }


def assert_valid_document(imported: ImportedRuns) -> None:
    """Each run, in a minimal document with only the output's own facts, is schema-valid."""
    for run in imported.runs:
        single = ImportedRuns(runs=[run], facts=imported.facts, source=imported.source)
        errors = validation_errors(single.document(uuid=str(uuid.uuid4())))
        assert errors == [], [e.as_dict() for e in errors]
