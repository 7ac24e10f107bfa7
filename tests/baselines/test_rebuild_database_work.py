"""What a rebuild asks of PostgreSQL, where a first full recompute after an
import spends most of its time:
the planner's view of the baselines table, and the order scores are written in."""

from __future__ import annotations

from django.db import connection
from django.utils import timezone

from benchhub.baselines.marking import mark_keys
from benchhub.baselines.models import Baseline
from benchhub.baselines.refresh import baselines_refresh
from benchhub.results.models import Measurement, Metric, Run, Submission
from benchhub.results.services import submission_create
from tests.baselines.test_incremental import drain, publish
from tests.factories import sweep_document


def planned_pages() -> int:
    """The baselines table's size in pages as the planner last learnt it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT relpages FROM pg_class WHERE oid = 'baselines_baseline'::regclass")
        return cursor.fetchone()[0]


def table_pages() -> int:
    """Its size in pages now (dead rows of earlier tests included)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('baselines_baseline') / current_setting('block_size')::int"
        )
        return cursor.fetchone()[0]


def rebuild(fingerprint: str) -> None:
    mark_keys([fingerprint], timezone.now(), rebuild=True)
    assert baselines_refresh(rebuild=True) == (1, 0)


def test_a_rebuild_updates_the_statistics_of_a_baselines_table_that_outgrew_them(bob):
    """Analyzed, then grown to more than twice the pages the planner knows
    (on a new site: analyzed while empty): the rebuild's bucket checks would
    be planned as scans of a table thought small."""
    run = publish(bob, 1000.0).runs.get()
    drain()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE baselines_baseline")
    planned = planned_pages()
    metric = Metric.objects.first()
    batch = 0
    while table_pages() <= 2 * planned + 1 and batch < 100:  # more than doubled
        Baseline.objects.bulk_create(
            Baseline(
                fingerprint=f"{batch:032x}{index:032x}",
                metric=metric,
                point=f'{{"clients": {index}}}',
                parameters={"clients": index, "note": "x" * 200},
                n=1,
                median=1.0,
                q1=1.0,
                q3=1.0,
                minimum=1.0,
                maximum=1.0,
                mad=0.0,
            )
            for index in range(300)
        )
        batch += 1

    rebuild(run.fingerprint)

    assert planned_pages() > 2 * planned + 1


def test_a_rebuild_writes_its_scores_in_the_order_of_the_rows(bob, alice):
    """Scores are written by measurement id: the UPDATE then walks the table
    and its indexes forward instead of jumping about (10 of 14 s at 1 M).
    Read by baseline, the rows of one run are far apart: two points per run."""
    for index, user in enumerate((bob, alice, bob, alice, bob)):
        document = sweep_document({1: 300.0 + index * index, 20: 1500.0 - 7 * index})
        submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)
    drain()
    Measurement.objects.update(outlier_score=None)
    written: list[list[int]] = []

    def catch(execute, sql, params, many, context):
        if sql.startswith("UPDATE") and "outlier_score" in sql:
            written.append(params[0])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(catch):
        rebuild(Run.objects.first().fingerprint)

    ids = [pk for batch in written for pk in batch]
    assert sorted(ids) == sorted(Measurement.objects.values_list("pk", flat=True))
    assert ids == sorted(ids)
