"""Each run's measurements of a metric, summarized (RunMetric): written with the
measurements by both storage paths, the same rows that grouping the stored
measurements gives (what migration 0012 writes for those stored before), and
gone with their run."""

from __future__ import annotations

import importlib
import uuid

from django.apps import apps
from django.db import connection
from django.db.models import Count, Max, Min

from benchhub.results import storage
from benchhub.results.models import Measurement, Run, RunMetric, Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, sql_bench_document

migration = importlib.import_module("benchhub.results.migrations.0012_run_metric_summaries")


def a_document_of_two_runs() -> dict:
    """Two runs with several metrics each, values not in order, one negative zero."""
    document = example_document()
    run = document["runs"][0]
    for index, measurement in enumerate(run["measurements"]):
        measurement["value"] = [7.5, -0.0, 1e-300, 250.25, 3.0, 12345678.9][index % 6] * (index + 1)
    second = {**run, "parameters": {**run["parameters"], "rows": 12}}
    second["measurements"] = run["measurements"][::-1][:7]
    document["runs"] = [run, second]
    return document


def grouped(submission: Submission) -> list[tuple]:
    """What grouping the stored measurements gives, per run position and metric."""
    rows = (
        Measurement.objects.filter(run__submission=submission)
        .values("run__position", "metric_id")
        .annotate(n=Count("id"), low=Min("value"), high=Max("value"))
        .values_list("run__position", "metric_id", "n", "low", "high")
    )
    return sorted(rows)


def summaries(submission: Submission) -> list[tuple]:
    rows = RunMetric.objects.filter(run__submission=submission).values_list(
        "run__position", "metric_id", "n", "low", "high"
    )
    return sorted(rows)


def test_both_storage_paths_write_each_runs_summary_per_metric(alice, monkeypatch):
    document = a_document_of_two_runs()
    raw = submission_create(submitter=alice, document=document).submission
    monkeypatch.setattr(storage, "_insert_postgresql", storage._insert_orm)
    orm = submission_create(
        submitter=alice, document={**document, "uuid": str(uuid.uuid4())}
    ).submission

    expected = grouped(raw)
    assert len(expected) > 2 and any(n > 1 for _, _, n, _, _ in expected)
    assert any(low != high for _, _, _, low, high in expected)
    assert summaries(raw) == expected
    assert summaries(orm) == grouped(orm) == expected


def test_the_migration_summarizes_what_was_stored_before_it(alice):
    first = submission_create(submitter=alice, document=a_document_of_two_runs()).submission
    second = submission_create(
        submitter=alice, document=sql_bench_document({"op_a": 3.5, "op_b": 0.25}, "xfs")
    ).submission
    expected = summaries(first), summaries(second)
    RunMetric.objects.all().delete()

    with connection.schema_editor() as editor:
        migration.summarize_stored(apps, editor)

    assert (summaries(first), summaries(second)) == expected
    assert expected[1] and expected[0] != expected[1]


def test_a_deleted_run_takes_its_summaries_along(alice):
    kept = submission_create(submitter=alice, document=a_document_of_two_runs()).submission
    gone = submission_create(
        submitter=alice, document=sql_bench_document({"op_a": 3.5}, "xfs")
    ).submission

    Run.objects.filter(submission=gone).delete()

    assert not RunMetric.objects.filter(run__submission=gone).exists()
    assert summaries(kept) == grouped(kept)
