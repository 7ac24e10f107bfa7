"""No module of the project's code is over 600 lines: past that a module
does several jobs, and a newcomer cannot read it as one. Split it by job
(results/services.py, storage.py and dimensions.py show how). Tests and
benchmarks are not held to it."""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("benchhub", "agents/benchhub_agent", "agents/benchhub_contract")
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
    module = tmp_path / "benchhub" / "app" / "big.py"
    module.parent.mkdir(parents=True)
    module.write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
    (tmp_path / "benchhub" / "app" / "small.py").write_text("x = 1\n" * LIMIT, encoding="utf-8")
    migration = tmp_path / "benchhub" / "app" / "migrations" / "0001_initial.py"
    migration.parent.mkdir()
    migration.write_text("x = 1\n" * 2000, encoding="utf-8")
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir(parents=True)

    assert too_long(tmp_path) == [f"benchhub/app/big.py: {LIMIT + 1} lines"]
