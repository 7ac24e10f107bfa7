"""A study as data: what the API answers."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from benchhub.studies.models import Study
from benchhub.studies.selectors import StudyTable


def study_summary(study: Study, request: HttpRequest) -> dict[str, Any]:
    return {
        "uuid": str(study.uuid),
        "url": request.build_absolute_uri(reverse("studies:study", args=[study.uuid])),
        "title": study.title,
        "question": study.question,
        "owner": study.owner.get_username(),
        "benchmark": study.metric.benchmark.name,
        "metric": study.metric.name,
        "varied": study.varied,
        "reference": study.reference or None,
        "repeats": str(study.repeats.uuid) if study.repeats else None,
        "created_at": study.created_at.isoformat(),
    }


def study_as_data(study: Study, table: StudyTable, request: HttpRequest) -> dict[str, Any]:
    cells = []
    for (series, x), cell in sorted(table.cells.items(), key=lambda item: str(item[0])):
        cells.append(
            {
                "x": x,
                "series": series if len(study.varied) > 1 else None,
                "median": cell.median,
                "n": cell.n,
                "relative": cell.relative,
                "verdict": cell.verdict.as_dict() if cell.verdict else None,
            }
        )
    return {
        **study_summary(study, request),
        "unit": study.metric.unit,
        "direction": study.metric.direction,
        "point": study.point,
        "write_up": study.write_up,
        "citation": study.citation,
        "held": dict(table.held),
        "cells": cells,
        "runs": [
            request.build_absolute_uri(reverse("results:run", args=[r.pk])) for r in table.runs
        ],
    }
