"""Tests of the baselines app."""


def baselines_callbacks(callbacks: list) -> list:
    """The on-commit callbacks of the baselines app among those an upload queued (kept
    comparison answers queue their own)."""
    return [
        callback for callback in callbacks if callback.__module__.startswith("benchhub.baselines")
    ]
