"""external-sort against the real PostgreSQL and MariaDB: spills when memory is small,
does not when it is large, and reports only what each server really counts."""

from __future__ import annotations

import re

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import external_sort
from benchhub_agent.benchmarks.base import SilentProgress, Target

ROWS = 50_000


def run_sort(target: Target, **values) -> external_sort.BenchmarkResult:
    options = dbs.options(rows=ROWS, sort_memory=None, repeat=2, no_init=False)
    for key, value in values.items():
        setattr(options, key, value)
    return external_sort.run(target, options, SilentProgress())


def metrics(result: external_sort.BenchmarkResult) -> dict[str, external_sort.Measurement]:
    units = dbs.catalog_units("external-sort")
    found = {m.metric: m for m in result.measurements}
    for m in found.values():
        assert m.unit == units[m.metric]
    return found


def merge_passes(result: external_sort.BenchmarkResult) -> list[int]:
    return [int(n) for n in re.findall(r"Sort_merge_passes=(\d+)", result.notes[0])]


def test_postgresql_counts_the_temp_bytes_of_a_spilling_sort():
    target = dbs.postgresql("sort_pg")

    result = run_sort(target)

    found = metrics(result)
    assert set(found) == {"seconds", "temp_bytes_written", "temp_bytes_read"}
    assert all(s > 0 for s in found["seconds"].samples)
    # 50,000 rows of 20 characters cannot be sorted in 64 kB: every repetition spills,
    # and by the same amount since the data and the memory are the same.
    written = found["temp_bytes_written"].samples
    assert len(written) == 2 and written[0] == written[1] > ROWS * 20
    assert found["temp_bytes_read"].value > ROWS * 20
    assert result.parameters == {"rows": ROWS, "sort_memory": "64kB", "fetch": "all_rows"}
    assert "work_mem" in result.database["settings"]
    assert dbs.document_errors(result) == []


def test_postgresql_sort_in_memory_writes_no_temp_bytes():
    target = dbs.postgresql("sort_pg_memory")

    result = run_sort(target, sort_memory="256MB", repeat=1)

    found = metrics(result)
    assert found["temp_bytes_written"].samples == [0.0]
    assert found["temp_bytes_read"].value == 0


def test_mariadb_reports_its_merge_passes_and_no_invented_bytes():
    target = dbs.mariadb("sort_maria")

    result = run_sort(target)

    found = metrics(result)
    assert set(found) == {"seconds"}
    assert all(s > 0 for s in found["seconds"].samples)
    passes = merge_passes(result)
    assert len(passes) == 2 and all(n > 0 for n in passes)
    assert result.parameters["sort_memory"] == "32768"
    assert dbs.document_errors(result) == []


def test_mariadb_sort_in_memory_needs_no_merge_pass():
    target = dbs.mariadb("sort_maria_memory")

    result = run_sort(target, sort_memory=str(64 * 1024 * 1024), repeat=1)

    assert merge_passes(result) == [0]


def test_pin_is_refused_rather_than_recorded():
    with pytest.raises(ValueError, match="--pin"):
        run_sort(Target.parse(f"{dbs.PG_SERVER}/postgres"), pin="same_core")
