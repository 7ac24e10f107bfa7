"""What the upload service stores, field by field: the defaults of what a
document leaves out, a run with more measurements than one INSERT carries,
the catalog mirrored from its file. (Written for the mutants of
benchhub/results/services.py and storage.py that mutation testing found alive; docs/testing.md.)"""

from __future__ import annotations

import datetime as dt
import json
import math
import statistics
import uuid

import pytest
from django.contrib.auth.models import User

from benchhub.moderation.aliases import alias_map_forget
from benchhub.moderation.models import AliasRule
from benchhub.results import services, storage
from benchhub.results.comparability import run_fingerprint
from benchhub.results.models import Benchmark, Measurement, Metric, Run, Submission
from benchhub.results.noise import RunNoise
from benchhub.results.services import (
    InvalidDocument,
    SubmissionConflict,
    catalog_sync,
    submission_create,
)
from tests.factories import example_document


def minimal_document(**run: object) -> dict:
    return {
        "schema": 1,
        "uuid": str(uuid.uuid4()),
        "source": {"kind": "agent"},
        "environment": {"database": {"version_string": "PostgreSQL 16.4"}},
        "runs": [
            {
                "benchmark": "select-update",
                "measurements": [{"metric": "throughput", "value": 7.5}],
                **run,
            }
        ],
    }


def test_what_a_minimal_document_leaves_out_is_stored_as_its_documented_default(bob):
    submission = submission_create(submitter=bob, document=minimal_document()).submission

    submission = Submission.objects.get(pk=submission.pk)
    assert (submission.tool, submission.tool_version, submission.command) == ("", "", "")
    assert (submission.citation, submission.note, submission.source) == (None, "", "agent")
    run = submission.runs.select_related("hardware", "storage", "os", "server", "client").get()
    assert (run.benchmark_version, run.parameters, run.repetitions) == ("1", {}, 1)
    assert (run.started_at, run.ended_at, run.note, run.load_engine_cpu) == (None, None, "", None)
    assert (run.hardware.cpu_vendor, run.hardware.cpu_model, run.hardware.cpu_raw) == ("", "", "")
    assert (run.hardware.cores, run.hardware.threads, run.hardware.ram_bytes) == (None, None, None)
    assert (run.hardware.virtualization, run.hardware.virtualization_raw) == ("", "")
    storage = run.storage
    assert (storage.device_model, storage.kind, storage.raid) == ("", "unknown", "")
    assert (storage.filesystem, storage.filesystem_raw) == ("", "")
    assert (storage.mount_options, storage.mount_options_raw) == ("", "")
    assert (storage.io_scheduler, storage.io_scheduler_raw) == ("", "")
    assert (run.os.family, run.os.distribution, run.os.distribution_raw) == ("", "", "")
    assert (run.os.version, run.os.kernel) == ("", "")
    server = run.server
    assert (server.engine, server.version, server.version_major) == ("postgresql", "16.4", "16")
    assert (server.version_raw, server.architecture, server.config_profile) == (
        "PostgreSQL 16.4",
        "",
        "",
    )
    assert server.settings == {}
    client = run.client
    assert (client.protocol, client.driver, client.driver_version) == ("unknown", "", "")
    assert (client.cpu_placement, client.load_engine) == ("unpinned", "")
    measurement = run.measurements.get()
    assert (measurement.parameters, measurement.value, measurement.samples) == ({}, 7.5, [])
    assert (measurement.approximate, measurement.note) == (False, "")


def test_a_run_with_more_measurements_than_one_insert_carries_stores_each_exactly_once(bob):
    # 2,345: two full INSERTs of 1,000 and a partial one. Every value and
    # parameter differs, nested JSON with keys out of order, samples of
    # different lengths, every third one approximate.
    measurements = [
        {
            "metric": "throughput",
            "value": 1000.0 + i,
            "parameters": {"z": i % 7, "clients": i},
            "samples": [float(i)] * (i % 4),
            "approximate": i % 3 == 0,
            "note": f"n{i}" if i % 5 == 0 else "",
        }
        for i in range(2345)
    ]
    document = minimal_document(measurements=measurements)

    run = submission_create(submitter=bob, document=document).submission.runs.get()

    stored = sorted(
        Measurement.objects.filter(run=run).values_list(
            "value", "parameters", "samples", "approximate", "note", "metric__name"
        )
    )
    assert stored == [
        (m["value"], m["parameters"], m["samples"], m["approximate"], m["note"], "throughput")
        for m in measurements
    ]


def test_the_catalog_sync_puts_back_what_the_catalog_file_says(db):
    benchmark = Benchmark.objects.get(name="select-update")
    title, description, origin = benchmark.title, benchmark.description, benchmark.origin
    metric = Metric.objects.get(benchmark=benchmark, name="throughput")
    unit, direction, metric_description = metric.unit, metric.direction, metric.description
    Benchmark.objects.filter(pk=benchmark.pk).update(title="x", description="x", origin="x")
    Metric.objects.filter(pk=metric.pk).update(unit="x", direction="lower", description="x")
    Metric.objects.filter(benchmark=benchmark, name="latency_p99").delete()

    catalog_sync()

    benchmark.refresh_from_db()
    metric.refresh_from_db()
    assert (benchmark.title, benchmark.description, benchmark.origin) == (
        title,
        description,
        origin,
    )
    assert (metric.unit, metric.direction, metric.description) == (
        unit,
        direction,
        metric_description,
    )
    assert (unit, direction) == ("tx/s", "higher")
    assert description and origin and metric_description  # the file says something
    assert Metric.objects.filter(benchmark=benchmark, name="latency_p99").exists()


def full_document() -> dict:
    """Every field the schema allows, none at its default, some spelt oddly."""
    document = example_document(
        hardware={
            "cpu": "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz",
            "cores": 14,
            "threads": 28,
            "ram_bytes": 68_719_476_736,
            "virtualization": "KVM",
        },
        storage={
            "device_model": "INTEL SSDSC2BB480G4",
            "kind": "ssd",
            "raid": "raid1",
            "filesystem": "OpenZFS",
            "mount_options": ["noatime", "rw", "noatime"],
            "io_scheduler": "mq-deadline [none]",
        },
        os={"family": "linux", "distribution": "Rocky Linux", "version": "9.3", "kernel": "5.14"},
        database={
            "version_string": "8.0.36-0ubuntu0.22.04.1",  # no engine word: the hint decides
            "engine": "mysql",
            "config_profile": "tuned",
            "settings": {"innodb_flush_log_at_trx_commit": "2"},
        },
        client={
            "protocol": "tcp_loopback",
            "driver": "PyMySQL",
            "driver_version": "1.1.1",
            "cpu_placement": "other_core",
            "load_engine": "sysbench",
        },
    )
    document["source"]["citation"] = {"title": "An article", "url": "https://example.org/a"}
    run = document["runs"][0]
    run.update(
        benchmark_version="2",
        repetitions=4,
        note="a note on the run",
        load_engine_cpu=42.5,
        started_at="2026-11-20T10:00:00+02:00",
        ended_at="2026-11-20T10:04:12Z",
    )
    run["measurements"] = [
        {
            "metric": "throughput",
            "parameters": {"clients": 8},
            "value": 1000.0,
            "samples": [900.0, 1000.0, 1100.0, 1000.0],
        }
    ]
    return document


def test_every_field_of_a_full_document_is_stored_where_it_belongs(bob):
    maud = User.objects.create_user(username="maud")
    AliasRule.objects.create(
        dimension="storage", field="filesystem", from_value="openzfs", to_value="zfs",
        created_by=maud,
    )  # fmt: skip
    alias_map_forget()
    document = full_document()

    submission = submission_create(submitter=bob, document=document).submission

    source = document["source"]
    submission = Submission.objects.get(pk=submission.pk)
    assert (submission.tool, submission.tool_version, submission.command, submission.note) == (
        source["tool"],
        source["tool_version"],
        source["command"],
        source["note"],
    )
    assert submission.citation == source["citation"]
    run = submission.runs.select_related("hardware", "storage", "os", "server", "client").get()
    assert (run.benchmark_version, run.parameters, run.repetitions, run.note) == (
        "2",
        document["runs"][0]["parameters"],
        4,
        "a note on the run",
    )
    assert (run.started_at, run.ended_at) == (
        dt.datetime(2026, 11, 20, 8, 0, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 20, 10, 4, 12, tzinfo=dt.UTC),
    )
    assert run.load_engine_cpu == 42.5
    assert run.repetition_cv == pytest.approx(statistics.stdev([900, 1000, 1100, 1000]) / 1000)
    hardware = run.hardware
    assert (hardware.cpu_vendor, hardware.cpu_model) == ("intel", "Xeon E5-2680 v4")
    assert (hardware.cores, hardware.threads, hardware.ram_bytes) == (14, 28, 68_719_476_736)
    assert (hardware.virtualization, hardware.virtualization_raw) == ("kvm", "KVM")
    storage = run.storage
    assert (storage.device_model, storage.kind, storage.raid) == (
        "INTEL SSDSC2BB480G4",
        "ssd",
        "raid1",
    )
    assert (storage.filesystem, storage.filesystem_raw) == ("zfs", "OpenZFS")  # the alias rule
    assert (storage.mount_options, storage.mount_options_raw) == (
        "noatime",  # rw does not affect performance
        "noatime,rw,noatime",
    )
    assert (storage.io_scheduler, storage.io_scheduler_raw) == ("none", "mq-deadline [none]")
    os_row = run.os
    assert (os_row.family, os_row.distribution, os_row.distribution_raw) == (
        "linux",
        "rocky",
        "Rocky Linux",
    )
    assert (os_row.version, os_row.kernel) == ("9.3", "5.14")
    server = run.server
    assert (server.engine, server.version, server.version_major) == ("mysql", "8.0.36", "8.0")
    assert (server.architecture, server.config_profile, server.settings) == (
        "",  # Firebird's (superserver, classic, …)
        "tuned",
        {"innodb_flush_log_at_trx_commit": "2"},
    )
    client = run.client
    assert (client.protocol, client.driver, client.driver_version) == (
        "tcp_loopback",
        "PyMySQL",
        "1.1.1",
    )
    assert (client.cpu_placement, client.load_engine) == ("other_core", "sysbench")
    assert run.fingerprint == run_fingerprint(
        benchmark="select-update",
        benchmark_version="2",
        parameters=document["runs"][0]["parameters"],
        engine="mysql",
        engine_major="8.0",
        load_engine="sysbench",
    )


def test_the_reasons_of_a_conflict_name_the_uuid_and_why(alice, bob):
    document = minimal_document()
    submission_create(submitter=alice, document=document)
    changed = {**document, "runs": [{**document["runs"][0], "note": "other"}]}

    with pytest.raises(SubmissionConflict) as other_submitter:
        submission_create(submitter=bob, document=document)
    with pytest.raises(SubmissionConflict) as other_content:
        submission_create(submitter=alice, document=changed)

    uuid_ = document["uuid"]
    assert str(other_submitter.value) == f"submission {uuid_} exists with another submitter"
    assert str(other_content.value) == f"submission {uuid_} exists with different content"
    with pytest.raises(InvalidDocument) as invalid:
        submission_create(submitter=alice, document={"schema": 1, "uuid": "x", "runs": []})
    assert len(invalid.value.errors) > 1
    assert str(invalid.value) == f"{len(invalid.value.errors)} error(s) in the document"


def test_a_firebird_servers_architecture_is_stored_as_sent(bob):
    # Only Firebird sends one (how its server runs: one process, one per
    # connection …); a classic and a superserver result are different servers.
    document = minimal_document()
    document["environment"]["database"] = {
        "version_string": "WI-V3.0.10.33601 Firebird 3.0",
        "engine": "firebird",
        "architecture": "classic",
    }

    submission = submission_create(submitter=bob, document=document).submission

    server = submission.runs.select_related("server").get().server
    assert (server.engine, server.version_major, server.architecture) == (
        "firebird",
        "3.0",
        "classic",
    )


def test_measurement_values_text_and_json_survive_the_trip_exactly(bob):
    """PostgreSQL gets a document's measurements as one JSON text: every
    double comes back bit for bit, text and JSON values as sent."""
    values = [0.1, 1e-300, 5e-324, 1e18, 0.0, 2**53 + 1, 1 / 3, 302.963]
    note = 'quotes " and \\ backslash, tab\t, newline\n, ünïcödé, 😀, <b>&amp;</b>'
    measurements = [
        {
            "metric": "throughput",
            "value": value,
            "parameters": {"clients": i, "mode": 'for "update" ü\\', "pinned": True},
            "samples": [value, 0.30000000000000004],
            "note": note,
        }
        for i, value in enumerate(values)
    ]

    run = submission_create(
        submitter=bob, document=minimal_document(measurements=measurements)
    ).submission.runs.get()

    stored = list(
        Measurement.objects.filter(run=run)
        .order_by("id")
        .values_list("value", "parameters", "samples", "note", "parameter_keys")
    )
    assert [s[0].hex() for s in stored] == [float(v).hex() for v in values]
    assert [s[1:4] for s in stored] == [(m["parameters"], m["samples"], note) for m in measurements]
    assert stored[0][4] == {"clients": "n:0", "mode": 's:for "update" ü\\', "pinned": "s:true"}


def test_the_statement_that_stores_a_document_names_every_column_of_its_rows():
    """On PostgreSQL a document is stored by one statement of raw SQL: a
    field added to a model must be added there too (or it would be left to
    a default the ORM never gives it)."""

    def columns(model: type) -> set[str]:
        return {field.column for field in model._meta.concrete_fields} - {"id"}

    assert set(storage._SUBMISSION_COLUMNS) == columns(Submission)
    # The submission's id and status are written beside the run's own columns.
    from_submission = {"submission_id", "submission_status"}
    assert {name for name, _ in storage._RUN_COLUMNS} | from_submission == columns(Run)
    assert "(submission_id, submission_status, {run_columns})" in storage._DOCUMENT_INSERT
    # The outlier score is the baselines' to set.
    assert set(storage._MEASUREMENT_COLUMNS) == columns(Measurement) - {"outlier_score"}


def test_runs_and_measurements_are_stored_in_document_order(bob):
    measurements = [
        {"metric": metric, "value": i + 1.0, "parameters": {"clients": i}}
        for i, metric in enumerate(["throughput", "latency_mean", "throughput", "latency_p99"])
    ]
    document = minimal_document(measurements=measurements)
    document["runs"] = [
        {**document["runs"][0], "parameters": {"transactions": n}} for n in (30, 10, 20)
    ]

    submission = submission_create(submitter=bob, document=document).submission

    runs = list(submission.runs.order_by("id").values_list("position", "parameters"))
    assert runs == [(0, {"transactions": 30}), (1, {"transactions": 10}), (2, {"transactions": 20})]
    for run in submission.runs.all():
        stored = run.measurements.order_by("id").values_list("metric__name", "value", "parameters")
        assert list(stored) == [(m["metric"], m["value"], m["parameters"]) for m in measurements]


def test_a_coefficient_of_variation_that_overflowed_is_stored_as_infinity(bob, monkeypatch):
    """No catalog metric takes values of both signs today, so the spread of
    valid samples cannot overflow; if one ever does, the run is stored with
    an infinite coefficient (as the ORM stored it), not refused with a 500."""

    def overflowing(**kwargs: object) -> RunNoise:
        return RunNoise(("noisy",), math.inf, 3)

    monkeypatch.setattr(services, "run_noise", overflowing)

    run = submission_create(submitter=bob, document=minimal_document()).submission.runs.get()

    assert Run.objects.get(pk=run.pk).repetition_cv == math.inf


def test_an_integer_written_with_a_fraction_of_zero_is_stored_as_that_integer(bob):
    """JSON Schema takes 62.0 for an integer; the run's repetitions are
    stored as 62, as the ORM stored them (found by tests/test_api_fuzz.py)."""
    document = minimal_document(repetitions=62.0)

    run = submission_create(submitter=bob, document=document).submission.runs.get()

    assert Run.objects.values_list("repetitions", flat=True).get(pk=run.pk) == 62


def test_a_negative_zero_is_stored_as_zero_as_sqlite_and_the_orm_store_it(alice_api):
    """-0.0 passes a minimum of 0 (it equals 0). SQLite's REAL stores it as
    0.0, and so did the ORM on PostgreSQL (psycopg sends it as the literal
    -0.0, a numeric, which has no negative zero); float8 read from JSON text
    keeps the sign, and the API would then answer -0.0 where the embedded
    default answers 0.0."""
    document = minimal_document(
        load_engine_cpu=-0.0,
        measurements=[{"metric": "throughput", "value": -0.0, "samples": [-0.0, 0.0]}],
    )

    response = alice_api.post(
        "/api/v1/submissions/", data=json.dumps(document), content_type="application/json"
    )

    assert response.status_code == 201, response.json()
    run_id = response.json()["runs"][0]["id"]
    run = alice_api.get(f"/api/v1/runs/{run_id}/").json()
    measurement = Measurement.objects.get(run_id=run_id)
    stored = (Run.objects.get(pk=run_id).load_engine_cpu, measurement.value)
    assert [math.copysign(1.0, number) for number in stored] == [1.0, 1.0]
    assert run["load_engine_cpu"] == 0.0 and math.copysign(1.0, run["load_engine_cpu"]) == 1.0


def test_each_runs_measurements_keep_their_own_metric_and_keys(bob):
    """The measurements' values come from the stored document and their
    metric ids and keys alongside, run by run: runs of other lengths, other
    metrics and other parameters each get their own back."""
    document = minimal_document()
    first, second = (
        [("throughput", 1.5, {"clients": 1}), ("latency_mean", 2.5, {"mode": "rw"})],
        [("latency_p99", 3.5, {}), ("throughput", 4.5, {"clients": 2.0}), ("errors", 0, None)],
    )
    document["runs"] = [
        {
            "benchmark": "select-update",
            "parameters": {"transactions": n},
            "measurements": [
                {"metric": metric, "value": value, **({} if p is None else {"parameters": p})}
                for metric, value, p in measurements
            ],
        }
        for n, measurements in ((1, first), (2, second))
    ]

    submission = submission_create(submitter=bob, document=document).submission

    stored = [
        list(
            run.measurements.order_by("id").values_list(
                "metric__name", "value", "parameters", "parameter_keys"
            )
        )
        for run in submission.runs.order_by("position")
    ]
    assert stored == [
        [
            ("throughput", 1.5, {"clients": 1}, {"clients": "n:1"}),
            ("latency_mean", 2.5, {"mode": "rw"}, {"mode": "s:rw"}),
        ],
        [
            ("latency_p99", 3.5, {}, {}),
            ("throughput", 4.5, {"clients": 2.0}, {"clients": "n:2"}),
            ("errors", 0.0, {}, {}),
        ],
    ]
