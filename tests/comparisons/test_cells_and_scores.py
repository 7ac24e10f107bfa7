"""The pure half of a comparison, rows and cells in, no query: the Python
path's counts and quartiles, the order of values, the reference's label and
its error, and the combined scores' rows, on hand-made skewed data.
(Written for the mutants of comparisons/aggregation.py and scores.py that
mutation testing found alive; docs/testing.md.)"""

from __future__ import annotations

import pytest

from benchhub.comparisons.aggregation import (
    Cells,
    CellStats,
    Comparison,
    Point,
    RunCell,
    RunCells,
    Series,
    _axis_value,
    _reference_missing,
    cells_from_rows,
    comparison_aggregate,
    comparison_with_verdicts,
    order_key,
    reference_label,
)
from benchhub.comparisons.query import Axis, ComparisonQuery, InvalidComparison
from benchhub.comparisons.scores import _run_totals, combined_scores
from benchhub.results.models import Metric

CLIENTS = Axis("param.clients", "parameters__clients")
FILESYSTEM = Axis("filesystem", "run__storage__filesystem")
OPERATION = Axis("param.operation", "parameters__operation")


def query(
    *,
    x: Axis = CLIENTS,
    series: Axis | None = FILESYSTEM,
    reference: str | None = None,
    unit="s",
    minimum_effect=0.05,
) -> ComparisonQuery:
    metric = Metric(name="seconds", unit=unit, direction="lower")
    return ComparisonQuery(metric, x, series, reference, {}, minimum_effect=minimum_effect)


# --- the Python path's cells -------------------------------------------------------


def test_rows_without_an_x_or_a_series_value_are_counted_and_the_rest_kept():
    rows = [
        # series, x, value, approximate, run, measurement, noise
        ("ext4", None, 1.0, False, 1, 1, ""),
        ("ext4", 8, 10.0, True, 1, 2, ""),
        (None, 8, 99.0, False, 2, 3, ""),
        ("ext4", None, 1.0, True, 2, 4, ""),
        (None, 16, 99.0, True, 3, 5, ""),
        ("ext4", 8, 30.0, True, 3, 6, ""),
        (None, 8, 99.0, False, 4, 7, ""),
        ("ext4", 8, 11.0, False, 4, 8, ""),
    ]

    cells = cells_from_rows(query(), rows)

    assert (cells.total, cells.missing_x, cells.missing_series) == (8, 2, 3)
    assert cells.approximate == 2
    assert list(cells.stats) == [("ext4", 8)]
    stats = cells.stats["ext4", 8]
    assert (stats.n, stats.median, stats.min, stats.max) == (3, 11.0, 10.0, 30.0)
    assert (stats.q1, stats.q3) == (10.5, 20.5)  # inclusive quartiles of 10, 11, 30


def test_a_cell_of_one_value_has_it_as_median_and_both_quartiles():
    cells = cells_from_rows(query(), [("xfs", 4, 7.5, False, 1, 1, "")])
    stats = cells.stats["xfs", 4]
    assert (stats.n, stats.q1, stats.median, stats.q3) == (1, 7.5, 7.5, 7.5)
    assert cells.runs["xfs", 4] == {1: RunCell(7.5, 1)}


# --- order, labels and the reference ----------------------------------------------------


def test_numbers_come_first_in_numeric_order_negative_ones_included_then_text():
    values = ["ext10", 10, "default", -3, "16k", 2.5, "Ext2", 2]
    assert sorted(values, key=order_key) == [-3, 2, 2.5, 10, "16k", "default", "Ext2", "ext10"]


def test_text_starting_with_digits_comes_before_text_starting_with_letters():
    assert sorted(["default", "16k", "a1", "1a"], key=order_key) == ["1a", "16k", "a1", "default"]


@pytest.mark.parametrize(
    ("axis", "raw", "value"),
    [
        (FILESYSTEM, "20", "20"),  # text of a dimension stays text
        (CLIENTS, "20", 20),  # a parameter's canonical number is the number
        (CLIENTS, "20.0", "20.0"),
        (None, {"b": 1, "a": "é"}, '{"a": "é", "b": 1}'),
        (CLIENTS, [3, {"z": 0, "y": "ü"}], '[3, {"y": "ü", "z": 0}]'),
        (CLIENTS, float("nan"), "nan"),
        (CLIENTS, True, "true"),
    ],
)
def test_a_stored_value_is_grouped_as_its_axis_reads_it(axis, raw, value):
    grouped = _axis_value(axis, raw)
    assert grouped == value and type(grouped) is type(value)


@pytest.mark.parametrize(
    ("axis", "typed", "label"),
    [
        (CLIENTS, "20.0", "20"),  # read as the filter reads ?param.clients=20.0
        (CLIENTS, "2.50", "2.5"),
        (CLIENTS, "fast", "fast"),
        (FILESYSTEM, "UFS2", "ufs"),
    ],
)
def test_a_typed_reference_is_the_label_of_the_series_it_names(axis, typed, label):
    assert reference_label(axis, typed) == label


def test_a_missing_reference_names_at_most_twenty_of_the_values_there_are():
    twenty = [f"fs{i}" for i in range(20)]
    assert _reference_missing("ufs", FILESYSTEM, twenty) == (
        f"'ufs' is not a filesystem value of these results (they have: {', '.join(twenty)})"
    )
    assert _reference_missing("ufs", FILESYSTEM, [*twenty, "zfs"]) == (
        f"'ufs' is not a filesystem value of these results (they have: {', '.join(twenty)} …)"
    )


def test_a_point_where_the_reference_has_no_cell_gets_no_verdict():
    runs = RunCells.of({run: RunCell(v, None) for run, v in enumerate((10.0, 11.0, 12.0, 13.0))})
    comparison = Comparison(
        query=query(),
        x_values=[1, 2],
        series=[
            Series("ufs", [Point(1, 11.5, 4, 10.0, 13.0)]),
            Series("zfs", [Point(1, 11.5, 4, 10.0, 13.0), Point(2, 11.5, 4, 10.0, 13.0)]),
        ],
        reference="ufs",
        cell_runs={("ufs", 1): runs, ("zfs", 1): runs, ("zfs", 2): runs},
    )

    (_, zfs) = comparison_with_verdicts(comparison, {}).series

    assert zfs.points[0].verdict.verdict == "inconclusive"  # 10-13 against 10-13: 0.77-1.3
    assert zfs.points[1].verdict is None


# --- from cells to the comparison ----------------------------------------------------


def some_cells(*, missing_x: int, missing_series: int) -> Cells:
    return Cells(
        stats={
            ("ext4", 8): CellStats(3, 11.0, 10.0, 30.0, 10.5, 20.5),
            ("ufs", 8): CellStats(2, 20.0, 18.0, 22.0, 19.0, 21.0),
            ("ext4", 16): CellStats(1, 7.0, 7.0, 7.0, 7.0, 7.0),
            ("ext4", 32): CellStats(1, 9.0, 9.0, 9.0, 9.0, 9.0),
        },
        series_values={"ext4": "ext4", "ufs": "ufs"},
        total=7 + missing_x + missing_series,
        missing_x=missing_x,
        missing_series=missing_series,
        approximate=3,
    )


@pytest.mark.parametrize(
    ("missing_x", "missing_series", "x_note", "series_note"),
    [
        (1, 2, "1 measurement", "2 measurements"),
        (2, 1, "2 measurements", "1 measurement"),
    ],
)
def test_the_notes_count_what_was_left_out(missing_x, missing_series, x_note, series_note):
    comparison = comparison_aggregate(
        query=query(), cells=some_cells(missing_x=missing_x, missing_series=missing_series)
    )

    assert comparison.notes == [
        f"{x_note} without a clients value left out.",
        f"{series_note} without a filesystem value left out.",
        "Approximate values included: 3 of 7 measurements are approximate (read off a chart "
        "or an 'about' in the text).",
    ]
    (point,) = [p for p in comparison.series[0].points if p.x == 8]
    assert (point.value, point.n, point.q1, point.q3) == (11.0, 3, 10.5, 20.5)


def test_the_reference_has_no_value_note_names_every_gap():
    comparison = comparison_aggregate(
        query=query(reference="UFS2"), cells=some_cells(missing_x=0, missing_series=0)
    )
    assert [s.label for s in comparison.series] == ["ufs", "ext4"]
    assert comparison.notes[-1] == (
        "filesystem = ufs has no value (or 0) at clients = 16, 32: relative values there are null."
    )


def test_a_reference_that_is_no_series_is_an_error_or_on_the_page_dropped_with_a_note():
    cells = some_cells(missing_x=0, missing_series=0)
    missing = "'zfs' is not a filesystem value of these results (they have: ext4, ufs)"

    with pytest.raises(InvalidComparison) as raised:
        comparison_aggregate(query=query(reference="ZFS"), cells=cells)
    assert raised.value.errors == {"reference": missing}

    comparison = comparison_aggregate(
        query=query(reference="ZFS"), cells=cells, strict_reference=False
    )
    assert (comparison.reference, comparison.reference_dropped) == (None, True)
    assert comparison.notes[-1] == f"{missing}; shown without reference."
    assert all(p.relative is None for s in comparison.series for p in s.points)


def test_an_empty_comparison_keeps_its_reference_as_a_label():
    comparison = comparison_aggregate(query=query(reference="UFS2"), cells=Cells())
    assert (comparison.reference, comparison.reference_dropped) == ("ufs", False)
    assert comparison.notes == ["No measurement you may see matches this comparison."]


# --- combined scores ------------------------------------------------------------------


def scored(medians: dict[str, dict[str, float]], *, unit="s", minimum_effect=0.05):
    """A comparison of operations with one run per series and operation."""
    series = [
        Series(label, [Point(x, v, 1, v, v) for x, v in points.items()])
        for label, points in medians.items()
    ]
    operations = sorted({x for points in medians.values() for x in points})
    cell_runs = {
        (label, x): RunCells.of({run: RunCell(v * (1 + run / 100), None) for run in range(4)})
        for label, points in medians.items()
        for x, v in points.items()
    }
    comparison = Comparison(
        query=query(x=OPERATION, unit=unit, minimum_effect=minimum_effect),
        x_values=operations,
        series=series,
        reference="ufs",
        cell_runs=cell_runs,
    )
    return combined_scores(comparison)


def test_two_operations_are_enough_for_a_summary_with_its_totals_ratio():
    (row,) = scored(
        {"ufs": {"insert": 10.0, "select": 30.0}, "zfs": {"insert": 12.0, "select": 60.0}}
    )

    assert (row.label, row.operations, row.missing, row.extra) == ("zfs", 2, [], [])
    assert (row.totals.value, row.totals.reference) == (72.0, 40.0)
    assert row.totals.ratio == 1.8  # of the totals, not a mean of the ratios (1.6)
    assert row.geometric_mean.ratio == pytest.approx((1.2 * 2.0) ** 0.5, rel=1e-12)


def test_the_scores_judge_with_the_querys_minimum_effect():
    # six operations, each 1.2 times: enough for the sign-flip test (p = 2/64)
    ufs = {op: 10.0 * (i + 1) for i, op in enumerate(["a", "b", "c", "d", "e", "f"])}
    medians = {"ufs": ufs, "zfs": {op: v * 1.2 for op, v in ufs.items()}}
    assert scored(medians)[0].geometric_mean.verdict.verdict == "worse"
    (row,) = scored(medians, minimum_effect=0.3)
    assert row.totals.verdict.minimum_effect == row.geometric_mean.verdict.minimum_effect == 0.3
    assert (
        row.totals.verdict.verdict == row.geometric_mean.verdict.verdict == "equivalent"
    )  # 1.2 within 1 ± 0.3


def test_a_metric_that_does_not_add_up_has_no_totals():
    medians = {"ufs": {"insert": 10.0, "select": 30.0}, "zfs": {"insert": 12.0, "select": 60.0}}
    (row,) = scored(medians, unit="tx/s")
    assert row.totals is None
    assert row.geometric_mean.ratio == pytest.approx(2.4**0.5, rel=1e-12)


def test_extra_operations_are_this_series_own_not_another_series():
    (btrfs, zfs) = scored(
        {
            "ufs": {"insert": 10.0, "select": 30.0, "update": 5.0},
            "btrfs": {"insert": 11.0, "select": 31.0, "vacuum": 3.0},
            "zfs": {"insert": 12.0, "select": 36.0, "alter": 9.0},
        }
    )
    assert (btrfs.label, btrfs.missing, btrfs.extra) == ("btrfs", ["update"], ["vacuum"])
    assert (zfs.label, zfs.missing, zfs.extra) == ("zfs", ["update"], ["alter"])


def test_a_reference_total_of_zero_has_no_ratio():
    # times rounded to 0.0 s: nothing to divide by, for the totals nor the ratios
    (row,) = scored({"ufs": {"insert": 0.0, "select": 0.0}, "zfs": {"insert": 1.0, "select": 2.0}})
    assert (row.totals.value, row.totals.reference, row.totals.ratio) == (3.0, 0.0, None)
    assert row.geometric_mean.verdict.verdict == "insufficient data"


def test_a_cells_runs_read_as_a_mapping_of_run_id_to_run_in_sample_order():
    runs = RunCells([31, 7, 19], [2.5, 1.0, 4.0], [None, 70, 190])

    assert 19 in runs and 20 not in runs  # before any lookup by id
    assert list(runs) == [31, 7, 19]  # the order sent: sample order, not ids'
    assert len(runs) == 3
    assert runs[7] == RunCell(1.0, 70) and runs[31] == RunCell(2.5, None)
    assert 19 in runs and 20 not in runs
    assert runs.values() == [RunCell(2.5, None), RunCell(1.0, 70), RunCell(4.0, 190)]
    assert runs == {31: RunCell(2.5, None), 7: RunCell(1.0, 70), 19: RunCell(4.0, 190)}
    assert RunCells.of(dict(runs.items())).run_values == [2.5, 1.0, 4.0]
    with pytest.raises(KeyError):
        runs[20]
    with pytest.raises(
        ValueError, match=r"^a run id, a value and a measurement id \(or None\) per run$"
    ):
        RunCells([1, 2], [1.0], [None, None])


def test_a_runs_total_counts_only_runs_in_every_common_operation_in_the_first_ones_order():
    def cell(runs: dict[int, float]) -> RunCells:
        return RunCells.of({run: RunCell(value, None) for run, value in runs.items()})

    comparison = Comparison(
        query=query(x=OPERATION, unit="s"),
        x_values=["a", "b", "c"],
        series=[],
        cell_runs={
            # run 2 lacks b (the second cell), run 3 lacks c, run 4 lacks a
            ("zfs", "a"): cell({5: 1.0, 2: 2.0, 1: 4.0, 3: 8.0}),
            ("zfs", "b"): cell({4: 16.0, 1: 32.0, 3: 64.0, 5: 128.0}),
            ("zfs", "c"): cell({1: 256.0, 2: 512.0, 4: 1024.0, 5: 2048.0}),
            # every run in every cell: the same order in each
            ("ufs", "a"): cell({9: 1.0, 7: 2.0}),
            ("ufs", "b"): cell({9: 0.5, 7: 0.25}),
        },
    )

    assert _run_totals(comparison, "zfs", ["a", "b", "c"]) == [1.0 + 128.0 + 2048.0, 292.0]
    assert _run_totals(comparison, "ufs", ["a", "b"]) == [1.5, 2.25]
