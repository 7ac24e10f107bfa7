"""The shapes the results API answers with (serializers out, never in):
runs, measurements, submissions and the environment dimensions they carry.
The views are in benchhub/results/apis.py."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable
from typing import Any

from django.urls import get_script_prefix, get_urlconf, reverse
from rest_framework import serializers
from rest_framework.request import Request

from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Hardware,
    Measurement,
    Metric,
    OperatingSystem,
    Run,
    Storage,
    Submission,
)


class HardwareOutput(serializers.ModelSerializer):
    class Meta:
        model = Hardware
        exclude = ("digest",)


class StorageOutput(serializers.ModelSerializer):
    mount_options = serializers.SerializerMethodField()

    class Meta:
        model = Storage
        exclude = ("digest",)

    def get_mount_options(self, obj: Storage) -> list[str]:
        return obj.mount_options.split(",") if obj.mount_options else []


class OperatingSystemOutput(serializers.ModelSerializer):
    class Meta:
        model = OperatingSystem
        exclude = ("digest",)


class DatabaseServerOutput(serializers.ModelSerializer):
    class Meta:
        model = DatabaseServer
        exclude = ("digest", "version_sort")


class ClientOutput(serializers.ModelSerializer):
    class Meta:
        model = Client
        exclude = ("digest",)


class MetricOutput(serializers.ModelSerializer):
    class Meta:
        model = Metric
        fields = ("name", "unit", "direction", "description")


class BenchmarkOutput(serializers.ModelSerializer):
    metrics = MetricOutput(many=True)

    class Meta:
        model = Benchmark
        fields = ("name", "title", "description", "origin", "metrics")


class RunMeasurementOutput(serializers.ModelSerializer):
    metric = serializers.CharField(source="metric.name")
    unit = serializers.CharField(source="metric.unit")
    direction = serializers.CharField(source="metric.direction")

    class Meta:
        model = Measurement
        fields = (
            "id",
            "metric",
            "unit",
            "direction",
            "parameters",
            "value",
            "samples",
            "approximate",
            "note",
        )


class RunOutput(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    html_url = serializers.SerializerMethodField(help_text="the run's page")
    submission = serializers.UUIDField(source="submission.uuid")
    status = serializers.CharField(source="submission.status")
    source = serializers.CharField(source="submission.source")
    command = serializers.CharField(source="submission.command")
    benchmark = serializers.CharField(source="benchmark.name")
    hardware = HardwareOutput()
    storage = StorageOutput()
    os = OperatingSystemOutput()
    server = DatabaseServerOutput()
    client = ClientOutput()
    noise = serializers.SerializerMethodField(
        help_text="noise flags: noisy (repetitions vary by more than 5 %), unrepeated (fewer "
        "than 3 repetitions), client-bound (the load engine's CPU at 95 % or more); empty for "
        "a quiet run"
    )

    class Meta:
        model = Run
        fields = (
            "id",
            "url",
            "html_url",
            "submission",
            "status",
            "source",
            "benchmark",
            "benchmark_version",
            "parameters",
            "repetitions",
            "noise",
            "repetition_cv",
            "load_engine_cpu",
            "started_at",
            "ended_at",
            "note",
            "command",
            "fingerprint",
            "fingerprint_version",
            "hardware",
            "storage",
            "os",
            "server",
            "client",
        )

    def get_noise(self, obj: Run) -> list[str]:
        return obj.noise.split(",") if obj.noise else []

    def get_url(self, obj: Run) -> str:
        return _absolute(self.context.get("request"), "api:run-detail", obj.pk)

    def get_html_url(self, obj: Run) -> str:
        return _absolute(self.context.get("request"), "results:run", obj.pk)


class RunDetailOutput(RunOutput):
    measurements = RunMeasurementOutput(many=True)

    class Meta(RunOutput.Meta):
        fields = (*RunOutput.Meta.fields, "measurements")


class MeasurementOutput(serializers.ModelSerializer):
    """A measurement with the run and environment fields it is filtered by,
    flat, so that a script or a chart needs no second request."""

    run = serializers.IntegerField(source="run_id")
    submission = serializers.UUIDField(source="run.submission.uuid")
    benchmark = serializers.CharField(source="run.benchmark.name")
    benchmark_version = serializers.CharField(source="run.benchmark_version")
    fingerprint = serializers.CharField(source="run.fingerprint")
    metric = serializers.CharField(source="metric.name")
    unit = serializers.CharField(source="metric.unit")
    direction = serializers.CharField(source="metric.direction")
    run_parameters = serializers.JSONField(source="run.parameters")
    hardware = HardwareOutput(source="run.hardware")
    storage = StorageOutput(source="run.storage")
    os = OperatingSystemOutput(source="run.os")
    server = DatabaseServerOutput(source="run.server")
    client = ClientOutput(source="run.client")

    run_noise = serializers.SerializerMethodField(help_text="the run's noise flags")

    def get_run_noise(self, obj: Measurement) -> list[str]:
        return obj.run.noise.split(",") if obj.run.noise else []

    class Meta:
        model = Measurement
        fields = (
            "id",
            "run",
            "submission",
            "benchmark",
            "benchmark_version",
            "fingerprint",
            "run_parameters",
            "metric",
            "unit",
            "direction",
            "parameters",
            "value",
            "samples",
            "run_noise",
            "approximate",
            "note",
            "hardware",
            "storage",
            "os",
            "server",
            "client",
        )


class SubmissionOutput(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    html_url = serializers.SerializerMethodField(help_text="the submission's page")
    submitter = serializers.CharField(source="submitter.username")

    class Meta:
        model = Submission
        fields = (
            "uuid",
            "url",
            "html_url",
            "submitter",
            "source",
            "status",
            "schema_version",
            "tool",
            "tool_version",
            "command",
            "citation",
            "note",
            "created_at",
        )

    def get_url(self, obj: Submission) -> str:
        return _absolute(self.context.get("request"), "api:submission-detail", obj.uuid)

    def get_html_url(self, obj: Submission) -> str:
        return _absolute(self.context.get("request"), "results:submission", obj.uuid)


class SubmissionStoredOutput(SubmissionOutput):
    """The answer to an upload: where it is stored, and its runs. The
    document itself is not echoed back; the detail URL has it."""

    runs = serializers.SerializerMethodField()

    class Meta(SubmissionOutput.Meta):
        fields = (*SubmissionOutput.Meta.fields, "runs")

    def get_runs(self, obj: Submission) -> list[dict[str, Any]]:
        return _run_links(self.context.get("request"), self.context.get("runs") or obj.runs.all())


def _run_links(request: Request | None, runs: Iterable[Run]) -> list[dict[str, Any]]:
    return [
        {
            "id": run.pk,
            "url": _absolute(request, "api:run-detail", run.pk),
            "html_url": _absolute(request, "results:run", run.pk),
            "benchmark": run.benchmark.name,
        }
        for run in runs
    ]


_CREATED_AT = serializers.DateTimeField()


def submission_stored_body(
    request: Request | None, submission: Submission, runs: Iterable[Run]
) -> dict[str, Any]:
    """SubmissionStoredOutput's answer for a submission just stored, with
    its runs, written out: the upload answers hundreds of times a second,
    and a ModelSerializer builds its fields from the model anew for every
    instance, which cost a tenth of the upload's CPU. The schema still
    comes from SubmissionStoredOutput; a test holds the two equal."""
    return {
        "uuid": str(submission.uuid),
        "url": _absolute(request, "api:submission-detail", submission.uuid),
        "html_url": _absolute(request, "results:submission", submission.uuid),
        "submitter": submission.submitter.username,
        "source": submission.source,
        "status": submission.status,
        "schema_version": submission.schema_version,
        "tool": submission.tool,
        "tool_version": submission.tool_version,
        "command": submission.command,
        "citation": submission.citation,
        "note": submission.note,
        "created_at": _CREATED_AT.to_representation(submission.created_at),
        "runs": _run_links(request, runs),
    }


class SubmissionDetailOutput(SubmissionStoredOutput):
    document = serializers.JSONField()

    class Meta(SubmissionStoredOutput.Meta):
        fields = (*SubmissionStoredOutput.Meta.fields, "document")


def _absolute(request: Request | None, name: str, key: Any) -> str:
    path = reversed_path(name, key)
    return request.build_absolute_uri(path) if request else path


# Keys no URL path holds otherwise, of each type a URL's one argument has.
_STAND_INS: dict[type, Any] = {
    int: 9_876_543_210_123_457,
    uuid.UUID: uuid.UUID("fedcba98-7654-4321-8fed-cba987654321"),
}


def reversed_path(name: str, key: Any) -> str:
    """reverse(name, args=[key]) for a URL whose one argument is an int or a
    UUID (neither needs quoting): the path is reversed once per process
    around a stand-in key, and each key written into it. reverse() cost 20
    µs a call, four per upload's answer and two per run of a list."""
    around = (
        _path_around(name, type(key), get_script_prefix(), get_urlconf())
        if type(key) in _STAND_INS
        else None
    )
    if around is None:
        return reverse(name, args=[key])
    return f"{around[0]}{key}{around[1]}"


@functools.cache
def _path_around(name: str, kind: type, prefix: str, urlconf: Any) -> tuple[str, str] | None:
    """The path of ``name`` before and after its argument (None if the
    stand-in is not found there once), for this script prefix and urlconf."""
    stand_in = str(_STAND_INS[kind])
    path = reverse(name, args=[_STAND_INS[kind]], urlconf=urlconf)
    if path.count(stand_in) != 1:
        return None
    before, _, after = path.partition(stand_in)
    return before, after
