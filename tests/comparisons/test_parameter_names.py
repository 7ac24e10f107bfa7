"""The parameter names /compare/ offers as axes are kept at upload
(MetricParameter) instead of read from every measurement of the metric;
migration 0007 lists those of results stored before it."""

from __future__ import annotations

import importlib

from django.apps import apps
from django.db import connection

from benchhub.comparisons.selectors import comparison_parameter_names
from benchhub.results.models import Metric, MetricParameter, Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

PAGE = "/compare/"


def store(user, document, status=Submission.Status.APPROVED) -> None:
    submission_create(submitter=user, document=document, status=status)


def with_run_parameters(document: dict, **parameters) -> dict:
    document["runs"][0]["parameters"] = parameters
    return document


def test_an_uploads_parameter_names_are_offered_per_metric(bob):
    store(bob, with_run_parameters(sweep_document({1: 10.0, 8: 40.0}), duration=60, rows=1000))
    # Another metric of the same benchmark, another point parameter and no
    # run parameter of its own: the names stay with their metric.
    store(
        bob,
        with_run_parameters(
            sweep_document({"for_update": 2.5}, metric="latency_mean", unit="ms", parameter="mode")
        ),
    )
    throughput = Metric.objects.get(benchmark__name="select-update", name="throughput")
    latency = Metric.objects.get(benchmark__name="select-update", name="latency_mean")

    assert comparison_parameter_names(metric=throughput) == (["clients"], ["duration", "rows"])
    assert comparison_parameter_names(metric=latency) == (["mode"], [])


def test_a_runs_parameter_names_go_to_the_metrics_of_its_own_measurements(bob):
    document = with_run_parameters(sweep_document({1: 10.0, 8: 40.0}), duration=60)
    other = sweep_document({"for_update": 2.5}, metric="latency_mean", unit="ms", parameter="mode")
    document["runs"].append(with_run_parameters(other, rows=1000)["runs"][0])
    store(bob, document)
    throughput = Metric.objects.get(benchmark__name="select-update", name="throughput")
    latency = Metric.objects.get(benchmark__name="select-update", name="latency_mean")

    assert comparison_parameter_names(metric=throughput) == (["clients"], ["duration"])
    assert comparison_parameter_names(metric=latency) == (["mode"], ["rows"])


def test_the_page_offers_them_as_x_and_series(client, bob):
    store(bob, with_run_parameters(sweep_document({1: 10.0, 8: 40.0}), duration=60))

    page = client.get(
        PAGE, {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}
    ).content.decode()

    assert '<option value="run_param.duration"' in page
    assert '<option value="param.clients"' in page


def test_the_migration_lists_the_names_of_results_stored_before_it(bob, alice):
    store(bob, with_run_parameters(sweep_document({1: 10.0, 8: 40.0}), duration=60))
    store(alice, sweep_document({"x": 1.0}, parameter="mode"), status=Submission.Status.PENDING)
    kept = set(MetricParameter.objects.values_list("metric_id", "scope", "name"))
    # Pending results' names too: a name, never a value (the model says why).
    assert {("param", "clients"), ("param", "mode"), ("run_param", "duration")} <= {
        (scope, name) for _, scope, name in kept
    }
    MetricParameter.objects.all().delete()

    migration = importlib.import_module("benchhub.results.migrations.0007_metric_parameters")
    with connection.schema_editor() as editor:
        migration.list_stored_names(apps, editor)

    assert set(MetricParameter.objects.values_list("metric_id", "scope", "name")) == kept
