"""REST endpoint of the imports app: a tool's output uploaded as a submission.

    POST /api/v1/imports/

The view validates, calls services.tool_output_import and answers with the
stored submission, in the shape /api/v1/submissions/ answers with; errors
take the shape of benchhub.lib.api.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from benchhub_contract.importers import TOOLS
from benchhub_contract.schema import OversizedInteger, submission_schema
from django.conf import settings
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.imports.services import ToolOutputError, tool_output_import
from benchhub.lib.api import ApiError, refuse_declared_oversize, upload_too_large
from benchhub.lib.fields import TextField
from benchhub.lib.jsonbody import JsonParser
from benchhub.results.apis import (
    UPLOAD_UNAVAILABLE,
    catalog_incomplete_error,
    conflict_error,
    invalid_document_error,
    submission_stored_response,
)
from benchhub.results.outputs import SubmissionStoredOutput
from benchhub.results.services import CatalogIncomplete, InvalidDocument, SubmissionConflict

TOOL_NAMES = ", ".join(TOOLS)


class ToolImportJsonInput(serializers.Serializer):
    """The JSON body; a multipart body carries the same, see the endpoint's description."""

    tool = serializers.ChoiceField(
        choices=list(TOOLS),
        help_text=f"Which tool printed the output: {TOOL_NAMES}.",
        error_messages={
            "invalid_choice": f"unknown tool {{input!r}}; expected one of {TOOL_NAMES}"
        },
    )
    output = TextField(
        required=False,
        trim_whitespace=False,
        help_text="The tool's output, as it printed it (in multipart: or the `file` field).",
    )
    environment = serializers.DictField(
        child=serializers.DictField(),
        required=False,
        default=dict,
        help_text=(
            "What the output does not say, in the sections of the submission document's "
            "environment (hardware, storage, os, database, client). Your values win; the "
            "output's own facts (pgbench's server version) fill the fields you leave out."
        ),
    )
    parameters = serializers.DictField(
        required=False,
        default=dict,
        help_text=(
            'Run parameters the output does not state, e.g. {"test": "oltp_read_write"} '
            'for sysbench or {"clients": 8} for a pgbench aggregate log.'
        ),
    )
    command = TextField(
        required=False,
        allow_blank=True,
        default="",
        max_length=4000,
        help_text="The command line that produced the output, for others to repeat it.",
    )
    uuid = serializers.UUIDField(
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "Idempotency key. Without it the uuid derives from you and the content, so the "
            "same upload sent again is stored once either way."
        ),
    )


class ToolImportInput(ToolImportJsonInput):
    """What the view validates: the JSON body, or a multipart one reshaped to it."""

    file = serializers.FileField(required=False)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if ("output" in data) == ("file" in data):
            raise serializers.ValidationError(
                {"output": "give the tool's output once: as `output` text or as a `file`"}
            )
        return data


class ToolImportMultipartInput(serializers.Serializer):
    """For the OpenAPI schema only: the multipart form of the same request."""

    tool = serializers.ChoiceField(choices=list(TOOLS))
    file = serializers.FileField(required=False)
    output = serializers.CharField(required=False)
    command = serializers.CharField(required=False)
    uuid = serializers.UUIDField(required=False)


class ToolImportApi(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [JsonParser, MultiPartParser]

    @extend_schema(
        operation_id="imports_create",
        request={
            "application/json": ToolImportJsonInput,
            "multipart/form-data": ToolImportMultipartInput,
        },
        description=(
            "Upload a tool's output (pgbench report, pgbench aggregate log, sysbench 1.0/1.1, "
            "BenchBase summary.json, HammerDB result lines) with what it does not say about "
            "the environment; it is stored as a pending submission of source `import`.\n\n"
            "As JSON: `tool`, `output`, `environment` {section: {field: value}}, `parameters`, "
            "`command`, `uuid`. As multipart: `tool`, `file` (or `output`), and one field per "
            "environment value or parameter, named `section.field` or `parameters.name`, e.g. "
            "`-F database.version_string='PostgreSQL 16.2' -F hardware.cores=8 "
            "-F parameters.test=oltp_read_write`.\n\n"
            "201 stores it; the same upload again (same uuid, or no uuid and the same content) "
            "answers 200 with the stored submission; a uuid already used by other content "
            "answers 409. A file that is not the chosen tool's output answers 400 "
            "`invalid_tool_output` saying what was expected; nothing is stored from it."
        ),
        responses={
            201: SubmissionStoredOutput,
            200: SubmissionStoredOutput,
            400: OpenApiResponse(
                description=(
                    "`invalid_tool_output` (not the tool's output), `invalid_document` (the "
                    "environment is incomplete or wrong) or `invalid` (the request's fields); "
                    "details name each field by its path"
                )
            ),
            401: OpenApiResponse(description="missing or wrong API token, and no session"),
            409: OpenApiResponse(description="uuid already used by other content"),
            410: OpenApiResponse(description="the submission of this uuid was deleted"),
            413: OpenApiResponse(description="body over the upload limit"),
            503: UPLOAD_UNAVAILABLE,
        },
        examples=[
            OpenApiExample(
                "sysbench",
                request_only=True,
                media_type="application/json",
                value={
                    "tool": "sysbench",
                    "output": "sysbench 1.0.20 …\nSQL statistics: …",
                    "parameters": {"test": "oltp_read_write"},
                    "environment": {
                        "database": {"engine": "mariadb", "version_string": "10.11.6"},
                        "hardware": {"cpu": "AMD Ryzen 7 5800X", "cores": 8},
                        "storage": {"filesystem": "ext4", "mount_options": "noatime"},
                        "client": {"protocol": "unix_socket"},
                    },
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        refuse_declared_oversize(request)
        multipart = isinstance(request.data, QueryDict)
        raw = _multipart_input(request.data, request.FILES) if multipart else request.data
        serializer = ToolImportInput(data=raw)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        text = data["file"].read() if "file" in data else data["output"]
        if len(text) > settings.BENCHHUB_MAX_UPLOAD_BYTES:
            raise upload_too_large()
        try:
            outcome = tool_output_import(
                submitter=request.user,
                tool=data["tool"],
                text=text,
                environment=data["environment"],
                parameters=data["parameters"],
                command=data["command"],
                submission_uuid=data["uuid"],
            )
        except ToolOutputError as exc:
            sent_as = "$.file" if "file" in data else "$.output"
            path = sent_as if exc.path == "$.output" else exc.path
            raise ApiError(
                f"Nothing was stored: {exc.message}",
                code="invalid_tool_output",
                details=[{"path": path, "message": exc.message}],
            ) from None
        except InvalidDocument as exc:
            raise invalid_document_error(exc) from None
        except SubmissionConflict as exc:
            raise conflict_error(exc) from None
        except CatalogIncomplete as exc:
            raise catalog_incomplete_error(exc) from None
        return submission_stored_response(request, outcome)


_PLAIN_FIELDS = ("tool", "output", "command", "uuid")


def _multipart_input(data: QueryDict, files: MultiValueDict) -> dict[str, Any]:
    """A multipart form's flat `section.field` names → the JSON body's shape."""
    shaped: dict[str, Any] = {k: data[k] for k in _PLAIN_FIELDS if k in data}
    if "file" in files:
        shaped["file"] = files["file"]
    environment: dict[str, dict[str, Any]] = {}
    parameters: dict[str, Any] = {}
    unknown = []
    for name, value in data.items():
        if name in _PLAIN_FIELDS or name in files:  # DRF's request.data holds the files too
            continue
        section, dot, key = name.partition(".")
        if not dot or not key:
            unknown.append(name)
        elif section == "parameters":
            parameters[key] = _typed_parameter(value)
        else:
            environment.setdefault(section, {})[key] = _typed_environment(section, key, value)
    if unknown:
        raise ApiError(
            f"unknown field {unknown[0]!r}: expected tool, file or output, command, uuid, "
            "section.field (e.g. database.version_string) or parameters.name",
            details=[{"path": f"$.{name}", "message": "unknown field"} for name in unknown],
        )
    shaped["environment"] = environment
    shaped["parameters"] = parameters
    return shaped


def _typed_environment(section: str, key: str, value: str) -> Any:
    """Form fields are text; the schema's whole-number fields (cores, ram_bytes)
    are sent as numbers, so that "8" is not refused as a string."""
    if key in _integer_fields().get(section, set()) and _WHOLE.fullmatch(value.strip()):
        return _whole_number(value.strip())
    return value


def _typed_parameter(value: str) -> str | int | float:
    """ "8" is the number 8, as on the agent's command line; "inf" and "nan" stay text."""
    if _WHOLE.fullmatch(value):
        return _whole_number(value)
    if re.fullmatch(r"-?[0-9]+\.[0-9]+", value):
        return float(value)
    return value


# ASCII digits only: str.isdigit() and \d take "²", which int() refuses (a 500).
_WHOLE = re.compile(r"-?[0-9]+")


def _whole_number(text: str) -> int | OversizedInteger:
    """int() of over 4,300 digits raises (a 500): such a number is left for
    the document's bounds to refuse with its path, as in a JSON body."""
    return int(text) if len(text) <= 20 else OversizedInteger(text)


@functools.cache
def _integer_fields() -> dict[str, set[str]]:
    definitions = submission_schema()["$defs"]
    return {
        section: {
            name
            for name, spec in definitions[section]["properties"].items()
            if spec.get("type") == "integer"
        }
        for section in definitions["environment"]["properties"]
    }
