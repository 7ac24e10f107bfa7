"""What both test folders (tests/, agents/tests/) need from how the suite is started
and from pytest-xdist.

``--dist loadgroup`` keeps the tests of one ``xdist_group`` on one worker by adding
``@group`` to their node ids on the workers. pytest 9.2 builds a node id from a
structured id, so the suffix pytest-xdist 3.8 writes no longer takes effect
(pytest-dev/pytest-xdist#1386): every group was spread over the workers, and the
tests that start, kill and restart servers ran beside each other. This writes the
suffix where pytest 9.2 reads it; with a pytest where pytest-xdist's own suffix
took effect, it finds the suffix there and does nothing.
"""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background by a non-interactive shell (``make test &``)
    inherits SIGINT ignored, and so would every agent the tests stop with Ctrl-C: those
    tests would fail for how the suite was started. The default is restored, as a
    terminal gives it; a Python handler, unlike an ignored signal, is not inherited."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Tests that change what every client of the shared PostgreSQL and MariaDB sees (server
# settings a study applies and restores, the servers' CPU affinity a pinned run sets and
# restores) or that count the server's study databases and tablespaces: under
# pytest-xdist (--dist loadgroup, see the Makefile) they run on one worker, one after
# the other, so that no worker's "before" is another's change in progress.
SHARED_SERVER_SETTINGS = "shared-server-settings"
CHANGE_THE_SHARED_SERVERS = (
    "agents/tests/test_study.py::",
    "agents/tests/test_study_servers.py::",
    "agents/tests/test_study_leftovers.py::",
    "agents/tests/test_backup.py::test_same_core_pins_the_server_and_restores_it",
    "tests/agent/test_study_e2e.py::",
    "tests/agent/test_study_servers_e2e.py::",
    "tests/agent/test_backup_preset_e2e.py::",
)


# Before pytest-xdist turns the groups into node ids (and before the suffix below).
# pytest registers only names that begin with "pytest_"; specname says which hook.
@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_groups(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(CHANGE_THE_SHARED_SERVERS):
            item.add_marker(pytest.mark.xdist_group(SHARED_SERVER_SETTINGS))


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
