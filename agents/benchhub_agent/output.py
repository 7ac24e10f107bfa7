"""What the agent prints: result tables, and messages on stderr."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from .benchmarks import base


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def results_table(measurements: Sequence[base.Measurement]) -> str:
    """One row per point of the parameter space, one column per metric."""
    metrics: list[str] = []
    points: dict[tuple, dict[str, Any]] = {}
    for m in measurements:
        if m.metric not in metrics:
            metrics.append(m.metric)
        key = tuple(sorted(m.parameters.items()))
        points.setdefault(key, {})[m.metric] = m.value
    units = {m.metric: m.unit for m in measurements}
    header = ["point", *(f"{name} ({units[name]})" for name in metrics)]
    # A column with a fraction anywhere shows every value with decimals:
    # 7313.0 under 3847.7, not 7313 as if it were measured less precisely.
    fractional = {
        name
        for name in metrics
        if any(isinstance(v.get(name), float) and not v[name].is_integer() for v in points.values())
    }
    rows = []
    for key, values in points.items():
        label = " ".join(f"{k}={v}" for k, v in key) or "-"
        rows.append([label, *(_cell(values.get(name), name in fractional) for name in metrics)])
    return format_table(header, rows)


def _cell(value: Any, decimals: bool = False) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and (decimals or not value.is_integer()):
        # "z": a zero, or a value rounded to one, prints 0.000, never -0.000.
        return f"{value:z.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(int(value)) if isinstance(value, float) else str(value)


def say(message: str) -> None:
    print(message, file=sys.stderr)
