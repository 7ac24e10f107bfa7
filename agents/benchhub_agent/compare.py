"""``run --like``'s table: that run, yours, the difference and its verdict, and the baseline.

Per point of the parameter space and metric: the published run's value and
yours, the difference in %, and what the test of it showed —
``benchhub_contract.verdicts``, the rule the server judges with (the
repetitions' samples of both runs; "better"/"worse" when significant and at
least 5 % apart, "equivalent" when the ratio's 95 % interval lies within
±5 %, "inconclusive" with that interval otherwise, "insufficient data" for
an unrepeated value) — then the server's baseline for the published run's
comparability key (its fingerprint): the community median, how many results
it is made of, and your percentile among them.
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from benchhub_contract.schema import metric_catalog
from benchhub_contract.verdicts import INCONCLUSIVE, RunValues, verdict

from .benchmarks.base import Measurement
from .upload import HttpError, get_json

COMPARISON_HEADER = [
    "point",
    "that run",
    "yours",
    "difference",
    "verdict",
    "baseline median (n)",
    "your percentile",
]
VERDICT_NOTE = (
    "verdict: the server's rule on both runs' repetitions (bootstrap of the ratio of medians): "
    "better/worse when p < 0.05 and at least 5 % apart; equivalent when the ratio's 95 % "
    "interval lies within +-5 %; inconclusive otherwise, with that interval (yours / that run's)"
)
NO_BASELINE = "no baseline yet"


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
    benchmark: str | None = None,
) -> list[list[str]]:
    published = {point_key(m["metric"], m.get("parameters")): m for m in theirs}
    baseline = _baselines(server, fingerprint, token)
    rows = []
    for m in mine:
        key = point_key(m.metric, m.parameters)
        other = published.get(key)
        base = baseline.get(key)
        direction = _direction(other, base, benchmark, m.metric)
        rows.append(
            [
                point_label(m.metric, m.parameters),
                _number(other["value"]) if other else "-",
                _number(m.value),
                _difference(m.value, other["value"]) if other else "-",
                _verdict(m, other, direction) if other else "-",
                f"{_baseline_number(base['median'])} ({base['n']})" if base else NO_BASELINE,
                _rank(server, fingerprint, m, token) if fingerprint and base else "-",
            ]
        )
    return rows


def _baselines(server: str, fingerprint: str | None, token: str | None) -> dict[tuple, Any]:
    if not fingerprint:
        return {}
    query = urlencode({"fingerprint": fingerprint})
    try:
        answer = get_json(f"{server}/api/v1/baselines/?{query}", token=token)
    except HttpError as exc:
        print(f"warning: no baseline: {exc}", file=sys.stderr)
        return {}
    return {point_key(r["metric"], r.get("parameters")): r for r in answer.get("results", [])}


def _direction(
    other: dict[str, Any] | None, base: dict[str, Any] | None, benchmark: str | None, metric: str
) -> str:
    for source in (other, base):
        if source and source.get("direction"):
            return str(source["direction"])
    entry = metric_catalog().get(benchmark or "", {}).get(metric, {})
    return str(entry.get("direction", ""))


def _verdict(mine: Measurement, other: dict[str, Any], direction: str) -> str:
    candidate = [RunValues(float(mine.value), tuple(float(s) for s in mine.samples))]
    samples = tuple(float(s) for s in other.get("samples") or ())
    reference = [RunValues(float(other["value"]), samples)]
    judged = verdict(candidate, reference, direction=direction)
    if judged.verdict != INCONCLUSIVE:
        return judged.verdict
    # with the interval that makes it so: how far either way the data still allow
    if judged.ratio_low is None or judged.ratio_high is None:
        return f"{INCONCLUSIVE}: no 95% interval"
    return f"{INCONCLUSIVE}: {judged.ratio_low:.3g}-{judged.ratio_high:.3g}x"


def _difference(mine: float, theirs: float) -> str:
    if not theirs:
        return "-"
    return f"{(mine / theirs - 1) * 100:+z.1f}%"  # a difference rounded to 0 is +0.0%


def _rank(server: str, fingerprint: str, m: Measurement, token: str | None) -> str:
    query = {"fingerprint": fingerprint, "metric": m.metric, "value": m.value}
    query.update({f"param.{k}": v for k, v in (m.parameters or {}).items()})
    try:
        answer = get_json(f"{server}/api/v1/baselines/rank/?{urlencode(query)}", token=token)
    except HttpError:
        return "-"
    if not answer.get("n"):
        return "-"
    if answer.get("percentile") is None:  # too few results, or all equal: no rank
        return f"not ranked (n={answer['n']})"
    return f"{float(answer['percentile']):.0f}% of {answer['n']}"


def _number(value: Any) -> str:
    """A value as the table prints it: 3 decimals (1 from 1000 up), and
    below 1 three significant digits, which 3 decimals would cut away
    (0.00012 printed "0", 0.0012 "0.001"); a very small one in powers of
    ten ("1e-9"). Zero is "0" whatever its sign: -0.0 printed "-0", as if
    below a 0 beside it ("z" in a format drops the sign of a zero)."""
    if not isinstance(value, float):
        return str(value)
    if value and abs(value) < 1:
        return re.sub(r"e-0*", "e-", f"{value:.3g}")  # 1e-09 → 1e-9
    return f"{value:z.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:.1f}"


def _baseline_number(value: Any) -> str:
    """A baseline's median at the precision it has: the server counts values
    at 4 significant digits (its baselines API says so), so its median 2650.5,
    the mean of two of them, may stand for 2650.65; printed "~2650", as the
    run page shows "≈2650" ("~": a Windows console may not print "≈")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return _number(value)
    return "~" + format(Decimal(f"{value:z.3e}").normalize(), "f")
