"""What both test folders (tests/, agents/tests/) need from pytest-xdist.

``--dist loadgroup`` keeps the tests of one ``xdist_group`` on one worker by adding
``@group`` to their node ids on the workers. pytest 9.2 builds a node id from a
structured id, so the suffix pytest-xdist 3.8 writes no longer takes effect
(pytest-dev/pytest-xdist#1386): every group was spread over the workers, and the
tests that start, kill and restart servers ran beside each other. This writes the
suffix where pytest 9.2 reads it; with a pytest where pytest-xdist's own suffix
took effect, it finds the suffix there and does nothing.
"""

from __future__ import annotations

import pytest


def group_suffix(item: pytest.Item) -> str:
    """``@name`` as pytest-xdist names an item's groups (joined, sorted), or ""."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "@" + "_".join(sorted(names)) if names else ""


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own hook and the conftests' groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on the workers only
        return
    for item in items:
        suffix = group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)
