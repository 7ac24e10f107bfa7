"""The reads of a comparison, handed to the pure aggregation (aggregation.py).

On PostgreSQL the database computes the cells: from the measurement packs
where they can answer and are current (from_packs.py, packs.py), else from
the rows (in_database.py); a row per cell and a bounded sample of runs per
cell come back, whatever the number of measurements. The embedded default
(SQLite) has no percentile aggregate: there the matching measurements come
back as values-only rows (at most MAX_ROWS) and Python computes the same
cells (``cells_from_rows``). Either way there is never a query per cell.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count, ExpressionWrapper, F, FloatField, QuerySet, Value
from django.db.models.functions import Cast
from django.utils.datastructures import MultiValueDict
from rest_framework.exceptions import ValidationError

from benchhub.comparisons.aggregation import (
    Comparison,
    Row,
    cells_from_rows,
    comparison_aggregate,
    comparison_with_steps,
    comparison_with_verdicts,
    order_key,
    samples_wanted,
)
from benchhub.comparisons.from_packs import PackedCells, packs_can_answer
from benchhub.comparisons.in_database import SplitGroups, cells_in_postgresql, key_expression
from benchhub.comparisons.kept import kept_answer
from benchhub.comparisons.query import PER, ComparisonQuery, InvalidComparison
from benchhub.comparisons.scores import combined_scores
from benchhub.lib.collector import cyclic_gc_paused
from benchhub.results import selectors as results_selectors
from benchhub.results.filters import PARAM_NAME, MeasurementFilter
from benchhub.results.models import Measurement, Metric, MetricParameter, Submission
from benchhub.results.points import point_from_key
from benchhub.results.selectors import User

# The most measurements one comparison reads (≈ 300 bytes each in memory).
MAX_ROWS = 100_000
# Cap on the rows read to list the parameter names the page offers.
_PARAMETER_SAMPLE = 5000


def comparison_build(
    *,
    user: User,
    query: ComparisonQuery,
    strict_reference: bool = True,
    check_parameters: bool = False,
) -> Comparison:
    """Read and aggregate. Only results ``user`` may see (approved, or
    their own); see ``comparison_aggregate`` for ``strict_reference``. With
    ``check_parameters``, ``parameters_may_differ`` is False when no cell
    can pool a parameter (the page then skips ``comparison_pooling``).
    The public view's answer is kept until the data it read changes
    (kept.py)."""
    viewer = _viewer(user)
    measurements = _measurements(viewer, query)

    def compute() -> Comparison:
        return _comparison_compute(viewer, query, measurements, strict_reference, check_parameters)

    if viewer.is_authenticated:
        comparison = compute()
        _note_own_unpublished(comparison, measurements)
        return comparison
    comparison = kept_answer(
        ("comparison", strict_reference, check_parameters, *_answer_parts(query, measurements)),
        compute,
        metric=query.metric.pk,
        request=("comparison", query, strict_reference, check_parameters),
    )
    # Kept for the same filters, maybe given in another order: the answer
    # gives them as this request did.
    comparison.query = query
    return comparison


def _comparison_compute(
    user: User,
    query: ComparisonQuery,
    measurements: QuerySet,
    strict_reference: bool,
    check_parameters: bool,
) -> Comparison:
    """Tens of thousands of acyclic tuples: built with the cyclic collector
    paused (benchhub.lib.collector), and the runs per cell (``cell_runs``)
    dropped once the verdicts and scores are made."""
    with cyclic_gc_paused():
        try:
            if connection.vendor != "postgresql":
                raise SplitGroups
            packed = (
                PackedCells.of(query, check_parameters=check_parameters)
                if packs_can_answer(user, query)
                else None
            )
            cells = cells_in_postgresql(
                measurements, query, check_parameters=check_parameters, packed=packed
            )
        except (SplitGroups, EmptyResultSet):
            # EmptyResultSet: a filter no row can match (cores=-1), for which
            # Django writes no statement; the ORM's read then answers no rows.
            cells = cells_from_rows(query, _rows(user, query))
        comparison = comparison_aggregate(
            query=query, cells=cells, strict_reference=strict_reference
        )
        wanted = samples_wanted(comparison)
        samples = _samples(query, wanted) if wanted else {}
        if query.steps:
            comparison = comparison_with_steps(comparison, samples)
        else:
            comparison = comparison_with_verdicts(comparison, samples)
            comparison.summary = combined_scores(comparison)
        # The runs per cell served the verdicts and scores: freed now, by
        # reference counting, rather than walked by the first collection
        # after the pause while the answer is rendered.
        comparison.cell_runs = {}
    return comparison


def _samples(query: ComparisonQuery, wanted: list[int]) -> dict[int, list[float]]:
    """The repetitions of the ``wanted`` measurements, divided like their
    values where the comparison is ``per`` something."""
    if query.per is None:
        return dict(Measurement.objects.filter(pk__in=wanted).values_list("pk", "samples"))
    path, scale, _ = PER[query.per]
    rows = Measurement.objects.filter(pk__in=wanted).values_list("pk", "samples", path)
    return {
        pk: [sample * scale / divisor for sample in samples or ()]
        for pk, samples, divisor in rows
        if divisor
    }


def _note_own_unpublished(comparison: Comparison, measurements: QuerySet) -> None:
    """A submitter sees their own results that are not public yet (pending,
    hidden …): say so, since whoever else opens the link sees the
    comparison without them (or nothing at all)."""
    own = measurements.exclude(results_selectors.public_submissions_q("run__submission__"))
    count = own.order_by().count()
    if count:
        comparison.notes.append(
            f"{count} of these measurement{'s are' if count != 1 else ' is'} your own and "
            "not public yet: whoever else opens this link sees the comparison without "
            f"{'them' if count != 1 else 'it'}."
        )


def _viewer(user: User) -> User:
    """Whom the answer is computed for: anyone whose view is the public one
    (no results of their own that are not public) as the public, so that
    their answers are kept and shared; else the user."""
    if not user.is_authenticated:
        return user
    own_unpublished = Submission.objects.filter(submitter=user).exclude(
        status__in=(Submission.Status.APPROVED, Submission.Status.DELETED)
    )
    return user if own_unpublished.exists() else AnonymousUser()


def _answer_parts(query: ComparisonQuery, measurements: QuerySet) -> tuple:
    """What an answer depends on besides the data: the query's choices as
    given (the answer carries them) and the statement it filters with
    (visibility, filters and their alias spellings)."""
    try:
        sql, params = measurements.query.sql_with_params()
    except EmptyResultSet:
        # A filter no row can match (cores=-1: out of the column's range),
        # which Django writes no statement for: the answer is empty whatever
        # the data, and the filters below tell it from any other.
        sql, params = None, ()
    series = (query.series.name, query.series.path) if query.series is not None else None
    return (
        query.metric.pk,
        (query.x.name, query.x.path),
        series,
        query.reference,
        query.minimum_effect,
        query.quiet_verdicts,
        query.steps,
        query.per,
        sorted((name, tuple(values)) for name, values in query.filters.items()),
        sql,
        params,
    )


def comparison_measurements(*, user: User, query: ComparisonQuery) -> QuerySet:
    """The measurements ``query`` reads, as ``user`` may see them: for a page
    that counts something more about them (a history's machines per version)."""
    return _measurements(_viewer(user), query)


def _measurements(user: User, query: ComparisonQuery):
    """The visible measurements of the metric, with the fixed filters applied
    exactly as /api/v1/measurements/ applies them."""
    queryset = results_selectors.measurement_list(user=user, by_run_copy=True).filter(
        metric=query.metric
    )
    # get() gives a filter's last value, getlist() all of them (param.* may repeat)
    data = MultiValueDict({key: values for key, values in query.filters.items() if values})
    filterset = MeasurementFilter(data=data, queryset=queryset)
    if not filterset.is_valid():
        raise InvalidComparison(
            {key: " ".join(str(m) for m in messages) for key, messages in filterset.errors.items()}
        )
    try:
        return per_divided(filterset.qs, query)
    except ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"request": exc.detail}
        raise InvalidComparison(
            {
                key: " ".join(map(str, v)) if isinstance(v, list) else str(v)
                for key, v in detail.items()
            }
        ) from None


def per_divided(measurements: QuerySet, query: ComparisonQuery) -> QuerySet:
    """With ``per``, the measurements whose run's machine says how many cores
    (or bytes of RAM) it has, each with ``_value``: its value divided by
    them (in GiB). A machine that did not say is left out, never divided by 0."""
    if query.per is None:
        return measurements
    path, scale, _ = PER[query.per]
    divided = ExpressionWrapper(
        F("value") * Value(float(scale)) / Cast(F(path), FloatField()), output_field=FloatField()
    )
    return measurements.filter(**{f"{path}__gt": 0}).annotate(_value=divided)


def value_column(query: ComparisonQuery) -> str:
    """The column a comparison aggregates: the value, or its derived one."""
    return "value" if query.per is None else "_value"


def _rows(user: User, query: ComparisonQuery) -> Iterable[Row]:
    """At most MAX_ROWS rows (aggregated in Python, as SQLite has no median):
    a comparison over more is refused with a message asking for filters,
    rather than holding every measurement in memory for one request."""
    columns = [query.x.path, value_column(query), "approximate", "run_id", "id", "run__noise"]
    if query.series is not None:
        columns.insert(0, query.series.path)
    rows = list(_measurements(user, query).order_by().values_list(*columns)[: MAX_ROWS + 1])
    if len(rows) > MAX_ROWS:
        raise InvalidComparison(
            {
                "request": f"more than {MAX_ROWS:,} measurements match; fix more of the "
                "environment (engine, version_major, filesystem, …) to compare fewer"
            }
        )
    if query.series is None:
        return ((None, *row) for row in rows)
    return rows


def comparison_parameter_names(*, metric: Metric) -> tuple[list[str], list[str]]:
    """The measurement and run parameter names the metric's stored results
    use, for the page's x and series choices (kept at upload: MetricParameter)."""
    names: dict[str, list[str]] = {scope: [] for scope in MetricParameter.Scope}
    for scope, name in MetricParameter.objects.filter(metric=metric).values_list("scope", "name"):
        if PARAM_NAME.match(name):
            names[scope].append(name)
    return (
        sorted(names[MetricParameter.Scope.POINT], key=order_key),
        sorted(names[MetricParameter.Scope.RUN], key=order_key),
    )


@dataclass(frozen=True)
class PooledParameter:
    """A parameter neither on an axis nor fixed whose values differ inside
    at least one cell: that cell's median mixes, say, 1 and 100 clients."""

    filter: str  # param.<name> or run_param.<name>: the filter that fixes it
    name: str
    values: list[str]  # most measured first

    @property
    def title(self) -> str:
        """For people, as an axis of the same filter is titled: a run
        parameter named like a point one (backup's tool) is told apart."""
        if self.filter.startswith("run_param."):
            return f"{self.name} (run parameter)"
        return self.name


def comparison_pooling(*, user: User, query: ComparisonQuery) -> list[PooledParameter]:
    """For the page: which unfixed parameters vary within a cell. One
    query over the distinct (series, x, parameters, run parameters); the
    public view's answer kept like the comparison's."""
    viewer = _viewer(user)
    measurements = _measurements(viewer, query)
    if viewer.is_authenticated:
        return _pooling_compute(query, measurements)
    return kept_answer(
        ("pooling", *_answer_parts(query, measurements)),
        lambda: _pooling_compute(query, measurements),
        metric=query.metric.pk,
        request=("pooling", query),
    )


def comparison_answer_refresh(request: tuple) -> bool:
    """Compute again (and keep) the public answer ``request`` was kept for
    (``kept_answer``'s ``request``); False if it can no longer be asked:
    its metric is gone, or its filters are refused now."""
    kind, query, *flags = request
    metric = Metric.objects.select_related("benchmark").filter(pk=query.metric.pk).first()
    if metric is None:
        return False
    query = dataclasses.replace(query, metric=metric)
    try:
        if kind == "pooling":
            comparison_pooling(user=AnonymousUser(), query=query)
        else:
            strict_reference, check_parameters = flags
            comparison_build(
                user=AnonymousUser(),
                query=query,
                strict_reference=strict_reference,
                check_parameters=check_parameters,
            )
    except InvalidComparison:
        return False
    return True


def _pooling_compute(query: ComparisonQuery, measurements: QuerySet) -> list[PooledParameter]:
    # Keys, not the parameters: a cell is then what the comparison groups,
    # and every column is in the index the comparison reads.
    # Measurements without an x or series value are left out of the chart
    # (its notes count them): none of their parameters is pooled in a point.
    columns = ["_x", "parameter_keys", "run__parameter_keys"]
    keyed = measurements.order_by().annotate(_x=key_expression(query.x)).filter(_x__isnull=False)
    if query.series is not None:
        keyed = keyed.annotate(_s=key_expression(query.series)).filter(_s__isnull=False)
        columns.insert(0, "_s")
    rows = keyed.values_list(*columns).annotate(n=Count("id"))[:_PARAMETER_SAMPLE]
    taken = _fixed_parameters(query)
    seen: dict[tuple[str, str], dict[Any, set[str]]] = defaultdict(lambda: defaultdict(set))
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for *cell, parameters, run_parameters, n in rows:
        key = json.dumps(cell if query.series is not None else [None, *cell], default=str)
        for scope, values in (("param", parameters), ("run_param", run_parameters)):
            for name, value in (values or {}).items():
                if f"{scope}.{name}" in taken or not PARAM_NAME.match(name):
                    continue
                text = parameter_text(point_from_key(value))
                seen[scope, name][key].add(text)
                counts[scope, name][text] += n
    pooled = []
    for (scope, name), cells in seen.items():
        if any(len(values) > 1 for values in cells.values()):
            # most measured first; as often, in the values' own order (1, 2, 16)
            values = sorted(
                counts[scope, name], key=lambda text: (-counts[scope, name][text], order_key(text))
            )
            pooled.append(PooledParameter(f"{scope}.{name}", name, values))
    return sorted(pooled, key=lambda p: (p.filter.startswith("run_param."), p.name))


def comparison_may_pool(
    query: ComparisonQuery, point_names: Iterable[str], run_names: Iterable[str]
) -> bool:
    """Whether a cell of ``query`` could pool a parameter: some parameter
    name the metric's results use (``comparison_parameter_names``) is
    neither on an axis nor filtered. If none is, the page has nothing to
    look for: no check in the cells statement, no ``comparison_pooling``."""
    taken = _fixed_parameters(query)
    return any(f"param.{name}" not in taken for name in point_names) or any(
        f"run_param.{name}" not in taken for name in run_names
    )


def _fixed_parameters(query: ComparisonQuery) -> set[str]:
    """The param.* and run_param.* names a cell cannot pool: its axes and filters."""
    taken = {query.x.name, query.series.name if query.series else ""}
    taken.update(key for key in query.filters if key.startswith(("param.", "run_param.")))
    return taken


def parameter_text(value: Any) -> str:
    """A parameter value as a filter spells it: true/false, 20, for_update."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
