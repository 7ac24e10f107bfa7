"""No module of the project is over 600 lines, its tests and benchmarks
included: past that a module does several jobs, and a newcomer cannot read
it as one. Split it by job (results/services.py, storage.py and
dimensions.py show how; tests/comparisons/test_kept_answers_*.py, with
their conftest.py and kept_answers.py, show it for tests)."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = (
    "benchhub",
    "agents/benchhub_agent",
    "agents/benchhub_contract",
    "tests",
    "agents/tests",
    "benchmarks",
)
LIMIT = 600


def too_long(root: pathlib.Path = ROOT) -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            with path.open(encoding="utf-8") as lines:
                count = sum(1 for _ in lines)
            if count > LIMIT:
                found.append(f"{path.relative_to(root)}: {count} lines")
    return found


def test_no_module_is_over_600_lines():
    assert too_long() == []


def test_the_check_counts_lines(tmp_path):
    """A module one line over the limit is found in every folder held to
    it, the tests and benchmarks included; one at the limit is not, and
    migrations are left out."""
    folders = [
        "benchhub",
        "agents/benchhub_agent",
        "agents/benchhub_contract",
        "tests",
        "agents/tests",
        "benchmarks",
    ]
    for folder in folders:
        app = tmp_path / folder / "app"
        app.mkdir(parents=True)
        (app / "big.py").write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
        (app / "small.py").write_text("x = 1\n" * LIMIT, encoding="utf-8")
        (app / "migrations").mkdir()
        (app / "migrations" / "0001_initial.py").write_text("x = 1\n" * 2000, encoding="utf-8")

    assert too_long(tmp_path) == [f"{folder}/app/big.py: {LIMIT + 1} lines" for folder in folders]
