"""Measurement packs (benchhub/comparisons/packs.py, from_packs.py): a
comparison computed from the packs gives the cells the rows give, bit for
bit, for every query the packs answer; the packs are used only while they
are current, and what they cannot answer is read from the rows."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.cache import caches
from django.db import connection
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerFailed

from benchhub.celery import app
from benchhub.comparisons import aggregation, from_packs, kept, packs, selectors, tasks
from benchhub.comparisons.from_packs import (
    cells_from_packs,
    first_runs,
    packs_can_answer,
    percentile_cont,
)
from benchhub.comparisons.in_database import cells_in_postgresql
from benchhub.comparisons.models import MeasurementPack, PackedMetric
from benchhub.comparisons.packs import NOT_IN_PACKS, PACK_KEY, packs_build
from benchhub.comparisons.query import AXIS_DIMENSIONS, comparison_query_parse
from benchhub.comparisons.tasks import packs_build_task
from benchhub.moderation.services import submission_moderate
from benchhub.results.filters import RUN_FIELDS
from benchhub.results.models import Measurement, Metric, Run, Submission
from tests.comparisons.test_database_aggregation import QUERIES, upload
from tests.workers import in_process_worker

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="packs are PostgreSQL's (the embedded default has none)",
)

# Filters of every kind that a pack's run_ copies and its point answer for
# all its measurements.
FILTERED = [
    {"x": "param.point", "series": "filesystem", "cores": "8"},
    {"x": "param.point", "series": "cores", "filesystem": "xfs"},
    {"x": "param.point", "series": "filesystem", "param.point": "20"},
    {"x": "param.point", "series": "filesystem", "run_param.rows": "100"},
    {"x": "param.point", "series": "filesystem", "run_param.mode": "true"},
    {"x": "param.point", "series": "filesystem", "noise": "quiet"},
    {"x": "param.point", "series": "filesystem", "noise": "noisy"},
    {"x": "param.point", "series": "filesystem", "approximate": "true"},
    {"x": "param.point", "series": "filesystem", "cpu_model": "epyc"},
    {"x": "param.point", "series": "cores", "filesystem": "(none)"},
    {"x": "param.point", "series": "filesystem", "engine": "postgresql", "version_min": "15"},
    {"x": "cores", "series": "filesystem", "param.point": "text", "verdicts": "quiet"},
    {"x": "filesystem", "series": "run_param.rows", "benchmark_version": "1"},
]


URL = (
    "/api/v1/comparisons/?benchmark=select-update&metric=throughput"
    "&x=param.point&series=filesystem&reference=ext4"
)


def query_of(given: dict):
    params = {"benchmark": "select-update", "metric": "throughput", **given}
    return comparison_query_parse({key: [value] for key, value in params.items()})


@pytest.fixture
def stored(bob, monkeypatch):
    """Runs alike in all but their submission (six to a pack), points spelt
    several ways (a pack each, a cell together), quiet and noisy runs, one
    upload approximate and one with no filesystem."""
    monkeypatch.setattr(aggregation, "VERDICT_RUNS", 3)  # sampling is exercised
    for run, scale in enumerate((1.0, 1.3, 0.7, 5.0, 1.1, 0.95)):
        upload(bob, "ext4", 2, scale, samples=[0.9, 1.0, 1.2] if run % 2 else None)
        upload(bob, "XFS", 8, scale * 1.2, samples=[0.5, 1.0, 1.5] if run % 3 else None)
        upload(bob, "zfs", 4, scale * 1.01)
    upload(bob, "", 8, 3.3)
    Measurement.objects.filter(run=Run.objects.latest("id"), value__gt=10).update(approximate=True)
    assert Run.objects.filter(noise="").exists() and Run.objects.exclude(noise="").exists()
    packs_build(Metric.objects.get(name="throughput", benchmark__name="select-update").pk)


def assert_identical(packed, rows) -> None:
    """The same cells, numbers equal as doubles (no tolerance)."""
    assert packed is not None
    assert (packed.total, packed.missing_x, packed.missing_series, packed.approximate) == (
        rows.total,
        rows.missing_x,
        rows.missing_series,
        rows.approximate,
    )
    assert packed.series_values == rows.series_values
    assert packed.stats == rows.stats
    assert packed.runs.keys() == rows.runs.keys()
    for key, cell_runs in rows.runs.items():
        assert list(packed.runs[key].items()) == list(cell_runs.items()), key
    assert packed.parameters_may_differ == rows.parameters_may_differ


@pytest.mark.parametrize(
    "given", QUERIES + FILTERED, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items())
)
@pytest.mark.parametrize("check_parameters", [False, True], ids=["", "parameters checked"])
def test_packs_and_rows_give_the_same_cells(stored, given, check_parameters):
    query = query_of(given)
    user = AnonymousUser()
    assert packs_can_answer(user, query)

    packed = cells_from_packs(query, check_parameters=check_parameters)
    rows = cells_in_postgresql(
        selectors._measurements(user, query), query, check_parameters=check_parameters
    )

    assert rows.stats  # the comparison is not empty
    assert_identical(packed, rows)


RUN_COPIED = (
    "benchmark_id",
    "benchmark_version",
    "fingerprint",
    "hardware_id",
    "storage_id",
    "os_id",
    "server_id",
    "client_id",
    "noise",
)


def _key(measurement: Measurement) -> tuple:
    """What a pack's measurements share, by Python's reading (20 and 20.0 apart)."""
    run = measurement.run
    return (
        measurement.approximate,
        repr(measurement.parameters),
        repr(measurement.parameter_keys),
        *(getattr(run, field) for field in RUN_COPIED),
        repr(run.parameters),
        repr(run.parameter_keys),
    )


def _copies(pack: MeasurementPack) -> tuple:
    """The same, as the pack keeps it."""
    return (
        pack.approximate,
        repr(pack.parameters),
        repr(pack.parameter_keys),
        *(getattr(pack, f"run_{field}") for field in RUN_COPIED),
        repr(pack.run_parameters),
        repr(pack.run_parameter_keys),
    )


def test_a_pack_holds_the_measurements_alike_and_only_them(stored):
    metric = Metric.objects.get(name="throughput", benchmark__name="select-update")
    measurements = {
        m.pk: m for m in Measurement.objects.filter(metric=metric).select_related("run")
    }
    keys = set()
    for pack in MeasurementPack.objects.filter(metric=metric):
        ids = np.frombuffer(pack.ids, ">i8").tolist()
        assert ids == sorted(ids)
        assert np.frombuffer(pack.runs, ">i8").tolist() == [measurements[i].run_id for i in ids]
        assert np.frombuffer(pack.vals, ">f8").tolist() == [measurements[i].value for i in ids]
        assert (pack.n, pack.low, pack.high) == (
            len(ids),
            min(measurements[i].value for i in ids),
            max(measurements[i].value for i in ids),
        )
        alike = {_key(measurements[i]) for i in ids}
        assert len(alike) == 1 and alike.isdisjoint(keys)
        keys |= alike
        assert alike == {_copies(pack)}
    assert keys == {_key(m) for m in measurements.values()}  # every measurement in one
    assert max(MeasurementPack.objects.values_list("n", flat=True)) > 1


@pytest.mark.parametrize(
    "given",
    [
        {"x": "param.point", "submitter": "bob"},
        {"x": "param.point", "source": "agent"},
        {"x": "param.point", "run": "1"},
        {"x": "submitter", "series": "filesystem"},
        {"x": "param.point", "series": "status"},
        {"x": "param.point", "per": "core"},
    ],
    ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()),
)
def test_packs_refuse_submission_and_run_filters_and_axes_and_per(stored, given):
    assert not packs_can_answer(AnonymousUser(), query_of(given))


def test_a_signed_in_user_is_answered_from_the_rows(stored, bob):
    assert not packs_can_answer(bob, query_of({"x": "param.point"}))


def test_every_filter_and_axis_a_pack_answers_is_in_its_key_and_copied():
    """A filter added to the measurements (RUN_FIELDS) or an axis must be
    either in the packs' key and copied to the pack, or in NOT_IN_PACKS:
    else one pack would hold runs that the filter tells apart."""
    key = {column.removesuffix("::text") for column in PACK_KEY}
    paths = {name: path for name, (path, _) in RUN_FIELDS.items()} | {
        name: path.removeprefix("run__") for name, path in AXIS_DIMENSIONS.items()
    }
    for name, path in paths.items():
        if name in NOT_IN_PACKS:
            continue
        first = path.split("__")[0]
        column = f"r.{first}_id" if "__" in path else f"r.{first}"
        assert column in key, f"{name} ({path}) is not in the packs' key"
        MeasurementPack._meta.get_field(f"run_{first}")  # raises FieldDoesNotExist


def test_packs_older_than_the_data_are_not_used_and_a_build_is_asked_for(
    stored, bob, monkeypatch, django_capture_on_commit_callbacks
):
    query = query_of({"x": "param.point", "series": "filesystem"})
    asked = []
    monkeypatch.setattr(from_packs, "packs_build_ask", asked.append)
    assert cells_from_packs(query) is not None and not asked

    with django_capture_on_commit_callbacks(execute=True):  # the change's bump
        upload(bob, "btrfs", 2, 1.7)

    assert cells_from_packs(query) is None
    assert asked == [query.metric.pk]
    packs_build(query.metric.pk)
    packed = cells_from_packs(query)
    assert_identical(
        packed, cells_in_postgresql(selectors._measurements(AnonymousUser(), query), query)
    )
    assert "btrfs" in packed.series_values


def test_a_moderation_makes_the_packs_out_of_date(stored, bob, django_capture_on_commit_callbacks):
    query = query_of({"x": "param.point", "series": "filesystem"})
    moderator = type(bob).objects.create_superuser(username="mod", password="x" * 16)
    hidden = Submission.objects.filter(runs__storage__filesystem="xfs").first()
    with django_capture_on_commit_callbacks(execute=True):
        submission_moderate(submission=hidden, actor=moderator, action="hide", reason="test")
    assert cells_from_packs(query) is None
    packs_build(query.metric.pk)
    assert_identical(
        cells_from_packs(query),
        cells_in_postgresql(selectors._measurements(AnonymousUser(), query), query),
    )


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_while_packs_are_built_leaves_them_out_of_date(bob):
    """A change that commits after the packs' statement took its snapshot
    (so it is not in them) bumps the versions after the build read them:
    the packs are never used. (Had the build read the versions after its
    INSERT, these packs would pass as current.)"""
    upload(bob, "ext4", 2, 1.0)
    metric = Metric.objects.get(name="throughput", benchmark__name="select-update")
    built, go_on = threading.Event(), threading.Event()

    def pause_after_the_packs(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.lstrip().startswith("INSERT INTO comparisons_measurementpack"):
            built.set()
            assert go_on.wait(30)
        return result

    def build() -> None:
        try:
            with connection.execute_wrapper(pause_after_the_packs):
                packs_build(metric.pk)
        finally:
            connection.close()

    builder = threading.Thread(target=build)
    builder.start()
    assert built.wait(30)
    upload(bob, "ext4", 2, 2.0)  # committed, and its bump with it
    go_on.set()
    builder.join(30)
    assert not builder.is_alive()

    assert PackedMetric.objects.filter(metric=metric).exists()
    query = query_of({"x": "param.point"})
    assert cells_from_packs(query) is None
    packs_build(metric.pk)
    packed = cells_from_packs(query)  # built again: both uploads
    assert packed.total == Measurement.objects.filter(metric=metric).count()
    assert_identical(
        packed, cells_in_postgresql(selectors._measurements(AnonymousUser(), query), query)
    )


@pytest.mark.parametrize(
    "values",
    [[3.0], [1.0, 2.0], [5.0, 1.0, 4.0, 1.0, 2.5], [0.1, 0.7, 0.2, 1e-300, 1e300, 7.0, 3.3]],
)
def test_percentile_cont_is_postgresqls_bit_for_bit(db, values):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY v) "
            "FROM unnest(%s::float8[]) AS v",
            [values],
        )
        (expected,) = cursor.fetchone()
    assert percentile_cont(np.array(values), (0.25, 0.5, 0.75)) == expected


def test_first_runs_take_each_runs_median_where_a_run_is_there_twice():
    runs = np.array([7, 3, 7, 11, 3, 11, 2], dtype=np.int64)
    values = np.array([1.0, 2.0, 3.0, 4.0, 6.0, 4.5, 7.0])
    ids = np.array([70, 30, 71, 110, 31, 111, 20])
    in_order = sorted({2, 3, 7, 11}, key=aggregation.run_sample_key)

    run_ids, run_values, only_ids = first_runs(runs, values, ids, 3)

    assert run_ids == in_order[:3]
    expected = {7: (2.0, None), 3: (4.0, None), 11: (4.25, None), 2: (7.0, 20)}
    assert list(zip(run_values, only_ids, strict=True)) == [expected[run] for run in run_ids]


def test_first_runs_are_the_first_rows_where_each_run_is_there_once():
    runs = np.arange(100, 140, dtype=np.int64)[::-1].copy()
    values = runs * 0.5
    ids = runs * 10
    in_order = sorted(runs.tolist(), key=aggregation.run_sample_key)[:5]

    assert first_runs(runs, values, ids, 5) == (
        in_order,
        [run * 0.5 for run in in_order],
        [run * 10 for run in in_order],
    )


@pytest.fixture
def packs_answered(monkeypatch) -> list[int]:
    """One entry per comparison the packs answered (its number of cells)."""
    answered: list[int] = []
    collect = from_packs.cells_collected

    def counted(query, rows):
        answered.append(len(rows))
        return collect(query, rows)

    monkeypatch.setattr(from_packs, "cells_collected", counted)
    return answered


def test_the_comparison_api_answers_the_same_from_packs(
    stored, anonymous_api, settings, packs_answered
):
    """Through the whole request (verdicts, scores, the JSON), with the
    packs read and without."""
    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 0
    settings.BENCHHUB_COMPARISON_PACKS = True
    packed = anonymous_api.get(URL)
    assert len(packs_answered) == 1  # the packs answered
    settings.BENCHHUB_COMPARISON_PACKS = False
    rows = anonymous_api.get(URL)
    assert len(packs_answered) == 1  # the rows answered
    assert packed.status_code == rows.status_code == 200
    assert packed.json() == rows.json()


@pytest.mark.django_db(transaction=True)
def test_a_worker_builds_the_packs_the_first_comparison_asked_for(
    bob, anonymous_api, settings, packs_answered
):
    """End to end: the first request reads the rows and asks; a real worker
    (Redis, Celery) builds; the next request reads the packs, same answer."""
    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 0
    for scale in (1.0, 1.5, 0.8):
        upload(bob, "ext4", 2, scale)
        upload(bob, "xfs", 4, scale * 1.1)
    metric = Metric.objects.get(name="throughput", benchmark__name="select-update")
    caches["kept"].delete(packs._asked_key(metric.pk))  # an earlier test's ask
    app.control.purge()
    with in_process_worker():
        first = anonymous_api.get(URL)
        deadline = time.monotonic() + 60
        while not PackedMetric.objects.filter(metric=metric).exists():
            assert time.monotonic() < deadline, "the worker built no packs"
            time.sleep(0.1)
    assert not packs_answered  # the first read the rows
    second = anonymous_api.get(URL)
    assert len(packs_answered) == 1  # the second, the packs
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()


@pytest.mark.django_db(transaction=True)
def test_a_comparison_answers_while_the_broker_refuses_the_packs_build(
    bob, anonymous_api, settings, monkeypatch
):
    """Redis refusing writes (maxmemory, a read-only replica) while it still
    answers reads: the packs are out of date, the build cannot be queued,
    and the rows answer (found in review: a 500 when it was queued with
    delay() from the comparison's on_commit)."""
    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 0
    upload(bob, "ext4", 2, 1.0)
    upload(bob, "xfs", 4, 1.1)
    metric = Metric.objects.get(name="throughput", benchmark__name="select-update")
    caches["kept"].delete(packs._asked_key(metric.pk))  # an earlier test's ask

    def refused(*args, **kwargs):
        raise BrokerFailed("OOM command not allowed when used memory > 'maxmemory'.")

    monkeypatch.setattr(packs_build_task, "apply_async", refused)
    anonymous_api.raise_request_exception = False

    response = anonymous_api.get(URL)

    assert response.status_code == 200
    assert response.json()["series"]
    # not left asked for: the next comparison asks again
    assert caches["kept"].get(packs._asked_key(metric.pk)) is None


def test_packs_are_used_no_longer_than_a_day_after_a_lost_bump(
    stored, bob, monkeypatch, django_capture_on_commit_callbacks
):
    """A change whose bump was lost (the cache refused it and the process
    that would retry it ended, or Redis came back without it) is missed by
    the packs at most MAX_AGE_SECONDS after their build, as a kept answer is
    kept at most a day (found in review: built_at was never read)."""
    query = query_of({"x": "param.point", "series": "filesystem"})
    cache = caches["kept"]

    def refused(*args, **kwargs):
        raise ConnectionError("Redis restarting")

    with monkeypatch.context() as patch, django_capture_on_commit_callbacks(execute=True):
        patch.setattr(cache, "set_many", refused)
        upload(bob, "btrfs", 2, 1.7)  # approved, committed; its bump refused
    kept._unbumped.clear()  # the process that would have retried it ended
    rows = cells_in_postgresql(selectors._measurements(AnonymousUser(), query), query)
    assert "btrfs" not in cells_from_packs(query).series_values  # missed, within the day

    PackedMetric.objects.filter(metric=query.metric).update(
        built_at=timezone.now() - timedelta(seconds=packs.MAX_AGE_SECONDS + 1)
    )

    assert cells_from_packs(query) is None
    packs_build(query.metric.pk)
    assert_identical(cells_from_packs(query), rows)
    assert "btrfs" in rows.series_values


def test_the_worker_skips_a_build_whose_packs_are_current_and_clears_the_ask(stored, monkeypatch):
    """A comparison during a build found the packs out of date too and
    asked again (found in review): the worker skips a build whose packs are
    already current, and the ask is cleared only once the build is over."""
    metric = Metric.objects.get(name="throughput", benchmark__name="select-update")
    caches["kept"].set(packs._asked_key(metric.pk), 1)
    built = []
    monkeypatch.setattr(tasks, "packs_build", built.append)

    assert packs_build_task(metric.pk) == 0

    assert built == []
    assert caches["kept"].get(packs._asked_key(metric.pk)) is None


@pytest.mark.parametrize(("built_ago", "wait"), [(15, 25), (100, 0)])
def test_an_ask_is_queued_once_with_a_countdown_to_four_times_the_last_builds_duration(
    stored, monkeypatch, django_capture_on_commit_callbacks, built_ago, wait
):
    """A metric whose results change faster than its packs build must not
    keep a worker process building it: the next build waits until four
    times the last build's duration has passed since it ended."""
    metric = Metric.objects.get(name="throughput", benchmark__name="select-update")
    PackedMetric.objects.filter(metric=metric).update(
        build_seconds=10.0, built_at=timezone.now() - timedelta(seconds=built_ago)
    )
    caches["kept"].delete(packs._asked_key(metric.pk))
    queued = []
    monkeypatch.setattr(
        packs_build_task, "apply_async", lambda args, kwargs, **options: queued.append(options)
    )

    with django_capture_on_commit_callbacks(execute=True):
        packs.packs_build_ask(metric.pk)
        packs.packs_build_ask(metric.pk)  # asked twice: queued once

    (options,) = queued
    assert wait - 1 < options["countdown"] <= wait


def test_the_ask_for_a_build_is_cleared_when_the_build_ends_not_when_it_starts(stored, monkeypatch):
    """A comparison during a build must not ask for the same build again:
    the ask stays while the build runs, and goes once it is over."""
    metric = Metric.objects.get(name="throughput", benchmark__name="select-update")
    PackedMetric.objects.filter(metric=metric).update(versions="out of date")
    key = packs._asked_key(metric.pk)
    caches["kept"].set(key, 1)
    seen_during = []
    monkeypatch.setattr(
        tasks, "packs_build", lambda metric_id: seen_during.append(caches["kept"].get(key)) or 7
    )

    assert packs_build_task(metric.pk) == 7

    assert seen_during == [1]
    assert caches["kept"].get(key) is None
