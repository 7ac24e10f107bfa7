"""``make test`` runs the suite on two pytest-xdist workers with ``--dist loadgroup``:
the tests of one ``xdist_group`` (those that start, kill and restart servers, those
that change the shared servers' settings) must run on one worker, one after the
other. A pytest of its own, on two workers, with the repository's root conftest.py."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
import os
from pathlib import Path

import pytest


def mark(name):
    with (Path(__file__).parent / "workers.txt").open("a") as file:
        file.write(f"{name} {os.environ['PYTEST_XDIST_WORKER']}\\n")


@pytest.mark.parametrize("i", range(6))
def test_spread(i):
    mark(f"spread{i}")


@pytest.mark.xdist_group("servers")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    mark(f"grouped{i}")


@pytest.mark.parametrize("i", range(6))
def test_spread_too(i):
    mark(f"too{i}")
"""


def environment_of_a_pytest_apart() -> dict[str, str]:
    """The environment of a pytest run inside this one, as if started apart: inheriting
    this worker's PYTEST_XDIST_WORKER and BENCHHUB_TEST_RUN, its session's end dropped
    the databases this worker's agent tests were still using (agents/tests/_databases.py
    names them from those two)."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PYTEST_") and name != "BENCHHUB_TEST_RUN"
    }


@pytest.mark.slow
def test_the_tests_of_one_group_run_on_one_worker(tmp_path):
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_groups.py").write_text(TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:django",
         "-n", "2", "--dist", "loadgroup", "-q"],
        cwd=tmp_path, env=environment_of_a_pytest_apart(), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    workers = dict(line.split() for line in (tmp_path / "workers.txt").read_text().splitlines())
    assert len(workers) == 18
    assert len({workers[f"grouped{i}"] for i in range(6)}) == 1, workers
    # the others still go to both workers: the run is parallel
    assert set(workers.values()) == {"gw0", "gw1"}


def test_every_test_named_for_the_shared_server_settings_group_exists():
    """A renamed file or test would leave the group silently, and run beside the tests
    whose "before" it changes."""
    # by its path: in the suite, "conftest" may name a folder's own conftest
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)

    for prefix in root_conftest.CHANGE_THE_SHARED_SERVERS:
        path, _, test = prefix.partition("::")
        source = (ROOT / path).read_text()
        assert f"def {test}" in source if test else "def test_" in source, prefix


def test_the_tests_that_change_the_shared_servers_are_in_one_group(pytestconfig):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         "-m", "xdist_group", "agents/tests/test_study_leftovers.py",
         "tests/agent/test_study_e2e.py", "agents/tests/test_backup.py"],
        cwd=ROOT, env=environment_of_a_pytest_apart(), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    files = {line.split("::")[0] for line in collected}
    assert files == {
        "agents/tests/test_study_leftovers.py",
        "tests/agent/test_study_e2e.py",
        "agents/tests/test_backup.py",
    }
    backup = [line for line in collected if line.startswith("agents/tests/test_backup.py")]
    assert backup == ["agents/tests/test_backup.py::test_same_core_pins_the_server_and_restores_it"]
