"""``make test`` runs the suite on two pytest-xdist workers with ``--dist loadgroup``:
the tests of one ``xdist_group`` (those that start, kill and restart servers, those
that change the shared servers' settings) must run on one worker, one after the
other. A pytest of its own, on two workers, with the repository's root conftest.py."""

from __future__ import annotations

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


@pytest.mark.slow
def test_the_tests_of_one_group_run_on_one_worker(tmp_path):
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_groups.py").write_text(TESTS)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:django",
         "-n", "2", "--dist", "loadgroup", "-q"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    workers = dict(line.split() for line in (tmp_path / "workers.txt").read_text().splitlines())
    assert len(workers) == 18
    assert len({workers[f"grouped{i}"] for i in range(6)}) == 1, workers
    # the others still go to both workers: the run is parallel
    assert set(workers.values()) == {"gw0", "gw1"}
