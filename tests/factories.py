"""Submission documents for tests, built from the example in docs/."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parent.parent / "docs/examples/select-update-submission.json"
_EXAMPLE_DOCUMENT = json.loads(EXAMPLE.read_text())


def example_document(**environment: dict[str, Any]) -> dict[str, Any]:
    """The example select-update sweep with a fresh uuid; keyword arguments
    replace whole environment sections."""
    document = copy.deepcopy(_EXAMPLE_DOCUMENT)
    document["uuid"] = str(uuid.uuid4())
    document["environment"].update(environment)
    return document


def without(section: str, field: str, **values: Any) -> dict[str, Any]:
    """The example's environment ``section`` without ``field`` (stored
    empty), or with it set to ``values[field]``: keyword arguments of
    ``example_document`` and the documents built on it."""
    content = dict(_EXAMPLE_DOCUMENT["environment"][section])
    content.pop(field)
    return {section: content | values}


def small_document(**environment: dict[str, Any]) -> dict[str, Any]:
    """One run with two measurements: quick to store in bulk."""
    document = example_document(**environment)
    document["runs"][0]["measurements"] = [
        {"metric": "throughput", "unit": "tx/s", "parameters": {"clients": 1}, "value": 300.0},
        {"metric": "throughput", "unit": "tx/s", "parameters": {"clients": 20}, "value": 1500.0},
    ]
    return document


def sweep_document(
    values: dict[Any, float],
    *,
    metric: str = "throughput",
    unit: str = "tx/s",
    parameter: str = "clients",
    approximate: bool = False,
    **environment: dict[str, Any],
) -> dict[str, Any]:
    """One run of the example with one measurement of ``metric`` per
    ``{point: value}``: the shape comparisons aggregate."""
    document = example_document(**environment)
    document["runs"][0]["measurements"] = [
        {
            "metric": metric,
            "unit": unit,
            "parameters": {parameter: point},
            "value": value,
            "approximate": approximate,
        }
        for point, value in values.items()
    ]
    return document


def sql_bench_document(seconds: dict[str, float], filesystem: str) -> dict[str, Any]:
    """One sql-bench run on ``filesystem``: seconds per operation (seed 002's shape)."""
    document = sweep_document(
        seconds,
        metric="seconds",
        unit="s",
        parameter="operation",
        storage={"filesystem": filesystem},
    )
    document["runs"][0]["benchmark"] = "sql-bench"
    document["runs"][0]["parameters"] = {}
    return document


# Environment fields a run may leave empty, each as (filter or axis name,
# document section, field, another value): "(none)" filters by, and is a
# comparison's reference for, the runs that left it out.
EMPTY_ABLE = [
    ("filesystem", "storage", "filesystem", "xfs"),
    ("mount_options", "storage", "mount_options", "noatime"),
    ("io_scheduler", "storage", "io_scheduler", "kyber"),
    ("raid", "storage", "raid", "raid1"),
    ("device_model", "storage", "device_model", "WD Red"),  # matched by substring
    ("os_version", "os", "version", "13"),
    ("kernel", "os", "kernel", "6.12"),  # matched by prefix
    ("config_profile", "database", "config_profile", "my-huge.cnf"),
    ("driver", "client", "driver", "asyncpg"),
    ("load_engine", "client", "load_engine", "pgbench"),
    ("virtualization", "hardware", "virtualization", "kvm"),
    ("cpu_model", "hardware", "cpu", "AMD EPYC 7763"),  # matched by substring
    ("cpu_vendor", "hardware", "cpu", "AMD EPYC 7763"),
]
