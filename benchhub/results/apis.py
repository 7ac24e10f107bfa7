"""REST endpoints of the results app, under /api/v1/.

Each view validates, calls one service or selector, and answers; errors
take the shape of benchhub.lib.api.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.lib.api import ApiError
from benchhub.lib.jsonbody import read_json_body
from benchhub.lib.pagination import IdCursorPagination
from benchhub.results import selectors
from benchhub.results.exports import measurements_csv_response
from benchhub.results.filters import MeasurementFilter, RunFilter
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
from benchhub.results.services import (
    InvalidDocument,
    SubmissionConflict,
    SubmissionOutcome,
    submission_create,
)


class SubmissionCursorPagination(IdCursorPagination):
    ordering = ("-created_at", "-id")


# --- output shapes -----------------------------------------------------------


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
        request = self.context.get("request")
        runs = self.context.get("runs") or obj.runs.all()
        return [
            {
                "id": run.pk,
                "url": _absolute(request, "api:run-detail", run.pk),
                "html_url": _absolute(request, "results:run", run.pk),
                "benchmark": run.benchmark.name,
            }
            for run in runs
        ]


class SubmissionDetailOutput(SubmissionStoredOutput):
    document = serializers.JSONField()

    class Meta(SubmissionStoredOutput.Meta):
        fields = (*SubmissionStoredOutput.Meta.fields, "document")


def _absolute(request: Request | None, name: str, key: Any) -> str:
    path = reverse(name, args=[key])
    return request.build_absolute_uri(path) if request else path


# --- submissions ---------------------------------------------------------------


class SubmissionCollectionApi(generics.ListAPIView):
    """GET lists the submissions you may see (paginated); POST uploads one."""

    serializer_class = SubmissionOutput
    pagination_class = SubmissionCursorPagination
    filter_backends = []

    def get_permissions(self):
        return [IsAuthenticated()] if self.request.method == "POST" else []

    def get_queryset(self):
        return selectors.submission_list(user=self.request.user)

    @extend_schema(operation_id="submissions_list")
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="submissions_create",
        request={"application/json": OpenApiTypes.OBJECT},  # the document's schema: lib/openapi
        description=(
            "Upload a submission document (JSON Schema: /api/v1/schema/submission.json, "
            "embedded below). "
            "Idempotent on the document's uuid: the same uuid and content again answers 200 "
            "with the stored submission; the same uuid with other content answers 409."
        ),
        responses={
            201: SubmissionStoredOutput,
            200: SubmissionStoredOutput,
            400: OpenApiResponse(description="invalid document: every error with its JSON path"),
            401: OpenApiResponse(description="missing or wrong API token"),
            409: OpenApiResponse(description="uuid already used by other content"),
            413: OpenApiResponse(description="body over the upload limit"),
        },
    )
    def post(self, request: Request) -> Response:
        document = read_json_body(request)
        try:
            outcome = submission_create(submitter=request.user, document=document)
        except InvalidDocument as exc:
            raise invalid_document_error(exc) from None
        except SubmissionConflict as exc:
            raise conflict_error(exc) from None
        return submission_stored_response(request, outcome)


def invalid_document_error(exc: InvalidDocument) -> ApiError:
    count = len(exc.errors)
    return ApiError(
        f"Nothing was stored: the document has {count} error{'s' if count != 1 else ''}; "
        f"first: {exc.errors[0].path}: {exc.errors[0].message}",
        code="invalid_document",
        details=[e.as_dict() for e in exc.errors],
    )


def conflict_error(exc: SubmissionConflict) -> ApiError:
    if exc.other_submitter:
        # Somebody else's document replayed: do not reveal it.
        message = f"uuid {exc.existing.uuid} is already used by another submitter"
    else:
        message = (
            f"uuid {exc.existing.uuid} is already used by a submission with different "
            "content; a new upload needs a new uuid"
        )
    return ApiError(
        message,
        status_code=status.HTTP_409_CONFLICT,
        code="conflict",
    )


def submission_stored_response(request: Request, outcome: SubmissionOutcome) -> Response:
    """201 for a new submission, 200 for a retry of a stored one."""
    submission = outcome.submission
    context: dict[str, Any] = {"request": request, "runs": outcome.runs}
    if not outcome.created:
        submission = (
            Submission.objects.select_related("submitter")
            .prefetch_related("runs__benchmark")
            .get(pk=submission.pk)
        )
    body = SubmissionStoredOutput(submission, context=context).data
    code = status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK
    return Response(body, status=code, headers={"Location": body["url"]})


class SubmissionDetailApi(APIView):
    @extend_schema(responses=SubmissionDetailOutput, operation_id="submissions_retrieve")
    def get(self, request: Request, uuid: str) -> Response:
        submission = selectors.submission_detail_get(user=request.user, uuid=uuid)
        if submission is None:
            raise ApiError(
                f"No submission {uuid} that you may see", status_code=404, code="not_found"
            )
        return Response(SubmissionDetailOutput(submission, context={"request": request}).data)


# --- runs and measurements -------------------------------------------------------


class RunListApi(generics.ListAPIView):
    serializer_class = RunOutput
    filterset_class = RunFilter
    pagination_class = IdCursorPagination

    def get_queryset(self):
        return selectors.run_list(user=self.request.user)


class RunDetailApi(APIView):
    @extend_schema(responses=RunDetailOutput)
    def get(self, request: Request, pk: int) -> Response:
        run = selectors.run_get(user=request.user, pk=pk)
        if run is None:
            raise ApiError(f"No run {pk} that you may see", status_code=404, code="not_found")
        return Response(RunDetailOutput(run, context={"request": request}).data)


PARAMETER_DOCS = [
    OpenApiParameter(
        "param.<name>",
        str,
        description="measurement parameter equals value, e.g. param.clients=20",
    ),
    OpenApiParameter(
        "run_param.<name>",
        str,
        description="run parameter equals value, e.g. run_param.locking=for_update",
    ),
    OpenApiParameter("mount_option", str, description="storage mounted with this option"),
    OpenApiParameter("version_min", str, description="server version ≥ this, e.g. 15.2"),
    OpenApiParameter("version_max", str, description="server version ≤ this"),
]


@extend_schema(parameters=PARAMETER_DOCS)
class MeasurementListApi(generics.ListAPIView):
    serializer_class = MeasurementOutput
    filterset_class = MeasurementFilter
    pagination_class = IdCursorPagination

    def get_queryset(self):
        return selectors.measurement_list(user=self.request.user)


@extend_schema(
    parameters=PARAMETER_DOCS,
    responses={(200, "text/csv"): OpenApiTypes.STR},
    description="Every measurement the query matches, as CSV (not paginated).",
)
class MeasurementCsvApi(generics.GenericAPIView):
    filterset_class = MeasurementFilter

    def get_queryset(self):
        return selectors.measurement_list(user=self.request.user)

    def get(self, request: Request):
        return measurements_csv_response(self.filter_queryset(self.get_queryset()))


# --- dimensions and catalog ----------------------------------------------------------


class DimensionListApi(generics.ListAPIView):
    """One normalized dimension's rows that visible runs use; a subclass
    names its output, its selector and the fields it filters on."""

    pagination_class = IdCursorPagination
    selector: Callable[..., QuerySet]

    def get_queryset(self) -> QuerySet:
        return type(self).selector(user=self.request.user)


class HardwareListApi(DimensionListApi):
    serializer_class = HardwareOutput
    selector = staticmethod(selectors.hardware_list)
    filterset_fields = ["cpu_vendor", "cpu_model", "cores", "threads", "virtualization"]


class StorageListApi(DimensionListApi):
    serializer_class = StorageOutput
    selector = staticmethod(selectors.storage_list)
    filterset_fields = [
        "kind",
        "filesystem",
        "mount_options",
        "io_scheduler",
        "raid",
        "device_model",
    ]


class OperatingSystemListApi(DimensionListApi):
    serializer_class = OperatingSystemOutput
    selector = staticmethod(selectors.os_list)
    filterset_fields = ["family", "distribution", "version", "kernel"]


class DatabaseServerListApi(DimensionListApi):
    serializer_class = DatabaseServerOutput
    selector = staticmethod(selectors.server_list)
    filterset_fields = ["engine", "version", "version_major", "architecture", "config_profile"]


class ClientListApi(DimensionListApi):
    serializer_class = ClientOutput
    selector = staticmethod(selectors.client_list)
    filterset_fields = ["protocol", "driver", "cpu_placement", "load_engine"]


class BenchmarkListApi(generics.ListAPIView):
    serializer_class = BenchmarkOutput
    pagination_class = None
    filter_backends = []

    def get_queryset(self):
        return selectors.benchmark_list()


class SubmissionSchemaApi(APIView):
    """The JSON Schema of the submission document, for clients to validate."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        from benchhub_agent.schema import submission_schema

        return Response(submission_schema())
