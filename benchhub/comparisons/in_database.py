"""A comparison's cells computed by PostgreSQL: no row reaches Python but one
per cell, and a bounded sample of runs per cell for the verdicts.

Two queries over the filtered measurements:

1. per (series, x): count, ``percentile_cont(0.5)``, min, max and how many
   are approximate — the groups with a missing key are the "left out" notes;
2. per (series, x, run): the run's median there and its one measurement's
   id, numbered per cell in the order of ``md5(run id)``; at most
   ``VERDICT_RUNS`` per cell come back (the Python path samples the same).

Grouping keys follow ``aggregation._axis_value`` exactly, so both paths
group alike (tests/comparisons/test_database_aggregation.py runs both on the
same data): for a parameter, a JSON number is its value with trailing zeros
dropped (20.0 → 20), a JSON string is a number only when it is a number's
canonical spelling ("20", "2.5"; not "20.0", " 20", "007" or "1e5"), a
boolean is the text true/false, an object or list its JSON text. The one
case SQL cannot tell (a string of 16-17 significant digits that is still
Python's spelling of its number) is decoded by Python's rule, and if that
makes two groups one cell, ``SplitGroups`` sends the comparison to the
Python path.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import Count, F, Func, Max, Min, Q, QuerySet
from django.db.models.aggregates import Aggregate
from django.db.models.fields import CharField, FloatField
from django.db.models.functions import MD5, Cast, Left

from benchhub.comparisons import aggregation
from benchhub.comparisons.aggregation import Cells, CellStats, RunCell, _axis_value, _label
from benchhub.comparisons.query import Axis, ComparisonQuery
from benchhub.results.filters import PARAM_NAME, parameter_canonical, parameter_number


class Percentile(Aggregate):
    """``percentile_cont(fraction)``: interpolated, as statistics.median and
    statistics.quantiles(method="inclusive") are."""

    function = "percentile_cont"
    output_field = FloatField()

    def __init__(self, expression: str, fraction: float) -> None:
        self.template = (
            f"percentile_cont({float(fraction)!r}) WITHIN GROUP (ORDER BY %(expressions)s)"
        )
        super().__init__(expression)


def Median(expression: str) -> Percentile:
    return Percentile(expression, 0.5)


# A JSON string that Python's str() of its number gives back: an integer
# without leading zeros (up to 18 digits, below 2**63), or a decimal with a
# nonzero last digit, at most 15 significant digits (which round-trip), and
# not below 1e-4 (Python writes those with an exponent).
_CANONICAL_INTEGER = r"^(0|-?[1-9][0-9]{0,17})$"
_CANONICAL_DECIMAL = r"^-?(0|[1-9][0-9]{0,14})\.[0-9]{0,14}[1-9]$"


class ParameterKey(Func):
    """The grouping key of a JSON parameter value: 'n:<number>', 's:<text>',
    'j:<json>', or NULL when the parameter is missing. ``name`` matched
    PARAM_NAME (lower-case letters, digits, _), so it is spelled inline."""

    output_field = CharField()

    def __init__(self, column: str, name: str) -> None:
        if not PARAM_NAME.match(name):
            raise ValueError(f"{name!r} is not a parameter name")
        self.name = name
        super().__init__(F(column))

    def as_sql(self, compiler, connection, **extra_context):
        column_sql, params = compiler.compile(self.source_expressions[0])
        value = f"({column_sql} -> '{self.name}')"
        text = f"({value} #>> '{{}}')"
        digits = f"length(regexp_replace(regexp_replace({text}, '[-.]', '', 'g'), '^0+', ''))"
        sql = (
            f"CASE jsonb_typeof({value}) "
            f"WHEN 'number' THEN 'n:' || trim_scale(({value})::numeric)::text "
            f"WHEN 'string' THEN CASE WHEN {text} ~ '{_CANONICAL_INTEGER}' "
            f"OR ({text} ~ '{_CANONICAL_DECIMAL}' AND {digits} <= 15 "
            f"AND {text} !~ '^-?0\\.0000') "
            f"THEN 'n:' || trim_scale(({text})::numeric)::text ELSE 's:' || {text} END "
            f"WHEN 'boolean' THEN 's:' || ({value})::text "
            "WHEN 'null' THEN NULL "
            f"ELSE 'j:' || ({value})::text END"
        )
        return sql, params * sql.count(column_sql) if params else params


def _key_expression(axis: Axis):
    if axis.name.startswith("param."):
        return ParameterKey("parameters", axis.name.removeprefix("param."))
    if axis.name.startswith("run_param."):
        return ParameterKey("run__parameters", axis.name.removeprefix("run_param."))
    return F(axis.path)


def _decode(axis: Axis | None, key: Any) -> Any:
    """A grouping key back to the value the Python path groups by."""
    if axis is None or key is None:
        return key
    if not axis.is_parameter:
        return _axis_value(axis, key)
    kind, text = key[:2], key[2:]
    if kind == "n:":
        return parameter_number(text)
    if kind == "s:":
        # A number spelled with more digits than the SQL rule merges (16 or
        # 17 significant digits that still round-trip): Python's rule decides.
        return parameter_canonical(text)
    return text


class SplitGroups(Exception):
    """Two groups of the database are one cell by Python's rule (a number
    spelled with 16-17 significant digits beside the same JSON number): the
    caller aggregates that comparison in Python instead."""


def cells_in_postgresql(queryset: QuerySet, query: ComparisonQuery) -> Cells:
    assert connection.vendor == "postgresql"
    keyed = queryset.order_by().annotate(
        _x=_key_expression(query.x),
        _s=_key_expression(query.series) if query.series is not None else F("metric__name"),
    )
    cells = Cells()
    groups = keyed.values("_s", "_x").annotate(
        n=Count("id"),
        median=Median("value"),
        q1=Percentile("value", 0.25),
        q3=Percentile("value", 0.75),
        low=Min("value"),
        high=Max("value"),
        approximate_n=Count("id", filter=Q(approximate=True)),
    )
    labels: dict[Any, str] = {}
    for row in groups:
        cells.total += row["n"]
        x = _decode(query.x, row["_x"])
        series_value = (
            query.metric.name if query.series is None else _decode(query.series, row["_s"])
        )
        if x is None:
            cells.missing_x += row["n"]
            continue
        if series_value is None:
            cells.missing_series += row["n"]
            continue
        cells.approximate += row["approximate_n"]
        label = _label(series_value)
        labels[row["_s"]] = label
        cells.series_values.setdefault(label, series_value)
        if (label, x) in cells.stats:
            raise SplitGroups(label, x)
        cells.stats[label, x] = CellStats(
            row["n"], row["median"], row["low"], row["high"], row["q1"], row["q3"]
        )

    runs = keyed
    if query.quiet_verdicts:
        runs = runs.filter(run__noise="")
    threshold = aggregation.run_sample_threshold(cells.stats)
    if threshold is not None:
        runs = runs.alias(_sample=Left(MD5(Cast("run_id", output_field=CharField())), 8)).filter(
            _sample__lt=threshold
        )
    per_run = runs.values("_s", "_x", "run_id").annotate(
        run_value=Median("value"), measurements=Count("id"), first_id=Min("id")
    )
    inner, params = per_run.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT _s, _x, run_id, run_value, measurements, first_id FROM ("  # noqa: S608 -- Django's own SQL
            "SELECT cell.*, row_number() OVER (PARTITION BY _s, _x "
            "ORDER BY md5(run_id::text)) AS position "
            f"FROM ({inner}) AS cell) AS numbered WHERE position <= %s",
            [*params, aggregation.VERDICT_RUNS],
        )
        for series_key, x_key, run_id, value, measurements, first_id in cursor.fetchall():
            label = labels.get(series_key)
            x = _decode(query.x, x_key)
            if label is None or x is None:
                continue
            cells.runs.setdefault((label, x), {})[run_id] = RunCell(
                value, first_id if measurements == 1 else None
            )
    for key in cells.stats:  # a cell whose runs were all left out has none
        cells.runs.setdefault(key, {})
    return cells
