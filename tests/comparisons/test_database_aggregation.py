"""The two paths of a comparison give the same answers: PostgreSQL's
(percentile_cont over grouping keys, a sampled set of runs per cell) and
the embedded default's (every row read and aggregated in Python, as on
SQLite), run on the same rows of the same database."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from benchhub.comparisons import aggregation, selectors
from benchhub.comparisons.aggregation import cells_from_rows
from benchhub.comparisons.in_database import SplitGroups, cells_in_postgresql
from benchhub.comparisons.query import comparison_query_parse
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

# Every spelling a parameter may arrive in, with skewed values.
SPELLINGS = [
    20,
    20.0,
    "20",
    "20.0",
    " 20",
    2.5,
    "2.5",
    "2.50",
    "007",
    "-0",
    "1e5",
    100000,
    True,
    "true",
    "0.00001",
    0.00001,
    0.1,
    "0.1",
    "text",
    "Ext10",
    "ext2",
    -3,
    "-3",
    "0.1234567890123457",  # 16 significant digits, still Python's spelling
    "0.30000000000000001",  # 17, not Python's spelling (0.3)
    "1234567.1234567891",  # 17, not Python's spelling
]


def upload(user, filesystem: str, cores: int, scale: float, samples: list[float] | None = None):
    document = sweep_document(
        {str(index): 0.0 for index in range(len(SPELLINGS))},
        parameter="point",
        storage={"filesystem": filesystem},
        hardware={"cpu": "AMD EPYC", "cores": cores},
    )
    for index, (measurement, spelling) in enumerate(
        zip(document["runs"][0]["measurements"], SPELLINGS, strict=True)
    ):
        measurement["parameters"] = {"point": spelling}
        measurement["value"] = scale * (index + 1) ** 2  # skewed
        if samples:
            measurement["samples"] = [scale * (index + 1) ** 2 * s for s in samples]
    document["runs"][0]["parameters"] = {"rows": 100 if cores < 8 else 100.0, "mode": cores > 2}
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


@pytest.fixture
def varied(bob, monkeypatch):
    monkeypatch.setattr(aggregation, "VERDICT_RUNS", 3)  # sampling is exercised
    for run, scale in enumerate((1.0, 1.3, 0.7, 5.0, 1.1, 0.95)):
        upload(bob, "ext4", 2, scale, samples=[0.9, 1.0, 1.2] if run % 2 else None)
        upload(bob, "XFS", 8, scale * 1.2, samples=[0.5, 1.0, 1.5] if run % 3 else None)
        upload(bob, "zfs", 4, scale * 1.01)


QUERIES = [
    {"x": "param.point"},
    {"x": "param.point", "series": "filesystem", "reference": "ext4"},
    {"x": "param.point", "series": "cores", "verdicts": "quiet"},
    {"x": "filesystem", "series": "param.point"},
    {"x": "run_param.rows", "series": "run_param.mode"},
    {"x": "cores", "series": "filesystem", "param.point": "20"},
]


def assert_same_cells(sql, python) -> None:
    assert (sql.total, sql.missing_x, sql.missing_series, sql.approximate) == (
        python.total,
        python.missing_x,
        python.missing_series,
        python.approximate,
    )
    assert sql.series_values == python.series_values
    assert sql.stats.keys() == python.stats.keys()
    for key, cell in python.stats.items():
        other = sql.stats[key]
        assert (other.n, other.min, other.max) == (cell.n, cell.min, cell.max), key
        assert other.median == pytest.approx(cell.median, rel=1e-12), key
        assert (other.q1, other.q3) == pytest.approx((cell.q1, cell.q3), rel=1e-12), key
    assert sql.runs.keys() == python.runs.keys()
    for key, runs in python.runs.items():
        assert sql.runs[key].keys() == runs.keys(), key
        for run_id, run in runs.items():
            assert sql.runs[key][run_id].measurement_id == run.measurement_id
            assert sql.runs[key][run_id].value == pytest.approx(run.value, rel=1e-12)


@pytest.mark.parametrize("given", QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_postgresql_and_python_compute_the_same_cells(varied, given):
    params = {"benchmark": "select-update", "metric": "throughput", **given}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    user = AnonymousUser()

    in_sql = cells_in_postgresql(selectors._measurements(user, query), query)
    in_python = cells_from_rows(query, selectors._rows(user, query))

    assert in_sql.stats  # the comparison is not empty
    assert_same_cells(in_sql, in_python)


def test_the_spellings_group_as_the_filters_find_them(varied, anonymous_api):
    body = anonymous_api.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "param.point"},
    ).json()

    counts = {point["x"]: point["n"] for point in body["series"][0]["points"]}
    runs = 18
    assert counts[20] == 3 * runs  # 20, 20.0 and "20"
    assert counts[2.5] == 2 * runs  # 2.5 and "2.5"; "2.50" is text
    assert counts["2.50"] == runs
    assert counts[100000] == runs and counts["1e5"] == runs
    assert counts["true"] == 2 * runs  # the boolean and the text
    assert counts[-3] == 2 * runs and counts["-0"] == runs and counts["007"] == runs


def test_a_long_spelling_beside_its_json_number_is_aggregated_in_python(bob, anonymous_api):
    """SQL keeps the text "0.1234567890123457" apart from the number; by the
    filters' rule they are one point, so that comparison takes the Python path."""
    for point in (0.1234567890123457, "0.1234567890123457"):
        submission_create(
            submitter=bob,
            document=sweep_document({point: 10.0}, parameter="point"),
            status=Submission.Status.APPROVED,
        )
    query = comparison_query_parse(
        {"benchmark": ["select-update"], "metric": ["throughput"], "x": ["param.point"]}
    )
    with pytest.raises(SplitGroups):
        cells_in_postgresql(selectors._measurements(AnonymousUser(), query), query)

    body = anonymous_api.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "param.point"},
    ).json()

    assert [(p["x"], p["n"]) for p in body["series"][0]["points"]] == [(0.1234567890123457, 2)]


def test_the_embedded_default_still_refuses_more_rows_than_it_holds(varied, monkeypatch):
    monkeypatch.setattr(selectors, "MAX_ROWS", 10)
    query = comparison_query_parse(
        {"benchmark": ["select-update"], "metric": ["throughput"], "x": ["param.point"]}
    )

    with pytest.raises(selectors.InvalidComparison, match="more than 10 measurements"):
        selectors._rows(AnonymousUser(), query)


def test_when_every_cell_is_large_both_paths_read_the_same_sample_of_runs(varied, monkeypatch):
    monkeypatch.setattr(aggregation, "VERDICT_RUNS", 2)  # cells of 150+ measurements are large
    params = {"benchmark": "select-update", "metric": "throughput", "x": "run_param.rows"}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    user = AnonymousUser()

    in_sql = cells_in_postgresql(selectors._measurements(user, query), query)
    in_python = cells_from_rows(query, selectors._rows(user, query))

    assert aggregation.run_sample_threshold(in_sql.stats) is not None
    assert_same_cells(in_sql, in_python)
    assert sum(len(runs) for runs in in_sql.runs.values()) < 18  # a sample, not every run
