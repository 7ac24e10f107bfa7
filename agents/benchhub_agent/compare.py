"""``run --like RUN_URL``: repeat a published run here and put the figures side by side.

The published run (GET /api/v1/runs/<id>/) says which benchmark ran with which
parameters; they become this machine's command line. After the run, the
server's baseline for the published run's comparability key (its fingerprint)
gives the community median and this run's percentile for each point.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import urlencode

from .benchmarks.base import Measurement
from .upload import HttpError, get_json


def options_for_run(run: dict[str, Any], parser: argparse.ArgumentParser) -> list[str]:
    """Command-line options of ``parser`` that reproduce the run's parameters.

    Run parameters map to the option of the same name (``warm_up`` → ``--warm-up``);
    a measurement parameter that varies across points (clients) becomes a list option.
    """
    options = {opt: action for action in parser._actions for opt in action.option_strings}
    argv: list[str] = []
    unmapped = []
    for name, value in (run.get("parameters") or {}).items():
        if not _append(argv, options, name, value):
            unmapped.append(name)
    for name, values in _point_values(run.get("measurements") or []).items():
        if not _append(argv, options, name, ",".join(str(v) for v in values)):
            unmapped.append(name)
    if run.get("repetitions") and "--repeat" in options:
        argv += ["--repeat", str(run["repetitions"])]
    if unmapped:
        names = ", ".join(sorted(set(unmapped)))
        print(f"warning: no option here for the run's parameters: {names}", file=sys.stderr)
    return argv


def _append(argv: list[str], options: dict[str, Any], name: str, value: Any) -> bool:
    option = "--" + name.replace("_", "-")
    action = options.get(option)
    if action is None:
        return False
    if isinstance(action, argparse._StoreTrueAction):
        if value is True:
            argv.append(option)
        return True
    argv += [option, str(value).lower() if isinstance(value, bool) else str(value)]
    return True


def _point_values(measurements: list[dict[str, Any]]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for measurement in measurements:
        for name, value in (measurement.get("parameters") or {}).items():
            values = found.setdefault(name, [])
            if value not in values:
                values.append(value)
    return {name: sorted(values, key=_sort_key) for name, values in found.items()}


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def point_key(metric: str, parameters: dict[str, Any] | None) -> tuple[str, tuple]:
    return metric, tuple(sorted((parameters or {}).items()))


def point_label(metric: str, parameters: dict[str, Any] | None) -> str:
    where = " ".join(f"{k}={v}" for k, v in sorted((parameters or {}).items()))
    return f"{metric} {where}".strip()


def comparison_rows(
    server: str,
    fingerprint: str | None,
    mine: list[Measurement],
    theirs: list[dict[str, Any]],
    token: str | None = None,
) -> list[list[str]]:
    """point | yours | that run | baseline median (n) | your percentile."""
    published = {point_key(m["metric"], m.get("parameters")): m for m in theirs}
    baseline: dict[tuple, dict[str, Any]] = {}
    if fingerprint:
        query = urlencode({"fingerprint": fingerprint})
        try:
            answer = get_json(f"{server}/api/v1/baselines/?{query}", token=token)
            for row in answer.get("results", []):
                baseline[point_key(row["metric"], row.get("parameters"))] = row
        except HttpError as exc:
            print(f"warning: no baseline: {exc}", file=sys.stderr)
    rows = []
    for m in mine:
        key = point_key(m.metric, m.parameters)
        other = published.get(key)
        base = baseline.get(key)
        rows.append(
            [
                point_label(m.metric, m.parameters),
                _number(m.value),
                _number(other["value"]) if other else "-",
                f"{_number(base['median'])} ({base['n']})" if base else "-",
                _rank(server, fingerprint, m, token) if fingerprint else "-",
            ]
        )
    return rows


def _rank(server: str, fingerprint: str, m: Measurement, token: str | None) -> str:
    query = {"fingerprint": fingerprint, "metric": m.metric, "value": m.value}
    query.update({f"param.{k}": v for k, v in (m.parameters or {}).items()})
    try:
        answer = get_json(f"{server}/api/v1/baselines/rank/?{urlencode(query)}", token=token)
    except HttpError:
        return "-"
    if not answer.get("n"):
        return "-"
    return f"{float(answer['percentile']):.0f}% of {answer['n']}"


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:.1f}"
    return str(value)


COMPARISON_HEADER = ["point", "yours", "that run", "baseline median (n)", "your percentile"]
