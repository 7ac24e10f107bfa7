"""Any N runs side by side (``/runs/compare/?run=…&run=…``): how do these runs
differ, in their numbers and in what they ran on?

For every metric and point all the runs measured: each run's value, its ratio
to the first run's and the verdict of the test that judges it (the same rule
as every comparison, on the runs' repetitions). Then the environments, the
database settings and the run parameters as rows with one column per run,
the rows that differ marked, so that "why is the second one faster" starts
from what is not the same.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from benchhub_contract.verdicts import RunValues, Verdict, ratio_of, verdict
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from benchhub.results import selectors
from benchhub.results.models import Measurement, Run

MAX_RUNS = 12

# The environment rows, in reading order: (section, label, how to read it off a run).
ENVIRONMENT_ROWS: tuple[tuple[str, str, str], ...] = (
    ("benchmark", "benchmark", "benchmark.name"),
    ("benchmark", "benchmark version", "benchmark_version"),
    ("benchmark", "repetitions", "repetitions"),
    ("hardware", "CPU", "hardware.cpu_model"),
    ("hardware", "CPU vendor", "hardware.cpu_vendor"),
    ("hardware", "cores", "hardware.cores"),
    ("hardware", "threads", "hardware.threads"),
    ("hardware", "RAM bytes", "hardware.ram_bytes"),
    ("hardware", "virtualization", "hardware.virtualization"),
    ("storage", "device", "storage.device_model"),
    ("storage", "kind", "storage.kind"),
    ("storage", "RAID", "storage.raid"),
    ("storage", "filesystem", "storage.filesystem"),
    ("storage", "mount options", "storage.mount_options"),
    ("storage", "I/O scheduler", "storage.io_scheduler"),
    ("os", "family", "os.family"),
    ("os", "distribution", "os.distribution"),
    ("os", "version", "os.version"),
    ("os", "kernel", "os.kernel"),
    ("database", "engine", "server.engine"),
    ("database", "version", "server.version"),
    ("database", "architecture", "server.architecture"),
    ("database", "configuration profile", "server.config_profile"),
    ("client", "protocol", "client.protocol"),
    ("client", "driver", "client.driver"),
    ("client", "driver version", "client.driver_version"),
    ("client", "CPU placement", "client.cpu_placement"),
    ("client", "load engine", "client.load_engine"),
)


class RunsNotComparable(ValueError):
    """The request names runs that cannot be put side by side; the message says which."""


@dataclass(frozen=True)
class Row:
    section: str
    label: str
    values: list[str]

    @property
    def differs(self) -> bool:
        return len(set(self.values)) > 1


@dataclass(frozen=True)
class Cell:
    value: float
    n: int
    ratio: float | None  # to the first run's value at this point
    verdict: Verdict | None  # None for the first run: it is the reference


@dataclass(frozen=True)
class PointRow:
    metric: str
    unit: str
    direction: str
    point: str  # "clients=20", "" for a metric without parameters
    cells: list[Cell]


@dataclass
class SideBySide:
    runs: list[Run]
    points: list[PointRow] = field(default_factory=list)
    environment: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def differing(self) -> list[Row]:
        return [row for row in self.environment if row.differs]


def _read(run: Run, path: str) -> str:
    value: Any = run
    for part in path.split("."):
        value = getattr(value, part)
    return "" if value is None else str(value)


def _point_text(parameters: dict[str, Any]) -> str:
    return ", ".join(f"{name}={parameters[name]}" for name in sorted(parameters))


def _environment(runs: list[Run]) -> list[Row]:
    rows = [
        Row(section, label, [_read(run, path) for run in runs])
        for section, label, path in ENVIRONMENT_ROWS
    ]
    for source, section in (
        ("parameters", "run parameter"),
        ("server.settings", "database setting"),
    ):
        dicts = [_read_dict(run, source) for run in runs]
        for name in sorted({key for d in dicts for key in d}):
            values = [_text(d.get(name)) for d in dicts]
            rows.append(Row(section, name, values))
    return rows


def _read_dict(run: Run, path: str) -> dict[str, Any]:
    value: Any = run
    for part in path.split("."):
        value = getattr(value, part)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _points(runs: list[Run]) -> list[PointRow]:
    """Every (metric, point) that each run measured, in catalog order of metrics."""
    by_run: dict[int, dict[tuple[str, str], _Measured]] = {run.pk: {} for run in runs}
    # The columns alone, not Measurement objects: twelve runs are a thousand
    # rows, and a model instance each was a tenth of the page's time.
    rows = (
        Measurement.objects.filter(run__in=runs)
        .order_by("metric_id", "id")
        .values_list(
            "run_id", "metric__name", "metric__unit", "metric__direction",
            "parameters", "value", "samples",
        )
    )  # fmt: skip
    for run_id, name, unit, direction, parameters, value, samples in rows:
        key = (name, _point_text(parameters))
        by_run[run_id][key] = _Measured(name, unit, direction, value, tuple(samples))
    first = by_run[runs[0].pk]
    common = [key for key in first if all(key in by_run[run.pk] for run in runs[1:])]
    points = []
    for key in common:
        reference = first[key]
        reference_side = [RunValues(reference.value, reference.samples)]
        cells = [
            Cell(value=reference.value, n=len(reference.samples) or 1, ratio=None, verdict=None)
        ]
        for run in runs[1:]:
            measured = by_run[run.pk][key]
            judged = verdict(
                [RunValues(measured.value, measured.samples)],
                reference_side,
                direction=reference.direction,
            )
            cells.append(
                Cell(
                    value=measured.value,
                    n=len(measured.samples) or 1,
                    ratio=ratio_of(measured.value, reference.value),
                    verdict=judged,
                )
            )
        points.append(
            PointRow(reference.metric, reference.unit, reference.direction, key[1], cells)
        )
    return points


class _Measured(NamedTuple):
    metric: str
    unit: str
    direction: str
    value: float
    samples: tuple[float, ...]


def runs_side_by_side(*, user: User | AnonymousUser, ids: list[str]) -> SideBySide:
    """The runs named by ``ids`` (in that order, each once), as the reader may see them."""
    if len(ids) < 2:
        raise RunsNotComparable("name at least two runs: ?run=<id>&run=<id>")
    if len(ids) > MAX_RUNS:
        raise RunsNotComparable(f"at most {MAX_RUNS} runs side by side; {len(ids)} were named")
    wanted: list[int] = []
    for text in ids:
        if not (text.strip().isascii() and text.strip().isdigit()) or len(text.strip()) > 18:
            raise RunsNotComparable(f"run {text!r} is not a run number")
        if int(text) in wanted:
            raise RunsNotComparable(f"run {int(text)} is named twice")
        wanted.append(int(text))
    visible = set(selectors.run_list(user=user).filter(pk__in=wanted).values_list("pk", flat=True))
    missing = [str(pk) for pk in wanted if pk not in visible]
    if missing:
        raise RunsNotComparable(f"no published run {', '.join(missing)} (or not one you can see)")
    runs = selectors.runs_in_order(wanted)
    result = SideBySide(runs=runs, points=_points(runs), environment=_environment(runs))
    if len({run.benchmark.name for run in runs}) > 1:
        result.notes.append("these runs ran different benchmarks: only their environments compare")
    elif not result.points:
        result.notes.append("these runs measured no metric at a point they all share")
    return result


def side_by_side_as_data(result: SideBySide, request: HttpRequest) -> dict[str, Any]:
    """What the page shows, for scripts: runs, points with each run's cell, environment rows."""
    return {
        "runs": [
            {"id": run.pk, "url": request.build_absolute_uri(reverse("results:run", args=[run.pk]))}
            for run in result.runs
        ],
        "points": [
            {
                "metric": row.metric,
                "unit": row.unit,
                "direction": row.direction,
                "point": row.point,
                "cells": [
                    {
                        "run": run.pk,
                        "value": cell.value,
                        "n": cell.n,
                        "ratio_to_first": cell.ratio,
                        "verdict": cell.verdict.as_dict() if cell.verdict else None,
                    }
                    for run, cell in zip(result.runs, row.cells, strict=True)
                ],
            }
            for row in result.points
        ],
        "environment": [
            {
                "section": row.section,
                "name": row.label,
                "values": row.values,
                "differs": row.differs,
            }
            for row in result.environment
        ],
        "notes": result.notes,
    }


CSV_HEADER = [
    "metric", "unit", "point", "run", "value", "n", "ratio_to_first",
    "verdict", "p_value", "ratio_low", "ratio_high",
]  # fmt: skip


def side_by_side_csv(result: SideBySide) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="runs-side-by-side.csv"'
    writer = csv.writer(response)
    writer.writerow(CSV_HEADER)
    for row in result.points:
        for run, cell in zip(result.runs, row.cells, strict=True):
            judged = cell.verdict
            writer.writerow(
                [
                    row.metric, row.unit, row.point, run.pk, repr(cell.value), cell.n,
                    "" if cell.ratio is None else repr(cell.ratio),
                    judged.verdict if judged else "",
                    "" if judged is None or judged.p_value is None else repr(judged.p_value),
                    "" if judged is None or judged.ratio_low is None else repr(judged.ratio_low),
                    "" if judged is None or judged.ratio_high is None else repr(judged.ratio_high),
                ]
            )  # fmt: skip
    return response


def side_by_side_chart(result: SideBySide) -> dict[str, Any]:
    """What the page's chart draws, per metric: each run's value at each
    common point as % of the first run's there (the first run is 100), from
    the ratios the table prints, with its verdict's 95 % interval (or None).
    Points where the first run measured 0 have no ratio and are left out of
    that metric's chart."""
    metrics: dict[str, dict[str, Any]] = {}
    for row in result.points:
        first = row.cells[0].value
        if first == 0:
            continue
        chart = metrics.setdefault(
            row.metric,
            {
                "unit": row.unit,
                "direction": row.direction,
                "points": [],
                "series": [
                    {"label": f"run {run.pk}", "values": [], "intervals": []} for run in result.runs
                ],
            },
        )
        chart["points"].append(row.point or row.metric)
        chart["series"][0]["values"].append(100.0)
        chart["series"][0]["intervals"].append(None)
        for series, cell in zip(chart["series"][1:], row.cells[1:], strict=True):
            # The table's own ratio; None (no bar) where it has no finite value.
            series["values"].append(None if cell.ratio is None else 100.0 * cell.ratio)
            # The interval its verdict reads, in % of the first run: drawn over the bar.
            judged = cell.verdict
            bounded = judged is not None and None not in (judged.ratio_low, judged.ratio_high)
            series["intervals"].append(
                [100.0 * judged.ratio_low, 100.0 * judged.ratio_high] if bounded else None
            )
    return {
        "reference": f"run {result.runs[0].pk}",
        "filename": "runs-" + "-".join(str(run.pk) for run in result.runs) + ".png",
        "metrics": metrics,
    }
