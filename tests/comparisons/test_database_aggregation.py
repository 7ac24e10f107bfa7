"""The two paths of a comparison give the same answers: PostgreSQL's
(percentile_cont over grouping keys, a sampled set of runs per cell) and
the embedded default's (every row read and aggregated in Python, as on
SQLite), run on the same rows of the same database."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from benchhub.comparisons import aggregation, in_database, selectors
from benchhub.comparisons.aggregation import cells_from_rows
from benchhub.comparisons.apis import comparison_as_data
from benchhub.comparisons.in_database import cells_in_postgresql
from benchhub.comparisons.query import comparison_query_parse
from benchhub.comparisons.scores import combined_scores
from benchhub.results.models import Measurement, Submission
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
        # In the same order: a bootstrap resamples the runs as listed.
        assert list(sql.runs[key]) == list(runs), key
        for run_id, run in runs.items():
            assert sql.runs[key][run_id].measurement_id == run.measurement_id
            assert sql.runs[key][run_id].value == pytest.approx(run.value, rel=1e-12)


@pytest.mark.parametrize(
    "levels", [in_database.SAMPLED_LEVELS, (2,), (4, 2)], ids=lambda levels: f"levels {levels}"
)
@pytest.mark.parametrize("sampled_rows", [1, 4, 10**6], ids=lambda n: f"cut at {n}")
@pytest.mark.parametrize("given", QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_postgresql_and_python_compute_the_same_cells(
    varied, given, sampled_rows, levels, monkeypatch
):
    """Whether the database groups all of a cell's runs or only those below
    a cutoff (and again, uncut, when that kept too few), and whether it
    finds the first ones among a sampled level's rows (SAMPLED_LEVELS: at
    level 2 about half of them, more than a verdict reads here), the same runs."""
    monkeypatch.setattr(in_database, "SAMPLED_ROWS", sampled_rows)
    monkeypatch.setattr(in_database, "SAMPLED_LEVELS", levels)
    params = {"benchmark": "select-update", "metric": "throughput", **given}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    user = AnonymousUser()

    in_sql = cells_in_postgresql(selectors._measurements(user, query), query)
    in_python = cells_from_rows(query, selectors._rows(user, query))

    assert in_sql.stats  # the comparison is not empty
    assert_same_cells(in_sql, in_python)


def test_the_spellings_group_as_the_filters_find_them(varied, anonymous_api):
    # The runs differ in run_param.mode: a series per mode (unvaried, the
    # API refuses to pool it), the counts summed over both.
    body = anonymous_api.get(
        "/api/v1/comparisons/",
        {
            "benchmark": "select-update",
            "metric": "throughput",
            "x": "param.point",
            "series": "run_param.mode",
        },
    ).json()

    counts: dict = defaultdict(int)
    for series in body["series"]:
        for point in series["points"]:
            counts[point["x"]] += point["n"]
    runs = 18
    assert counts[20] == 3 * runs  # 20, 20.0 and "20"
    assert counts[2.5] == 2 * runs  # 2.5 and "2.5"; "2.50" is text
    assert counts["2.50"] == runs
    assert counts[100000] == runs and counts["1e5"] == runs
    assert counts["true"] == 2 * runs  # the boolean and the text
    assert counts[-3] == 2 * runs and counts["-0"] == runs and counts["007"] == runs


def test_a_long_spelling_beside_its_json_number_is_one_point_in_the_database(bob, anonymous_api):
    """The text "0.1234567890123457" is Python's spelling of the number: by
    the filters' rule they are one point, and the stored keys say so."""
    for point in (0.1234567890123457, "0.1234567890123457"):
        submission_create(
            submitter=bob,
            document=sweep_document({point: 10.0}, parameter="point"),
            status=Submission.Status.APPROVED,
        )
    query = comparison_query_parse(
        {"benchmark": ["select-update"], "metric": ["throughput"], "x": ["param.point"]}
    )
    user = AnonymousUser()

    in_sql = cells_in_postgresql(selectors._measurements(user, query), query)

    assert_same_cells(in_sql, cells_from_rows(query, selectors._rows(user, query)))
    assert [(x, cell.n) for (_, x), cell in in_sql.stats.items()] == [(0.1234567890123457, 2)]


def test_the_embedded_default_still_refuses_more_rows_than_it_holds(varied, monkeypatch):
    monkeypatch.setattr(selectors, "MAX_ROWS", 10)
    query = comparison_query_parse(
        {"benchmark": ["select-update"], "metric": ["throughput"], "x": ["param.point"]}
    )

    with pytest.raises(selectors.InvalidComparison, match="more than 10 measurements"):
        selectors._rows(AnonymousUser(), query)


def test_a_cell_with_more_runs_than_a_verdict_reads_keeps_the_same_first_runs(varied, monkeypatch):
    monkeypatch.setattr(aggregation, "VERDICT_RUNS", 2)
    params = {"benchmark": "select-update", "metric": "throughput", "x": "run_param.rows"}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    user = AnonymousUser()

    in_sql = cells_in_postgresql(selectors._measurements(user, query), query)
    in_python = cells_from_rows(query, selectors._rows(user, query))

    assert_same_cells(in_sql, in_python)
    every_run = selectors._measurements(user, query).values_list("run_id", flat=True)
    for runs in in_sql.runs.values():
        assert len(runs) == 2  # of 6 to 12 runs per cell
    # The first two of all runs in sample order are in the one cell they share.
    first = sorted(set(every_run), key=aggregation.run_sample_key)[:2]
    assert any(list(runs) == first for runs in in_sql.runs.values())


def test_run_sample_key_shuffles_ids_without_collisions():
    keys = [aggregation.run_sample_key(run_id) for run_id in range(1, 20_001)]

    assert len({key for key, _ in keys}) == 20_000
    order = sorted(range(1, 20_001), key=aggregation.run_sample_key)
    assert order[:200] != sorted(order[:200])  # not the oldest runs first
    assert min(order[:200]) < 2_000 and max(order[:200]) > 18_000  # spread over the history


@pytest.mark.parametrize("given", QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_both_paths_give_the_same_comparison_with_verdicts(varied, given):
    params = {"benchmark": "select-update", "metric": "throughput", **given}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    user = AnonymousUser()
    answers = []
    for cells in (
        cells_in_postgresql(selectors._measurements(user, query), query),
        cells_from_rows(query, selectors._rows(user, query)),
    ):
        comparison = aggregation.comparison_aggregate(query=query, cells=cells)
        wanted = aggregation.samples_wanted(comparison)
        samples = dict(Measurement.objects.filter(pk__in=wanted).values_list("pk", "samples"))
        comparison = aggregation.comparison_with_verdicts(comparison, samples)
        comparison.summary = combined_scores(comparison)
        answers.append(json.loads(json.dumps(comparison_as_data(comparison))))

    in_sql, in_python = answers
    reference_x = {point["x"] for point in in_sql["series"][0]["points"]}
    judged = [p for s in in_sql["series"][1:] for p in s["points"] if p["x"] in reference_x]
    assert all(point["verdict"] for point in judged)  # verdicts are compared too
    assert _close(in_sql, in_python)


def _close(a, b) -> bool:
    """Equal, floats to 12 significant digits (percentile_cont interpolates
    in another order of operations than statistics.quantiles)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _current_settings(cursor) -> tuple[str, str, str, str]:
    cursor.execute(
        "SELECT current_setting('work_mem'), current_setting('parallel_setup_cost'), "
        "current_setting('parallel_tuple_cost'), current_setting('jit')"
    )
    return cursor.fetchone()


@pytest.mark.django_db(transaction=True)  # the statement's own transaction, not the test's
def test_the_cells_statement_runs_under_its_settings_and_they_end_with_it(varied):
    from django.db import connection

    params = {"benchmark": "select-update", "metric": "throughput", "x": "param.point"}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    seen = []

    def look(execute, sql, params, many, context):
        if "percentile_cont" in sql:  # the cells statement: what it runs under
            seen.append(_current_settings(context["cursor"].cursor))
        return execute(sql, params, many, context)

    with connection.cursor() as cursor:
        before = _current_settings(cursor)
    with connection.execute_wrapper(look):
        cells_in_postgresql(selectors._measurements(AnonymousUser(), query), query)
    with connection.cursor() as cursor:
        after = _current_settings(cursor)

    assert seen == [("64MB", "100", "0.01", "off")]
    # PostgreSQL's defaults, as configured
    assert before == after == ("4MB", "1000", "0.1", "on")


@pytest.mark.parametrize("given", QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_a_parallel_plan_computes_the_same_cells(varied, given, monkeypatch):
    """Workers hand the leader the rows in no fixed order: nothing the
    statement sends back may depend on it. Tiny tables made parallel here,
    the leader only gathering."""
    from django.db import connection

    monkeypatch.setattr(
        in_database,
        "SETTINGS",
        {
            **in_database.SETTINGS,
            "parallel_setup_cost": "0",
            "parallel_tuple_cost": "0",
            "min_parallel_table_scan_size": "0",
            "min_parallel_index_scan_size": "0",
            "parallel_leader_participation": "off",
            # the tiny tables' plan: index scans in nested loops, never parallel
            "enable_indexscan": "off",
            "enable_bitmapscan": "off",
            "enable_nestloop": "off",
        },
    )
    params = {"benchmark": "select-update", "metric": "throughput", **given}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    user = AnonymousUser()
    with connection.cursor() as cursor, transaction.atomic():
        cursor.execute(in_database.settings_statement())
        sql, sql_params = in_database.cells_statement(selectors._measurements(user, query), query)
        cursor.execute("EXPLAIN " + sql, sql_params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Gather" in plan, plan  # the statement below is read by workers

    in_sql = cells_in_postgresql(selectors._measurements(user, query), query)
    in_python = cells_from_rows(query, selectors._rows(user, query))

    assert in_sql.stats
    assert_same_cells(in_sql, in_python)


@pytest.mark.parametrize("given", QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_points_and_verdicts_written_out_are_what_the_serializers_fields_give(
    varied, given, monkeypatch
):
    """The API writes a point and a verdict out by hand (a comparison has
    thousands); DRF's own field-by-field answer must be the same, to the
    type of each number and the order of the keys."""
    from benchhub.comparisons import apis

    params = {"benchmark": "select-update", "metric": "throughput", **given}
    query = comparison_query_parse({key: [value] for key, value in params.items()})
    comparison = selectors.comparison_build(user=AnonymousUser(), query=query)
    written_out = json.dumps(comparison_as_data(comparison))
    monkeypatch.delattr(apis.ComparisonPointOutput, "to_representation")
    monkeypatch.delattr(apis.ComparisonVerdictOutput, "to_representation")
    by_fields = json.dumps(comparison_as_data(comparison))

    assert '"verdict": null' in written_out  # the reference's, or a lone series'
    if any(point.verdict for series in comparison.series for point in series.points):
        assert '"verdict": {"verdict": ' in written_out
    assert written_out == by_fields
