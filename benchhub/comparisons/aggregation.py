"""The pure half of a comparison: rows in, aggregated cells out, no query.

Each row is one measurement: (series value, x value, value, approximate,
run id). A cell (series, x) is summarized by the median, n, min and max of
its values, and keeps each run's values, the unit a verdict compares.

Order of values, on both axes: numbers numerically (clients 1, 2, 4 … 100),
text in natural alphabetical order, case-insensitive, digit runs compared as
numbers (ext2 < ext10, 9.6 < 15.2), numbers before text; server versions
in version order (16beta2 < 16.0 < 16.1: ``version_order``). The reference
series, when there is one, comes first.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import TYPE_CHECKING, Any, NamedTuple

from benchhub_contract.verdicts import (
    MIN_RUNS_FOR_U,
    RunValues,
    Verdict,
    ratio_of,
    values_verdict,
    verdict,
)

from benchhub.comparisons.query import Axis, ComparisonQuery, InvalidComparison
from benchhub.lib.spread import spread_of
from benchhub.results.filters import NORMALIZERS, parameter_canonical, parameter_number
from benchhub.results.normalization.empty import EMPTY_SHOWN, means_empty
from benchhub.results.normalization.versions import version_order

if TYPE_CHECKING:
    import numpy as np

# (series value, x value, value, approximate, run id, measurement id, run noise flags)
Row = tuple[Any, Any, float, bool, int, int, str]
# The most runs of one cell a verdict reads: a fixed sample (run_sample_key)
# beyond that, so that a verdict's work is bounded at any number of results.
VERDICT_RUNS = 200
# run_sample_key: 2**31 / the golden ratio, odd; products stay below 2**62.
SAMPLE_MODULUS = 2**31
SAMPLE_MULTIPLIER = 1327217885


class RunCell(NamedTuple):
    """One run in one cell: the median of its values there, and its one
    measurement's id when it has one (whose repetitions a verdict may read)."""

    value: float
    measurement_id: int | None


_new_run_cell = partial(tuple.__new__, RunCell)


class RunCells(Mapping[int, RunCell]):
    """One cell's runs, in sample order: run id -> RunCell. Kept as the
    three lists the database sends (run ids, their values there, their one
    measurement's id or None): a large comparison has tens of thousands of
    runs, and a verdict reads only the values, in order (``run_values``).
    The lookup by run id is built on its first use."""

    __slots__ = ("_positions", "measurement_ids", "run_ids", "run_values")

    def __init__(
        self,
        run_ids: Sequence[int] = (),
        run_values: Sequence[float] = (),
        measurement_ids: Sequence[int | None] = (),
    ):
        if not len(run_ids) == len(run_values) == len(measurement_ids):
            raise ValueError("a run id, a value and a measurement id (or None) per run")
        self.run_ids = run_ids
        self.run_values = run_values
        self.measurement_ids = measurement_ids
        self._positions: dict[int, int] | None = None

    @classmethod
    def of(cls, runs: Mapping[int, RunCell]) -> RunCells:
        """From run id -> RunCell, in its order."""
        cells = list(runs.values())
        return cls(list(runs), [run.value for run in cells], [run.measurement_id for run in cells])

    def __len__(self) -> int:
        return len(self.run_ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self.run_ids)

    def __getitem__(self, run_id: int) -> RunCell:
        if self._positions is None:
            self._positions = dict(zip(self.run_ids, range(len(self.run_ids)), strict=True))
        at = self._positions[run_id]
        return RunCell(self.run_values[at], self.measurement_ids[at])

    def values(self) -> list[RunCell]:  # type: ignore[override]
        """The runs in order (built without a call of the interpreter per run)."""
        return list(map(_new_run_cell, zip(self.run_values, self.measurement_ids, strict=True)))

    def __repr__(self) -> str:
        return f"RunCells({dict(zip(self.run_ids, self.values(), strict=True))!r})"


NO_RUNS = RunCells()

# Per cell (series label, x): its runs.
CellRuns = dict[tuple[str, Any], RunCells]


@dataclass(frozen=True)
class Point:
    x: Any
    value: float  # the median
    n: int
    min: float
    max: float
    relative: float | None = None  # 100 * value / the reference's value at x
    # Against the reference series' cell at x (or the first series'); None
    # for that series itself, or where it has no value.
    verdict: Verdict | None = None
    q1: float | None = None  # the quartiles of the cell's measurements
    q3: float | None = None


@dataclass(frozen=True)
class Series:
    label: str
    points: list[Point]


@dataclass
class Comparison:
    query: ComparisonQuery
    x_values: list[Any]
    series: list[Series]
    # The reference as a series label (normalized: reference=EXT4 → "ext4").
    reference: str | None = None
    notes: list[str] = field(default_factory=list)
    # The page drops a reference that is not a series value (with a note);
    # it then pushes the URL without it.
    reference_dropped: bool = False
    # Each cell's values per run: the unit verdicts compare.
    cell_runs: CellRuns = field(default_factory=dict, repr=False)
    # Cells.parameters_may_differ: whether the page should look for pooling.
    parameters_may_differ: bool = True
    # Combined scores against the reference (scores.py), for operations on x.
    summary: list[Any] = field(default_factory=list)

    @property
    def x_numeric(self) -> bool:
        return bool(self.x_values) and all(_is_number(x) for x in self.x_values)

    @property
    def is_empty(self) -> bool:
        return not self.series


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _axis_value(axis: Axis | None, raw: Any) -> Any:
    """A stored value as the comparison groups it; None when missing.

    Parameters are JSON: the number 20, 20.0 and the text "20" are one x
    value, the number 20 — exactly what ?param.clients=20 finds
    (``parameter_number``: only the canonical spelling of a number counts as
    one, so "20.0", " 20" or "٢٠" stay text). Booleans become the text
    "true"/"false" (in Python True == 1 would merge them with the number 1).
    """
    if raw is None:
        return None
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, float) and not math.isfinite(raw):
        return str(raw)
    if isinstance(raw, (dict, list)):
        return json.dumps(raw, sort_keys=True, ensure_ascii=False)
    if isinstance(raw, str) and not (axis is not None and axis.is_parameter):
        return raw
    return parameter_canonical(raw)


def _label(value: Any) -> str:
    return str(value)


def label_shown(value: Any) -> str:
    """A series label or x value as people read it: the empty one as EMPTY_SHOWN."""
    return EMPTY_SHOWN if value is None or value == "" else str(value)


_DIGITS = re.compile(r"([0-9]+)")  # ASCII: int() of "²" or "①" would raise


def order_key(value: Any) -> tuple:
    if _is_number(value):
        return (0, value, ())
    text = str(value)
    natural = tuple(
        (0, int(part), "") if index % 2 else (1, 0, part.casefold())
        for index, part in enumerate(_DIGITS.split(text))
        if part
    )
    return (1, 0, natural, text)


# The axes whose values are server versions: ordered as versions, not as text.
VERSION_AXES = ("version", "version_major")


def axis_order_key(axis: Axis | None) -> Callable[[Any], tuple]:
    """How the values of ``axis`` are ordered on a chart and in a table."""
    if axis is not None and axis.name in VERSION_AXES:
        return lambda value: version_order(str(value))
    return order_key


def reference_label(axis: Axis, reference: str) -> str:
    """The reference as a series label: normalized like the filters
    (reference=UFS2 finds "ufs"), parameters' numbers as numbers ("20.0" → "20"),
    and the pages' "(none)" (EMPTY_SHOWN) the empty value of any axis."""
    if means_empty(reference):
        return ""
    if axis.name in NORMALIZERS:
        reference = NORMALIZERS[axis.name](reference)
    if axis.is_parameter:  # typed by a user, read as a filter reads it
        number = parameter_number(reference)
        if number is not None:
            return _label(number)
    return _label(_axis_value(axis, reference))


@dataclass(frozen=True)
class CellStats:
    n: int
    median: float
    min: float
    max: float
    # Defined by benchhub.lib.spread (the in-database path computes the same).
    q1: float  # quartiles, interpolated (percentile_cont, statistics' "inclusive")
    q3: float


@dataclass
class Cells:
    """What the reads hand the aggregation, from either path: per cell
    (series label, x) its statistics and (a sample of) its runs."""

    stats: dict[tuple[str, Any], CellStats] = field(default_factory=dict)
    runs: CellRuns = field(default_factory=dict)
    series_values: dict[str, Any] = field(default_factory=dict)  # label → value
    total: int = 0
    missing_x: int = 0
    missing_series: int = 0
    approximate: int = 0
    # False when the reads saw every cell's parameters alike (the same keys
    # in each of its measurements and runs): nothing can be pooled there.
    parameters_may_differ: bool = True


def run_sample_key(run_id: int) -> tuple[int, int]:
    """The order runs are sampled in for verdicts: a fixed, arbitrary,
    reproducible order that both paths compute (the SQL path with the same
    integer arithmetic). Multiplying by an odd number modulo 2**31 shuffles
    run ids without collisions below 2**31, and picks runs spread over the
    whole history rather than the oldest or newest; the id breaks a tie."""
    return (run_id % SAMPLE_MODULUS) * SAMPLE_MULTIPLIER % SAMPLE_MODULUS, run_id


def sample_keys(run_ids: np.ndarray) -> np.ndarray:
    """``run_sample_key``'s first part of each run id (int64: the products
    stay below 2**62), for from_packs.py."""
    return (run_ids % SAMPLE_MODULUS) * SAMPLE_MULTIPLIER % SAMPLE_MODULUS


def cells_from_rows(query: ComparisonQuery, rows: Iterable[Row]) -> Cells:
    """The Python path (SQLite has no percentile aggregate): every row read."""
    x_axis, series_axis = query.x, query.series
    values: dict[tuple[str, Any], list[float]] = defaultdict(list)
    per_run: dict[tuple[str, Any], dict[int, list[tuple[float, int]]]] = defaultdict(dict)
    cells = Cells()
    noisy: set[int] = set()
    for series_raw, x_raw, value, is_approximate, run_id, measurement_id, noise in rows:
        cells.total += 1
        x = _axis_value(x_axis, x_raw)
        if series_axis is None:
            series_value: Any = query.metric.name
        else:
            series_value = _axis_value(series_axis, series_raw)
        if x is None:
            cells.missing_x += 1
            continue
        if series_value is None:
            cells.missing_series += 1
            continue
        cells.approximate += is_approximate
        label = _label(series_value)
        cells.series_values.setdefault(label, series_value)
        values[label, x].append(value)
        per_run[label, x].setdefault(run_id, []).append((value, measurement_id))
        if noise:
            noisy.add(run_id)
    for key, cell in values.items():
        spread = spread_of(cell)
        cells.stats[key] = CellStats(
            spread.n, spread.median, spread.min, spread.max, spread.q1, spread.q3
        )
    for key, runs in per_run.items():
        kept = sorted(
            (run_id for run_id in runs if not (query.quiet_verdicts and run_id in noisy)),
            key=run_sample_key,
        )[:VERDICT_RUNS]
        cells.runs[key] = RunCells(
            kept,
            [statistics.median(v for v, _ in runs[run_id]) for run_id in kept],
            [runs[run_id][0][1] if len(runs[run_id]) == 1 else None for run_id in kept],
        )
    return cells


def comparison_aggregate(
    *, query: ComparisonQuery, cells: Cells, strict_reference: bool = True
) -> Comparison:
    """The comparison of ``query`` from its cells. A reference that is not
    among the series values raises InvalidComparison, or with
    ``strict_reference=False`` is dropped with a note (the page does that
    when the series select changed under it)."""
    x_axis, series_axis = query.x, query.series
    total, missing_x, missing_series = cells.total, cells.missing_x, cells.missing_series
    approximate, series_values = cells.approximate, cells.series_values
    notes: list[str] = []
    if total == 0:
        notes.append("No measurement you may see matches this comparison.")
    if missing_x:
        notes.append(
            f"{missing_x} measurement{'s' if missing_x != 1 else ''} without a "
            f"{x_axis.title} value left out."
        )
    if missing_series and series_axis is not None:
        notes.append(
            f"{missing_series} measurement{'s' if missing_series != 1 else ''} without a "
            f"{series_axis.title} value left out."
        )
    if approximate:
        notes.append(
            f"Approximate values included: {approximate} of {total - missing_x - missing_series} "
            "measurements are approximate (read off a chart or an 'about' in the text)."
        )

    x_values = sorted({x for _, x in cells.stats}, key=axis_order_key(x_axis))
    series_key = axis_order_key(series_axis)
    labels = sorted(series_values, key=lambda label: series_key(series_values[label]))

    reference = query.reference
    reference_dropped = False
    if reference is not None and series_axis is not None:
        wanted = reference_label(series_axis, reference)
        if wanted in series_values:
            reference = wanted
            labels.remove(wanted)
            labels.insert(0, wanted)
        elif total == 0:
            reference = wanted  # nothing to compare: the empty note says it all
        elif strict_reference:
            raise InvalidComparison({"reference": _reference_missing(wanted, series_axis, labels)})
        else:
            notes.append(
                _reference_missing(wanted, series_axis, labels) + "; shown without reference."
            )
            reference, reference_dropped = None, True

    medians = {key: cell.median for key, cell in cells.stats.items()}
    reference_medians = (
        {x: medians[reference, x] for x in x_values if (reference, x) in medians}
        if reference is not None
        else {}
    )
    if reference is not None and not reference_dropped and total:
        gaps = [x for x in x_values if not reference_medians.get(x)]
        if gaps:
            notes.append(
                f"{series_axis.title} = {label_shown(reference)} has no value (or 0) at "
                f"{x_axis.title} = {', '.join(map(label_shown, gaps))}: relative values there "
                "are null."
            )

    series = []
    beyond: list[Any] = []  # a ratio to a nonzero reference beyond a double
    for label in labels:
        points = []
        for x in x_values:
            cell = cells.stats.get((label, x))
            if cell is None:
                continue
            relative = None
            if reference is not None and x in reference_medians:
                ratio = ratio_of(cell.median, reference_medians[x])
                if ratio is not None and math.isfinite(ratio * 100):
                    relative = ratio * 100
                elif reference_medians[x] and x not in beyond:
                    beyond.append(x)
            points.append(
                Point(x, cell.median, cell.n, cell.min, cell.max, relative, q1=cell.q1, q3=cell.q3)
            )
        series.append(Series(label, points))
    if beyond:
        notes.append(
            f"{x_axis.title} = {', '.join(map(label_shown, beyond))}: a value's ratio to "
            f"{label_shown(reference)} is beyond what a double holds; relative values there "
            "are null."
        )
    return Comparison(
        query=query,
        x_values=x_values,
        series=series,
        reference=reference,
        notes=notes,
        reference_dropped=reference_dropped,
        cell_runs=cells.runs,
        parameters_may_differ=cells.parameters_may_differ,
    )


def _reference_missing(wanted: str, axis: Axis, labels: list[str]) -> str:
    shown = ", ".join(map(label_shown, labels[:20])) + (" …" if len(labels) > 20 else "")
    return (
        f"{label_shown(wanted)!r} is not a {axis.title} value of these results (they have: {shown})"
    )


def verdict_reference(comparison: Comparison) -> str | None:
    """The series every other one is judged against: the reference, or the first."""
    if comparison.reference is not None and not comparison.reference_dropped:
        return comparison.reference
    return comparison.series[0].label if comparison.series else None


def samples_wanted(comparison: Comparison) -> list[int]:
    """The measurements whose repetition samples a verdict may read: in cells
    with too few runs for the U test, each run with one measurement there."""
    return [
        run.measurement_id
        for runs in comparison.cell_runs.values()
        if len(runs) < MIN_RUNS_FOR_U
        for run in runs.values()
        if run.measurement_id is not None
    ]


def _judged_sides(
    comparison: Comparison, samples: Mapping[int, Iterable[float]]
) -> tuple[Any, Any]:
    """(side, judge): a cell's runs as a verdict reads them, and the verdict
    function that reads them (``values_verdict`` for runs without samples)."""

    @cache
    def side(label: str, x: Any) -> Sequence[float] | list[RunValues]:
        # cached: the reference's side at x serves every other series
        runs = comparison.cell_runs.get((label, x), NO_RUNS)
        if not samples:
            # The usual case, large cells: the runs' values, which
            # values_verdict reads in any order; sorted once here, as it
            # sorts them, for every series the reference's side serves.
            return sorted(runs.run_values)
        return [
            RunValues(value, tuple(samples.get(measurement_id, ())))
            for value, measurement_id in zip(runs.run_values, runs.measurement_ids, strict=True)
        ]

    # The same verdict either way (values_verdict: runs without samples).
    return side, verdict if samples else values_verdict


def comparison_with_steps(
    comparison: Comparison, samples: Mapping[int, Iterable[float]]
) -> Comparison:
    """Each point but a series' first gets its verdict against the same
    series' point at the previous x value (a history: each version against
    the one before it), by the test every comparison uses."""
    side, judge = _judged_sides(comparison, samples)
    direction = comparison.query.metric.direction
    series = []
    for one in comparison.series:
        points = one.points[:1]
        for before, point in zip(one.points, one.points[1:], strict=False):
            judged = judge(
                side(one.label, point.x),
                side(one.label, before.x),
                direction=direction,
                minimum_effect=comparison.query.minimum_effect,
            )
            points.append(replace(point, verdict=judged))
        series.append(Series(one.label, points))
    comparison.series = series
    return comparison


def comparison_with_verdicts(
    comparison: Comparison, samples: Mapping[int, Iterable[float]]
) -> Comparison:
    """Each point of each series but the reference gets its verdict against
    the reference's point at the same x. ``samples`` maps a measurement id
    to its repetitions (see ``samples_wanted``)."""
    reference = verdict_reference(comparison)
    if reference is None or len(comparison.series) < 2:
        return comparison
    query = comparison.query
    side, judge = _judged_sides(comparison, samples)
    series = []
    for one in comparison.series:
        if one.label == reference:
            series.append(one)
            continue
        points = []
        for point in one.points:
            judged = (
                judge(
                    side(one.label, point.x),
                    side(reference, point.x),
                    direction=query.metric.direction,
                    minimum_effect=query.minimum_effect,
                )
                if (reference, point.x) in comparison.cell_runs
                else None
            )
            points.append(replace(point, verdict=judged))
        series.append(Series(one.label, points))
    comparison.series = series
    return comparison
