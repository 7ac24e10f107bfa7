from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet, TextField
from django.db.models.functions import Cast

from benchhub.baselines.histogram import bucket_of, percentile_from_counts
from benchhub.baselines.models import Baseline, BaselineBucket, CountedRun
from benchhub.results.comparability import canonical_json
from benchhub.results.filters import parameter_canonical
from benchhub.results.models import Measurement
from benchhub.results.selectors import public_submissions_q


def baseline_point(parameters: dict) -> str:
    """The point a measurement's parameters name, as a baseline stores it:
    numbers by the one rule of the filters (20, 20.0 and "20" are one point)."""
    return canonical_json({name: parameter_canonical(v) for name, v in (parameters or {}).items()})


def baseline_list(*, fingerprint: str) -> QuerySet[Baseline]:
    return (
        Baseline.objects.filter(fingerprint=fingerprint)
        .select_related("metric")
        .order_by("metric__name", "point")
    )


def baseline_counts_run(*, run_id: int) -> bool:
    """Whether the run's values are in its key's baselines (approved, and a
    refresh has taken it in)."""
    return CountedRun.objects.filter(run_id=run_id).exists()


def baseline_get(*, fingerprint: str, metric: str, parameters: dict) -> Baseline | None:
    return (
        Baseline.objects.filter(
            fingerprint=fingerprint, metric__name=metric, point=baseline_point(parameters)
        )
        .select_related("metric")
        .first()
    )


def rank_refusal(baseline: Baseline, others: int) -> str:
    """Why ``baseline`` ranks nothing, or "": a rank among ``others``
    results needs at least RANK_MIN_RESULTS of them, and results that differ
    (all equal, all 0 s say, every one is "better than half")."""
    if others < settings.RANK_MIN_RESULTS:
        return (
            f"not ranked: {others} comparable result{'s' if others != 1 else ''}, "
            f"fewer than {settings.RANK_MIN_RESULTS}"
        )
    if baseline.minimum == baseline.maximum:
        return f"not ranked: all {baseline.n} comparable results are equal ({baseline.minimum:g})"
    return ""


def baseline_percentile(baseline: Baseline, value: float) -> float:
    """Where ``value`` stands among the baseline's results, in % (the share
    it does better than, ties and its own bucket counting half): three sums
    over the baseline's buckets, never its values. Exact but for the
    results in the value's bucket (baselines/histogram.py)."""
    return baseline_percentiles([(baseline, value)])[0]


def baseline_percentiles(queries: list[tuple[Baseline, float]]) -> list[float]:
    """baseline_percentile for many (baseline, value) pairs in one
    statement: per pair, the counts below the value's bucket and in it, each
    a range of the (baseline, value) index."""
    if not queries:
        return []
    table = connection.ops.quote_name(BaselineBucket._meta.db_table)
    count = connection.ops.quote_name("count")
    columns, params = [], []
    for baseline, value in queries:
        bucket = bucket_of(value)
        for op in ("<", "="):
            columns.append(
                f"(SELECT COALESCE(SUM({count}), 0) FROM {table} "  # noqa: S608 -- names only
                f"WHERE baseline_id = %s AND value {op} %s)"
            )
            params += [baseline.pk, bucket]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)}", params)
        totals = cursor.fetchone()
    out = []
    for index, (baseline, _) in enumerate(queries):
        below, same = int(totals[2 * index]), int(totals[2 * index + 1])
        above = baseline.n - below - same
        out.append(percentile_from_counts(below, same, above, baseline.metric.direction))
    return out


class BaselineRanker:
    """The run page's rank function: ``rank(value, baseline, direction)``,
    answered from one query for all of ``pairs`` made up front."""

    def __init__(self, pairs: Iterable[tuple[Baseline, float]]) -> None:
        pairs = list(dict.fromkeys((b, v) for b, v in pairs if b is not None and b.n))
        self._ranks = dict(
            zip(((b.pk, v) for b, v in pairs), baseline_percentiles(pairs), strict=True)
        )

    def __call__(self, value: float, baseline: Baseline, direction: str) -> float:
        rank = self._ranks.get((baseline.pk, value))
        return rank if rank is not None else baseline_percentile(baseline, value)


def baseline_pooled_q():
    """The one rule for which measurements a baseline pools: measured (not
    approximate) values of public submissions, the set the public sees
    (results.selectors.public_submissions_q: approved, and not hidden or
    deleted). Change visibility there, and baselines follow."""
    return public_submissions_q("run__submission__") & ~Q(approximate=True)


def baseline_pooled_runs_q():
    """baseline_pooled_q's rule for runs: a run whose values count (its
    measured ones; the approximate ones never do)."""
    return public_submissions_q("submission__")


def baseline_measurements(*, fingerprints: list[str]) -> QuerySet:
    """Every measured value of these keys, as values-only rows (id, run,
    metric, parameters as stored JSON text, value, stored score, pooled?):
    the pooled ones make the baseline, every one is scored against it. The
    parameters come as text because a key has a few distinct ones among
    tens of thousands of rows: the caller decodes each once."""
    return (
        Measurement.objects.filter(run__fingerprint__in=fingerprints, approximate=False)
        .annotate(
            pooled=ExpressionWrapper(baseline_pooled_q(), output_field=BooleanField()),
            parameters_text=Cast("parameters", TextField()),
        )
        .order_by()
        .values_list(
            "id", "run_id", "metric_id", "parameters_text", "value", "outlier_score", "pooled"
        )
    )
