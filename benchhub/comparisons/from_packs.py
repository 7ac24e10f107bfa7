"""A comparison's cells computed from measurement packs (packs.py): the same
cells as in_database.py computes from the rows, bit for bit.

PostgreSQL keeps the packs the comparison's filters keep (on each pack's
copy of what its measurements share: models.py) and concatenates, per
cell, the packed values, run ids and ids of the runs a verdict may sample (all, or
the quiet ones) and the values of the others: one row per cell, as bytes.
NumPy then does what the rows' statement has PostgreSQL do:

- the quartiles: ``percentile_cont``'s own arithmetic (PostgreSQL's
  ``percentile_cont_final_common`` and ``float8_lerp``), the same
  operations on the same doubles in the same order, over a selection
  (``numpy.partition``) instead of a sort;
- the first ``VERDICT_RUNS`` runs in ``run_sample_key`` order, with the
  same rule: the first rows in sample order if no run is among them twice,
  else each run's median in the cell.

A query the packs cannot answer (``packs_can_answer``), or packs that are
not current (built from older versions of the data, or over
``packs.MAX_AGE_SECONDS`` ago: ``packs_current_clause``, checked in the
statement that reads them), leave the rows' statement to answer; in the
second case a build is asked for. tests/comparisons/test_packs.py and
benchmarks/comparison_answers.py hold the two to the same answers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection, transaction
from django.utils.datastructures import MultiValueDict

from benchhub.comparisons import aggregation
from benchhub.comparisons.aggregation import Cells, sample_keys
from benchhub.comparisons.in_database import (
    MIXED_PARAMETERS_SQL,
    binary_cursor,
    cells_collected,
    keyed_for_cells,
    settings_statement,
)
from benchhub.comparisons.models import MeasurementPack
from benchhub.comparisons.packs import NOT_IN_PACKS, packs_build_ask, packs_current_clause
from benchhub.comparisons.query import ComparisonQuery
from benchhub.results.filters import measurement_filterset

# As float8send and int8send write them. The run ids are turned into the
# machine's order (their sample keys are computed); the values and ids are
# only selected and read, as fast either way.
_FLOAT = np.dtype(">f8")
_INTEGER = np.dtype(">i8")


# The measurement filters, named on a pack: run__hardware__cores is
# run_hardware__cores (no run filter: packs_can_answer refuses it).
PackFilter = measurement_filterset(MeasurementPack, "run_")


def packs_can_answer(user: User | AnonymousUser, query: ComparisonQuery) -> bool:
    """Whether packs can answer ``query`` for ``user``: the public view
    (packs hold approved results only), no derived value (``per`` divides
    each by its machine's cores or RAM), and nothing filtered or grouped on
    that a pack does not keep apart. (Where tasks run in the request, no
    build is asked for, but packs built otherwise, as the benchmarks build
    them, are read: the check costs nothing more than the settings' round trip.)"""
    if not settings.BENCHHUB_COMPARISON_PACKS or connection.vendor != "postgresql":
        return False
    if user.is_authenticated or query.per is not None:
        return False
    axes = {query.x.name} | ({query.series.name} if query.series is not None else set())
    return not (axes | set(query.filters)) & NOT_IN_PACKS


class PackedCells:
    """The cells of ``query`` (which ``packs_can_answer``) from its metric's
    packs, tried first by in_database.cells_in_postgresql: ``condition``
    says whether they are current (a hint: the statement that reads them
    checks again, in its own snapshot); ``read`` gives the cells, or None
    where they are not current; ``ask_for_build`` asks the worker for them."""

    def __init__(self, query: ComparisonQuery, condition: tuple[str, list], *, mixed: bool):
        self.query = query
        self.condition = condition
        # Written here, before the transaction, as the rows' statement is
        # (EmptyResultSet for the caller).
        self.statement = _statement(query, condition, mixed=mixed)

    @classmethod
    def of(cls, query: ComparisonQuery, *, check_parameters: bool = False) -> PackedCells | None:
        """None where the versions of the data cannot be read (the rows then)."""
        condition = packs_current_clause(query.metric.pk)
        if condition is None:
            return None
        return cls(query, condition, mixed=check_parameters)

    def read(self, cursor) -> Cells | None:
        cursor.execute(connection.ops.compose_sql(*self.statement))
        rows = cursor.fetchall()
        verdict_runs = aggregation.VERDICT_RUNS
        cells = []
        for check_row, s, x, n, low, high, approximate_n, mixed, vals, runs, ids, others in rows:
            if check_row:
                # the statement's last row: whether the packs were current
                # (in the column of ``mixed``)
                if not mixed:
                    return None  # built again between the hint and the statement
                continue
            eligible = np.frombuffer(vals or b"", _FLOAT)
            values = np.concatenate((eligible, np.frombuffer(others or b"", _FLOAT)))
            first: tuple[list, list, list] = ([], [], [])
            if s is not None and x is not None:
                first = first_runs(
                    np.frombuffer(runs or b"", _INTEGER).astype(np.int64),
                    eligible,
                    np.frombuffer(ids or b"", _INTEGER),
                    verdict_runs,
                )
            quartiles = tuple(percentile_cont(values, (0.25, 0.5, 0.75)))
            cells.append((s, x, n, low, high, approximate_n, quartiles, *first, mixed, False))
        return cells_collected(self.query, cells)

    def ask_for_build(self) -> None:
        packs_build_ask(self.query.metric.pk)


def _statement(
    query: ComparisonQuery, condition: tuple[str, list], *, mixed: bool
) -> tuple[str, list]:
    packs = MeasurementPack.objects.filter(metric=query.metric)
    data = MultiValueDict({key: values for key, values in query.filters.items() if values})
    # The filters of the rows' query, on the pack's copies (selectors._measurements
    # has refused any that is not valid).
    keyed, columns = keyed_for_cells(
        PackFilter(data=data, queryset=packs).qs, query, mixed=mixed, run_prefix="run_"
    )
    keyed = keyed.values("n", "low", "high", "approximate", "vals", "runs", "ids", *columns)
    inner, params = keyed.query.sql_with_params()
    condition, condition_params = condition
    sql = f"""
        SELECT false, _s, _x, sum(n)::bigint, min(low), max(high),
               coalesce(sum(n) FILTER (WHERE approximate), 0)::bigint,
               {MIXED_PARAMETERS_SQL if mixed else "true"},
               string_agg(vals, '') FILTER (WHERE _eligible),
               string_agg(runs, '') FILTER (WHERE _eligible),
               string_agg(ids, '') FILTER (WHERE _eligible),
               string_agg(vals, '') FILTER (WHERE NOT _eligible)
        FROM ({inner}) AS packed
        WHERE {condition}
        GROUP BY _s, _x
        UNION ALL
        -- Whether the packs were current, in the same snapshot as they were
        -- read (in the column of mixed).
        SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, {condition},
               NULL, NULL, NULL, NULL
    """  # noqa: S608 -- Django's own SQL and ours
    return sql, [*params, *condition_params, *condition_params]


def cells_from_packs(query: ComparisonQuery, *, check_parameters: bool = False) -> Cells | None:
    """The cells of ``query`` from the packs alone, in a transaction of their
    own; None where they are not current (a build is asked for) or where the
    versions cannot be read (none is). For the tests and benchmarks: a
    comparison goes through in_database.cells_in_postgresql(packed=...)."""
    packed = PackedCells.of(query, check_parameters=check_parameters)
    if packed is None:
        return None
    with transaction.atomic(savepoint=False), binary_cursor() as cursor:
        cursor.execute(settings_statement())
        cells = packed.read(cursor)
    if cells is None:
        packed.ask_for_build()
    return cells


def percentile_cont(values: np.ndarray, fractions: Sequence[float]) -> list[float]:
    """PostgreSQL's ``percentile_cont(fractions) WITHIN GROUP (ORDER BY v)``
    of ``values``, bit for bit: the rows at floor and ceiling of
    ``fraction * (n - 1)``, and ``low + proportion * (high - low)``.
    Reorders ``values`` (a selection in place: no copy of a large cell)."""
    count = len(values)
    spots = []
    for fraction in fractions:
        position = fraction * (count - 1)
        spots.append((position, math.floor(position), math.ceil(position)))
    wanted = sorted({row for _, first, second in spots for row in (first, second)})
    if count > 1:
        values.partition(wanted)
    answers = []
    for position, first, second in spots:
        low = float(values[first])
        if second > first:
            answers.append(low + (position - first) * (float(values[second]) - low))
        else:
            answers.append(low)
    return answers


def first_runs(
    runs: np.ndarray, values: np.ndarray, ids: np.ndarray, count: int
) -> tuple[list[int], list[float], list[int | None]]:
    """A cell's first ``count`` runs in ``run_sample_key`` order (ties by
    run id), each with its value there and its measurement's id where it has
    one measurement there: the rows' statement's rule (in_database.py)."""
    if not len(runs):
        return [], [], []
    sample = sample_keys(runs)
    rows = np.arange(len(runs))
    if len(runs) > count + 1:
        # Only the rows at or below the (count + 1)th smallest sample key
        # can be among the first count + 1: sorted, not every row.
        rows = np.flatnonzero(sample <= np.partition(sample, count)[count])
    first = rows[np.lexsort((runs[rows], sample[rows]))][: count + 1]
    in_order = runs[first]
    # in (sample, run) order a run's rows are side by side
    if not (in_order[1:] == in_order[:-1]).any():
        taken = first[:count]
        return runs[taken].tolist(), values[taken].tolist(), ids[taken].tolist()
    # A run is there twice (pooled points): each run's median in the cell.
    unique, inverse, counts = np.unique(runs, return_inverse=True, return_counts=True)
    unique_sample = sample_keys(unique)
    chosen = np.lexsort((unique, unique_sample))[:count]
    grouped = np.argsort(inverse, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    run_ids: list[int] = []
    run_values: list[float] = []
    only_ids: list[int | None] = []
    for index in chosen:
        its = grouped[starts[index] : starts[index] + counts[index]]
        run_ids.append(int(unique[index]))
        if len(its) == 1:
            run_values.append(float(values[its[0]]))
            only_ids.append(int(ids[its[0]]))
        else:
            run_values.append(percentile_cont(values[its], (0.5,))[0])
            only_ids.append(None)
    return run_ids, run_values, only_ids
