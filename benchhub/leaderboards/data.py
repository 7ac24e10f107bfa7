"""A leaderboard as data: what the API answers and the page's JSON link serves."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from benchhub.leaderboards.selectors import Leaderboard, Row


def _environment(row: Row) -> dict[str, Any]:
    env = row.environment
    return {
        "cpu": str(env.hardware),
        "cpu_model": env.hardware.cpu_model,
        "cores": env.hardware.cores,
        "ram_bytes": env.hardware.ram_bytes,
        "storage_kind": env.storage.kind,
        "filesystem": env.storage.filesystem,
        "mount_options": env.storage.mount_options,
        "io_scheduler": env.storage.io_scheduler,
        "os": str(env.os),
        "engine": env.server.engine,
        "version": env.server.version,
        "architecture": env.server.architecture,
        "config_profile": env.server.config_profile,
    }


def leaderboard_as_data(board: Leaderboard) -> dict[str, Any]:
    return {
        "benchmark": board.benchmark.name,
        "metric": {
            "name": board.metric.name,
            "unit": board.metric.unit,
            "direction": board.metric.direction,
        },
        "point": board.point,
        "filters": board.filters,
        "rows": [
            {
                "rank": rank,
                "environment": _environment(row),
                "median": row.median,
                "n": row.n,
                "relative": row.relative,
                "verdict": row.verdict.as_dict() if row.verdict else None,
                "runs": [reverse("results:run", args=[pk]) for pk in row.run_ids],
            }
            for rank, row in enumerate(board.rows, start=1)
        ],
        "more": board.more,
    }
