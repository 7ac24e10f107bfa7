"""Changes and histories as data: what ?format=json and the API answer."""

from __future__ import annotations

from typing import Any

from benchhub.releases.history import History
from benchhub.releases.selectors import Changes, Evidence


def _evidence(item: Evidence) -> dict[str, Any]:
    judged = item.verdict
    return {
        "cpu": str(item.hardware),
        "storage": str(item.storage),
        "os": str(item.os),
        "client": str(item.client),
        "before": {"median": item.before_median, "n": len(item.before)},
        "after": {"median": item.after_median, "n": len(item.after)},
        "verdict": judged.as_dict(),
    }


def changes_as_data(changes: Changes) -> dict[str, Any]:
    return {
        "engine": changes.engine,
        "from": changes.before,
        "to": changes.after,
        "unpaired_runs": changes.unpaired_runs,
        "metrics": [
            {
                "benchmark": change.benchmark,
                "metric": change.metric,
                "unit": change.unit,
                "direction": change.direction,
                "call": change.call,
                "evidence": [_evidence(item) for item in change.evidence],
            }
            for change in changes.metrics
        ],
    }


def history_as_data(history: History) -> dict[str, Any]:
    """What the history's chart draws and /api/v1/history/<benchmark>/ answers."""
    return {
        "benchmark": history.benchmark.name,
        "metric": {
            "name": history.metric.name,
            "unit": history.unit,
            "direction": history.metric.direction,
        },
        "per": history.per,
        "engine": history.engine,
        "by": history.by,
        "filters": history.filters,
        "chosen": history.chosen,
        "minimum_effect": history.minimum_effect,
        "versions": [
            {
                "version": step.version,
                "median": step.point.value,
                "n": step.point.n,
                "q1": step.point.q1,
                "q3": step.point.q3,
                "min": step.point.min,
                "max": step.point.max,
                "machines": step.machines,
                "against_previous": step.verdict.as_dict() if step.verdict else None,
                "interval": list(step.interval) if step.interval else None,
                "benchmark_versions": list(step.workloads),
                "agent_versions": list(step.agents),
                "changed": step.changed,
            }
            for step in history.steps
        ],
        "machines_differ": history.machines_differ,
        "notes": history.notes,
    }
