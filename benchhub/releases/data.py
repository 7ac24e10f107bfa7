"""Changes as data: what ?format=json answers."""

from __future__ import annotations

from typing import Any

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
