"""REST endpoints of the results app, under /api/v1/.

Each view validates, calls one service or selector, and answers; errors
take the shape of benchhub.lib.api. The shapes of the answers are in
benchhub/results/outputs.py.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.lib.api import CATALOG_RETRY_AFTER_SECONDS, ApiError
from benchhub.lib.jsonbody import read_json_body
from benchhub.lib.ordering import FixedOrdering
from benchhub.lib.pagination import IdCursorPagination, PageBuiltWithCollectorPaused
from benchhub.results import selectors
from benchhub.results.exports import (
    JSON_LINES_TYPE,
    measurements_csv_response,
    measurements_jsonl_response,
)
from benchhub.results.filters import MeasurementFilter, RunFilter
from benchhub.results.models import (
    Submission,
)
from benchhub.results.outputs import (
    BenchmarkOutput,
    ClientOutput,
    DatabaseServerOutput,
    HardwareOutput,
    MeasurementOutput,
    OperatingSystemOutput,
    RunDetailOutput,
    RunOutput,
    StorageOutput,
    SubmissionDetailOutput,
    SubmissionOutput,
    SubmissionStoredOutput,
    submission_stored_body,
)
from benchhub.results.services import (
    CatalogIncomplete,
    InvalidDocument,
    SubmissionConflict,
    SubmissionGone,
    SubmissionOutcome,
    submission_create,
)

# The 503s of an upload, here and at /api/v1/imports/.
UPLOAD_UNAVAILABLE = OpenApiResponse(
    description=(
        "`catalog_incomplete`: the server's database lacks a benchmark or metric of its "
        "catalog that the document uses (`details` names each); nothing was stored; send it "
        "again once an administrator has run migrate (Retry-After: "
        f"{CATALOG_RETRY_AFTER_SECONDS} seconds). Or `unavailable` / `concurrent_change`: "
        "send it again after Retry-After"
    )
)


class SubmissionCursorPagination(IdCursorPagination):
    ordering = ("-created_at", "-id")


# --- submissions ---------------------------------------------------------------


class SubmissionCollectionApi(generics.ListAPIView):
    """GET lists the submissions you may see (paginated); POST uploads one."""

    serializer_class = SubmissionOutput
    pagination_class = SubmissionCursorPagination
    filter_backends = [FixedOrdering]

    def get_permissions(self):
        return [IsAuthenticated()] if self.request.method == "POST" else []

    # refuse_unknown_parameters (benchhub.lib.ordering) knows it by this
    filterset_fields = ["status"]

    def get_queryset(self):
        return selectors.submission_list(user=self.request.user, status=self._status())

    def _status(self) -> str:
        given = self.request.query_params.getlist("status")
        if len(given) > 1:
            raise ValidationError({"status": "given more than once; this filter takes one value"})
        status = given[0].strip().lower() if given else ""
        if status and status not in selectors.SUBMISSION_LIST_STATUSES:
            known = ", ".join(selectors.SUBMISSION_LIST_STATUSES)
            raise ValidationError({"status": f"unknown status {given[0]!r}; known values: {known}"})
        return status

    @extend_schema(
        operation_id="submissions_list",
        parameters=[
            OpenApiParameter(
                "status",
                str,
                enum=list(selectors.SUBMISSION_LIST_STATUSES),
                description=(
                    "a moderator: every submission with this status, as the moderation queue "
                    "shows it (`waiting`: pending, flagged, or with open reports); anybody "
                    "else: those they may see with this status (`waiting`: pending or flagged)"
                ),
            )
        ],
    )
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="submissions_create",
        request={"application/json": OpenApiTypes.OBJECT},  # schema: benchhub/openapi.py
        description=(
            "Upload a submission document (JSON Schema: /api/v1/schema/submission.json, "
            "embedded below). "
            "Idempotent on the document's uuid: the same uuid and content again answers 200 "
            "with the stored submission; the same uuid with other content answers 409, and "
            "a uuid whose submission was deleted answers 410. Uuids compare in any letter "
            "case: the same document with its uuid in upper case is the same submission."
        ),
        responses={
            201: SubmissionStoredOutput,
            200: SubmissionStoredOutput,
            400: OpenApiResponse(description="invalid document: every error with its JSON path"),
            401: OpenApiResponse(description="missing or wrong API token"),
            409: OpenApiResponse(description="uuid already used by other content"),
            410: OpenApiResponse(description="the submission of this uuid was deleted"),
            413: OpenApiResponse(description="body over the upload limit"),
            503: UPLOAD_UNAVAILABLE,
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
        except CatalogIncomplete as exc:
            raise catalog_incomplete_error(exc) from None
        return submission_stored_response(request, outcome)


def invalid_document_error(exc: InvalidDocument) -> ApiError:
    count = len(exc.errors)
    return ApiError(
        f"Nothing was stored: the document has {count} error{'s' if count != 1 else ''}; "
        f"first: {exc.errors[0].path}: {exc.errors[0].message}",
        code="invalid_document",
        details=[e.as_dict() for e in exc.errors],
    )


def catalog_incomplete_error(exc: CatalogIncomplete) -> ApiError:
    """503, not 400: the document is right by the catalog this server ships,
    and an agent keeps a document answered 5xx to send again, but drops one
    answered 4xx as refused."""
    return ApiError(
        f"Nothing was stored: {exc}",
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        code="catalog_incomplete",
        details=[{"path": path, "message": f"{what} is missing"} for path, what in exc.missing],
        retry_after=CATALOG_RETRY_AFTER_SECONDS,
    )


def conflict_error(exc: SubmissionConflict) -> ApiError:
    if isinstance(exc, SubmissionGone):
        return ApiError(
            f"submission {exc.existing.uuid} was deleted; it is not stored again under the "
            "same uuid: send it with a new uuid to publish it again",
            status_code=status.HTTP_410_GONE,
            code="gone",
        )
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
    if outcome.created:
        body = submission_stored_body(request, outcome.submission, outcome.runs)
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["url"]})
    submission = (
        Submission.objects.select_related("submitter")
        .prefetch_related("runs__benchmark")
        .get(pk=outcome.submission.pk)
    )
    body = SubmissionStoredOutput(submission, context={"request": request}).data
    return Response(body, status=status.HTTP_200_OK, headers={"Location": body["url"]})


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


class RunListApi(PageBuiltWithCollectorPaused, generics.ListAPIView):
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
class MeasurementListApi(PageBuiltWithCollectorPaused, generics.ListAPIView):
    serializer_class = MeasurementOutput
    filterset_class = MeasurementFilter
    pagination_class = IdCursorPagination

    def get_queryset(self):
        return selectors.measurement_list(user=self.request.user)


@extend_schema(
    parameters=PARAMETER_DOCS,
    responses={(200, "text/csv"): OpenApiTypes.STR},
    description=(
        "Every measurement the query matches, newest first, as CSV (not paginated): a "
        "header line, then one CRLF-ended line per measurement; an export that fails "
        "part-way ends with a line `#error,<message>` and an aborted transfer."
    ),
    filters=True,  # not a list view to drf-spectacular, which would leave its filters out
)
class MeasurementCsvApi(generics.GenericAPIView):
    filterset_class = MeasurementFilter
    file_name = "export.csv"

    def get_queryset(self):
        return selectors.measurement_list(user=self.request.user)

    def get(self, request: Request):
        # Every row, not a page: ?page_size=100 answered all of them, and a
        # script that asked for a sample got the whole table without a word.
        paging = [name for name in ("page_size", "cursor") if name in request.query_params]
        if paging:
            message = f"{self.file_name} is not paginated: it answers every row the query matches"
            raise ApiError(
                f"{paging[0]}: {message}; leave it out, or page /api/v1/measurements/",
                details=[{"path": f"$.{name}", "message": message} for name in paging],
            )
        return self.respond(self.filter_queryset(self.get_queryset()))

    def respond(self, queryset):
        return measurements_csv_response(queryset)


@extend_schema(
    parameters=PARAMETER_DOCS,
    responses={(200, JSON_LINES_TYPE): OpenApiTypes.STR},
    description=(
        "Every measurement the query matches, newest first, as JSON lines (not "
        "paginated): one object a line, with the keys and order of export.csv's header, "
        "numbers as numbers, JSON as JSON, a missing value null. An export that fails "
        'part-way ends with a line `{"#error": "<message>"}` and an aborted transfer.'
    ),
    filters=True,
)
class MeasurementJsonLinesApi(MeasurementCsvApi):
    file_name = "export.jsonl"

    def respond(self, queryset):
        return measurements_jsonl_response(queryset)


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
    filter_backends = [FixedOrdering]
    ordering = "name"  # selectors.benchmark_list's

    def get_queryset(self):
        return selectors.benchmark_list()


class SubmissionSchemaApi(APIView):
    """The JSON Schema of the submission document, for clients to validate."""

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        from benchhub_contract.schema import submission_schema

        return Response(submission_schema())
