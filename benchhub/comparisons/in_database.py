"""A comparison's cells computed by PostgreSQL, in one statement that reads
each matching measurement once and sends back one row per cell.

Per (series, x) — a hash aggregate, no sort of the rows: count, min, max,
how many are approximate, and the cell's values, runs and ids as arrays;
then per cell, from its own arrays (small sorts instead of one sort of
every row; unnested in the select list, which streams, where an unnest in
FROM would first copy the array into a tuplestore, and the sampled runs'
values read by subscript): the quartiles (``percentile_cont``, interpolated like
``statistics.quantiles(method="inclusive")``) and its first
``VERDICT_RUNS`` runs in ``run_sample_key`` order, each with its median
there and its measurement's id if it has only one there
(a large cell looks only below a cutoff of the sample key, see
``SAMPLED_ROWS``). Those runs come from the cell's first ``VERDICT_RUNS`` + 1
rows in sample order (a top-N sort) when no run is among them twice, as in a
comparison whose axes fix the point, where each run has one measurement per
cell; only a cell where one is (pooled points) groups its rows by run and takes
medians, about twice the time per cell (docs/performance.md). A large cell
looks for those rows only among the rows it kept, as it was grouped, of the
runs first in sample order (``SAMPLED_LEVELS``), not among all of its own.
Who may see a run is read from the run's copy of its submission's status
(``Run.submission_status``): no measurement's run is joined to its submission.
Groups with a missing key are the "left out" notes. For the page, each cell also says
whether its measurements' (or their runs') parameter keys differ, by
comparing the least and greatest hash of them: where no cell's do, the page
has no pooled parameter to look for and skips that query.

Grouping keys are stored: a parameter's key was worked out when the result
was uploaded (``benchhub.results.points``, the rule of the Python path and
of the filters), so the database groups by plain text. The embedded
default (SQLite) aggregates in Python with the same rules;
tests/comparisons/test_database_aggregation.py runs both on the same data.

The statement runs under ``SETTINGS``, for its own transaction only: more
than PostgreSQL's default 4 MB of work memory for a large comparison (the
per-cell arrays), and parallel workers for the scan and joins of a large
one, with one hash table of each joined table that the workers build
together. At the default costs the planner never splits the scan here;
with these, the three cases of benchmarks/compare.py (148,000, 74,000 and
55,000 measurements) are read by three processes (two workers and the
leader). The aggregate stays in the leader: array_agg has no parallel
form before PostgreSQL 16, and one of our own with a combine function
(``array_append``, combined by ``array_cat``) was measured and gained
nothing more at 1 M. docs/performance.md has the figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import BooleanField, ExpressionWrapper, F, Q, QuerySet, Value
from django.db.models.fields.json import KeyTextTransform

from benchhub.comparisons import aggregation
from benchhub.comparisons.aggregation import (
    SAMPLE_MODULUS,
    SAMPLE_MULTIPLIER,
    Cells,
    CellStats,
    RunCells,
    _axis_value,
    _label,
)
from benchhub.comparisons.query import Axis, ComparisonQuery
from benchhub.results.filters import PARAM_NAME
from benchhub.results.points import point_from_key

if TYPE_CHECKING:
    from benchhub.comparisons.from_packs import PackedCells

WORK_MEM = "64MB"
SETTINGS = {
    "work_mem": WORK_MEM,
    # PostgreSQL's defaults: 1000 and 0.1.
    "parallel_setup_cost": "100",
    "parallel_tuple_cost": "0.01",
    # PostgreSQL's default: 8MB. The runs and submissions a large comparison
    # joins are smaller than that up to millions of measurements: with it,
    # each process built its own hash table of each; now the workers build
    # one together (Parallel Hash). A small comparison still plans serially.
    "min_parallel_table_scan_size": "0",
    # PostgreSQL's default: on, for a statement the planner costs over
    # 100,000 (and optimized and inlined over 500,000), as this one is at
    # 10 M measurements. Compiling its many expressions cost more CPU than
    # it ever saved: at 1 M, forced, 320-1,060 ms of it against 170-270 ms
    # for the whole statement without (docs/performance.md).
    "jit": "off",
}


def settings_statement() -> str:
    """``SETTINGS`` for the current transaction only, in one round trip
    (SET LOCAL takes a statement per setting)."""
    return "SELECT " + ", ".join(
        f"set_config('{name}', '{value}', true)" for name, value in SETTINGS.items()
    )


# A cell of more measurements than this many times VERDICT_RUNS groups only
# the runs whose sample key falls below a cutoff that leaves about as many
# measurements (the first VERDICT_RUNS runs in sample order are among them
# unless runs have several measurements each there; then it is read again,
# uncut): grouping all of a large cell's runs would cost more than the rest
# of the statement.
SAMPLED_ROWS = 4


def key_expression(axis: Axis, run_prefix: str = "run__"):
    """What a comparison groups ``axis`` by: a parameter's stored key, or the
    field; reached from a measurement (``run__``) or from a pack's copies of
    its runs' fields (``run_``: from_packs.py)."""
    for prefix, column in (
        ("param.", "parameter_keys"),
        ("run_param.", f"{run_prefix}parameter_keys"),
    ):
        if axis.name.startswith(prefix):
            name = axis.name.removeprefix(prefix)
            if not PARAM_NAME.match(name):
                raise ValueError(f"{name!r} is not a parameter name")
            return KeyTextTransform(name, column)
    return F(run_prefix + axis.path.removeprefix("run__"))


def _decode(axis: Axis | None, key: Any) -> Any:
    """A grouping key back to the value the Python path groups by."""
    if axis is None or key is None:
        return key
    if axis.is_parameter:
        return point_from_key(key)
    return _axis_value(axis, key)


class SplitGroups(Exception):
    """Two groups of the database are one cell by Python's rule: the caller
    aggregates that comparison in Python instead. Keys are computed by
    Python's rule, so only a pathological spelling gets here (an integer
    beyond 2**63 beside the float of the same value)."""


MIXED_PARAMETERS_SQL = """min(jsonb_hash(_keys)) <> max(jsonb_hash(_keys))
                   OR min(jsonb_hash(_run_keys)) <> max(jsonb_hash(_run_keys))"""


# Sampled levels, sparsest first: as it is grouped, each cell also keeps the
# eligible rows whose run's sample key is below SAMPLE_MODULUS / level (about
# a 16th of its runs). A cell with more rows than a verdict reads at a level
# finds its first runs among those (514 a cell in case 1 of
# benchmarks/compare.py at 1 M) instead of unnesting all of its own (8,230).
SAMPLED_LEVELS = (16,)


def _levels_aggregated(sample: str, value: str) -> str:
    """Each sampled level's runs, values and ids (NULL where it has no row)."""
    return ",\n".join(
        f"array_agg({column}) FILTER (WHERE _eligible AND {sample} < "
        f"{SAMPLE_MODULUS // level}) AS {name}_{level}"
        for level in SAMPLED_LEVELS
        for column, name in (("run_id", "runs"), (value, "vals"), ("id", "ids"))
    )


def _level_picked() -> str:
    """The arrays (runs, vals, ids) and cutoff the first rows are read from."""
    enough = [
        f"cardinality(cell.runs_{level}) > {aggregation.VERDICT_RUNS}" for level in SAMPLED_LEVELS
    ]
    return ",\n".join(
        "CASE "
        + " ".join(
            f"WHEN {condition} THEN {picked}"
            for condition, picked in zip(
                enough,
                [
                    f"cell.{name}_{level}" if name else str(SAMPLE_MODULUS)
                    for level in SAMPLED_LEVELS
                ],
                strict=True,
            )
        )
        + f" ELSE cell.{name or 'cutoff'} END AS {name or 'cutoff'}"
        for name in ("runs", "vals", "ids", "")
    )


def _statement(inner: str, *, mixed: bool, value: str = "value") -> str:
    """The cells of ``inner`` (rows _s, _x, ``value`` (the value or a derived
    one), approximate, run_id, id, _eligible, _keys, _run_keys): one row per
    cell, its verdict runs as arrays in sample order."""
    sample = f"mod(mod(run_id, {SAMPLE_MODULUS}) * {SAMPLE_MULTIPLIER}, {SAMPLE_MODULUS})"
    return f"""
        SELECT cell._s, cell._x, cell.n, cell.low, cell.high, cell.approximate_n,
               quartiles.q,
               CASE WHEN first.single THEN first.run_ids ELSE runs.run_ids END,
               CASE WHEN first.single THEN first.run_values ELSE runs.run_values END,
               CASE WHEN first.single THEN first.only_ids ELSE runs.only_ids END,
               cell.mixed, cell.cutoff < {SAMPLE_MODULUS} AS cut
        FROM (
            SELECT _s, _x, count(*) AS n, min({value}) AS low, max({value}) AS high,
                   count(*) FILTER (WHERE approximate) AS approximate_n,
                   -- jsonb's own hash function (of its hash index support)
                   {MIXED_PARAMETERS_SQL if mixed else "true"} AS mixed,
                   array_agg({value}) AS vals,
                   CASE WHEN %s::bigint IS NOT NULL AND count(*) > %s::bigint
                   THEN {SAMPLE_MODULUS}::bigint * %s::bigint / count(*)
                   ELSE {SAMPLE_MODULUS}::bigint END AS cutoff,
                   array_agg(CASE WHEN _eligible THEN run_id END) AS runs,
                   array_agg(id) AS ids,
                   {_levels_aggregated(sample, value)}
            FROM ({inner}) AS measured
            GROUP BY _s, _x
        ) AS cell
        CROSS JOIN LATERAL (
            -- Where the first rows are looked for: the sparsest level with
            -- more rows than a verdict reads (each of its rows comes before
            -- every other row of the cell in sample order), else the cell's
            -- own arrays below its cutoff.
            SELECT {_level_picked()}
        ) AS pick
        CROSS JOIN LATERAL (
            SELECT percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY v) AS q
            FROM (SELECT unnest(cell.vals) AS v) AS cell_values
        ) AS quartiles
        CROSS JOIN LATERAL (
            -- The cell's first rows in sample order, one more than a verdict
            -- reads (a top-N sort, no grouping): if no run is among them twice,
            -- the first runs are these rows, each its run's only one there.
            SELECT count(*) = count(DISTINCT run_id) AS single,
                   (array_agg(run_id))[1:%s] AS run_ids,
                   (array_agg(pick.vals[i]))[1:%s] AS run_values,
                   (array_agg(pick.ids[i]))[1:%s] AS only_ids
            FROM (
                SELECT run_id, i
                FROM (
                    SELECT unnest(pick.runs) AS run_id, generate_subscripts(pick.runs, 1) AS i
                ) AS cell_runs
                WHERE {sample} < pick.cutoff AND cell._s IS NOT NULL AND cell._x IS NOT NULL
                ORDER BY {sample}, run_id
                LIMIT %s
            ) AS first_rows
        ) AS first
        CROSS JOIN LATERAL (
            -- Else each run grouped, its median there. In the sorted
            -- subquery's order: its LIMIT keeps the Sort below this Agg (an
            -- ORDER BY here would sort each array again).
            SELECT array_agg(run_id) AS run_ids,
                   array_agg(run_value) AS run_values,
                   array_agg(only_id) AS only_ids
            FROM (
                SELECT run_id, {sample} AS sample,
                       CASE WHEN count(*) = 1 THEN min(id) END AS only_id,
                       CASE WHEN count(*) = 1 THEN min(v) ELSE (
                           SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY w)
                           FROM unnest(array_agg(v)) AS w
                       ) END AS run_value
                FROM (
                    SELECT run_id, cell.vals[i] AS v, cell.ids[i] AS id
                    FROM (
                        SELECT unnest(cell.runs) AS run_id, generate_subscripts(cell.runs, 1) AS i
                    ) AS cell_runs
                    WHERE {sample} < cell.cutoff
                ) AS one
                WHERE cell._s IS NOT NULL AND cell._x IS NOT NULL AND NOT first.single
                GROUP BY run_id
                ORDER BY sample, run_id
                LIMIT %s
            ) AS sampled
        ) AS runs
    """  # noqa: S608 -- Django's own SQL and our integers


def keyed_for_cells(
    queryset: QuerySet, query: ComparisonQuery, *, mixed: bool, run_prefix: str = "run__"
) -> tuple[QuerySet, list[str]]:
    """``queryset`` with what a comparison's cells group by (``_s``, ``_x``),
    whether a row's run may be sampled for a verdict (``_eligible``) and,
    with ``mixed``, the parameter keys (``_keys``, ``_run_keys``), and those
    columns' names; of measurements (``run__``) or of packs (``run_``)."""
    keyed = queryset.order_by().annotate(
        _x=key_expression(query.x, run_prefix),
        _s=key_expression(query.series, run_prefix)
        if query.series is not None
        else Value(query.metric.name),
        _eligible=ExpressionWrapper(Q(**{f"{run_prefix}noise": ""}), output_field=BooleanField())
        if query.quiet_verdicts
        else Value(True, output_field=BooleanField()),
    )
    columns = ["_s", "_x", "_eligible"]
    if mixed:
        keyed = keyed.annotate(
            _keys=F("parameter_keys"), _run_keys=F(f"{run_prefix}parameter_keys")
        )
        columns += ["_keys", "_run_keys"]
    return keyed, columns


def cells_statement(
    queryset: QuerySet, query: ComparisonQuery, *, cut: bool = True, mixed: bool = False
) -> tuple[str, list[Any]]:
    """The one statement (and its parameters) of ``cells_in_postgresql``;
    with ``cut``, a large cell groups only the runs below its cutoff; with
    ``mixed``, each cell says whether its parameter keys differ (else it
    says they may: the check costs a tenth of the statement, and only the
    page asks)."""
    keyed, columns = keyed_for_cells(queryset, query, mixed=mixed)
    value = "value" if query.per is None else "_value"  # selectors.per_divided
    keyed = keyed.values(value, "approximate", "run_id", "id", *columns)
    inner, params = keyed.query.sql_with_params()
    rows = SAMPLED_ROWS * aggregation.VERDICT_RUNS
    runs = aggregation.VERDICT_RUNS
    return _statement(inner, mixed=mixed, value=value), [
        rows if cut else None,
        rows,
        rows,
        *params,
        *(runs, runs, runs, runs + 1),
        runs,
    ]


class _BinaryResults(psycopg.Cursor):
    """A cursor whose rows come back in PostgreSQL's binary format, and which
    never prepares: a comparison's statement is written out whole, each once
    (``binary_cursor``), as Django's client-side cursor never prepares."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=False, binary=True)


def binary_cursor() -> CursorWrapper:
    """A cursor of the connection whose rows come back in PostgreSQL's binary
    format. The cells' arrays hold tens of thousands of numbers (a run id,
    a value and an id per run per cell): parsed from text they were most of
    the Python time of reading them (15 ms against 4 for the sql-bench
    comparison of benchmarks/compare.py), and PostgreSQL spent 6 ms more of
    its own writing them as text. Binary results need a cursor that binds
    on the server, which Django's client-side one does not: the statement
    is given to it with its parameters already written in as Django writes
    them (``compose_sql``), so PostgreSQL reads the same text. Wrapped as
    Django wraps its own, so that the queries are counted."""
    connection.ensure_connection()
    raw = _BinaryResults(connection.connection)
    if connection.queries_logged:
        return connection.make_debug_cursor(raw)
    return connection.make_cursor(raw)


def cells_in_postgresql(
    queryset: QuerySet,
    query: ComparisonQuery,
    *,
    check_parameters: bool = False,
    packed: PackedCells | None = None,
) -> Cells:
    """The cells of ``queryset`` for ``query``: from the measurement packs
    where ``packed`` (from_packs.py) is given and they are current, else
    from the rows. Whether they are current is asked with the statement's
    settings, in the same round trip; where they are not (or turn out not
    to be when read), a build is asked for and the rows answer."""
    assert connection.vendor == "postgresql"
    # Written before the transaction: a filter no row can match (cores=-1)
    # has no statement (EmptyResultSet, for the caller), and raised inside
    # it would break a caller's transaction that has no savepoint here.
    statement = cells_statement(queryset, query, mixed=check_parameters)
    # No savepoint inside a caller's transaction: the setting then lasts
    # until that transaction ends, which is harmless, and costs no round trip.
    with transaction.atomic(savepoint=False), binary_cursor() as cursor:
        if packed is None:
            cursor.execute(settings_statement())
        else:
            condition, params = packed.condition
            cursor.execute(
                connection.ops.compose_sql(f"{settings_statement()}, {condition}", params)
            )
            if cursor.fetchone()[-1]:
                cells = packed.read(cursor)
                if cells is not None:
                    return cells
            packed.ask_for_build()
        cursor.execute(connection.ops.compose_sql(*statement))
        rows = cursor.fetchall()
        if any(row[-1] and len(row[7] or ()) < aggregation.VERDICT_RUNS for row in rows):
            # A cut cell kept fewer runs than a verdict reads (its runs have
            # many measurements each): maybe not its first ones. Again, uncut.
            uncut = cells_statement(queryset, query, cut=False, mixed=check_parameters)
            cursor.execute(connection.ops.compose_sql(*uncut))
            rows = cursor.fetchall()
    return cells_collected(query, rows)


def cells_collected(query: ComparisonQuery, rows: list[tuple]) -> Cells:
    """The cells of ``rows``, one per cell: (series key, x key, n, min, max,
    approximate n, (q1, median, q3), first runs, their values, their only
    measurements' ids, whether its parameter keys differ, whether it was cut
    (not read here))."""
    cells = Cells(parameters_may_differ=False)
    for (
        series_key,
        x_key,
        n,
        low,
        high,
        approximate_n,
        (q1, median, q3),
        run_ids,
        run_values,
        only_ids,
        mixed,
        _,
    ) in rows:
        cells.total += n
        x = _decode(query.x, x_key)
        series_value = (
            query.metric.name if query.series is None else _decode(query.series, series_key)
        )
        if x is None:
            cells.missing_x += n
            continue
        if series_value is None:
            cells.missing_series += n
            continue
        # a cell left out (above) is not drawn: what it mixes pools nothing
        cells.parameters_may_differ = cells.parameters_may_differ or mixed
        cells.approximate += approximate_n
        label = _label(series_value)
        cells.series_values.setdefault(label, series_value)
        if (label, x) in cells.stats:
            raise SplitGroups(label, x)
        cells.stats[label, x] = CellStats(n, median, low, high, q1, q3)
        cells.runs[label, x] = RunCells(run_ids or [], run_values or [], only_ids or [])
    return cells
