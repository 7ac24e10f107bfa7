"""The OpenAPI document says what the API really answers.

drf-spectacular describes the successful answers from the serializers; this
hook adds what it cannot see: the one error shape on every operation, and
the upload body's own JSON Schema (draft 2020-12, hence OpenAPI 3.1), so
that generated clients and fuzzers build documents the server accepts.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from typing import Any

from benchhub_contract.schema import benchmark_catalog, submission_schema
from django.http import HttpResponseBase
from django.utils import translation
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView, SpectacularRedocView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.settings import api_settings

from benchhub.lib.api import ApiError

FORMAT_PARAM = api_settings.URL_FORMAT_OVERRIDE

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error under /api/ (benchhub.lib.api).",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "additionalProperties": False,
            "properties": {
                "code": {"type": "string", "examples": ["invalid_document"]},
                "message": {"type": "string"},
                "details": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["path", "message"],
                        "additionalProperties": False,
                        "properties": {
                            "path": {"type": "string", "examples": ["$.runs[0].benchmark"]},
                            "message": {"type": "string"},
                        },
                    },
                },
            },
        }
    },
}

# status → when, for every operation; writes add their own.
COMMON_ERRORS = {
    "400": "invalid query parameter (unknown filter, bad value, made-up cursor)",
    "401": "a wrong or revoked API token (reading needs none)",
    "403": "not allowed to you (moderation), or a session request without its CSRF token",
    "404": "nothing there that you may see",
    "405": "method not allowed on this path",
    "429": "too many requests: wait the Retry-After header's seconds",
    "500": "a bug: nothing was stored; the message carries an id that is in the log",
    "503": (
        "send the request again after Retry-After seconds: the database is not answering "
        "(code unavailable: a restart), or a concurrent change broke this request's "
        "transaction (code concurrent_change: a deadlock, a serialization failure, a row "
        "it refers to deleted meanwhile); nothing of it was stored"
    ),
}
WRITE_ERRORS = {
    "400": "invalid body: every error with its JSON path",
    "401": "missing or wrong API token",
    "409": "uuid already used by other content or another submitter",
    "413": "body over the upload limit",
    "415": "Content-Type is not application/json with UTF-8",
}
DOCUMENT_PREFIX = "SubmissionDocument"


def postprocess(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in schemas.items():
        schemas[name] = _without_ambiguous_one_of(schema)
    schemas["Error"] = ERROR_SCHEMA
    schemas.update(submission_document_schemas())
    _closed_request_bodies(schemas)
    _fixed_filters_as_the_measurements(result.get("paths", {}))
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            _query_parameters_as_read(operation)
            responses = operation.setdefault("responses", {})
            errors = {**COMMON_ERRORS, **(WRITE_ERRORS if method != "get" else {})}
            for status, description in errors.items():
                entry = responses.setdefault(status, {"description": description})
            for status, entry in responses.items():
                if status.isdigit() and int(status) >= 400:
                    entry["content"] = error
            if operation.get("operationId") == "submissions_create":
                operation["requestBody"] = {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": f"#/components/schemas/{DOCUMENT_PREFIX}"},
                            "examples": {"select-update sweep": {"value": _example()}},
                        }
                    },
                }
    return result


# Not empty and not only spaces (benchhub.lib.ordering.refuse_empty_parameters),
# without NUL, which no text filter takes. "Spaces" as Python's str.strip() reads
# them: a regex's \s leaves out U+001C-U+001F and U+0085 in ECMAScript, which
# strip() removes (a fuzzer sent version=%1F, valid by \s alone, and got a 400).
NON_BLANK = "^[^\\u0000]*[^\\u0000\\s\\u001c-\\u001f\\u0085][^\\u0000]*$"


def _query_parameters_as_read(operation: dict[str, Any]) -> None:
    """Query parameters as the server reads them: a value given empty is a
    400, so a string is at least one non-space character and an enum has no
    ""; the families ``param.<name>`` and ``run_param.<name>`` are no
    parameter of that literal name (which is a 400) but any name after the
    prefix, which OpenAPI cannot declare: the description says so."""
    families = []
    kept = []
    for parameter in operation.get("parameters", []):
        if parameter.get("in") != "query":
            kept.append(parameter)
            continue
        name = parameter["name"]
        if "<" in name:
            families.append(f"`{name}`: {parameter.get('description', '')}")
            continue
        schema = parameter.setdefault("schema", {})
        if name == "fingerprint":  # a run's comparability key, as runs show it
            schema["pattern"] = FINGERPRINT
        elif name in ("version_min", "version_max"):  # compared by their numbers
            schema["pattern"] = VERSION
        elif name in ("x", "series") and operation.get("operationId") == "comparisons_retrieve":
            schema["pattern"] = _axis_pattern()
        elif name in CATALOG_NAMES and "enum" not in schema:
            schema["enum"] = CATALOG_NAMES[name]()
        elif "enum" in schema:
            schema["enum"] = [value for value in schema["enum"] if value != ""]
        elif schema.get("type") == "string" and "format" not in schema:
            schema.setdefault("minLength", 1)
            schema["pattern"] = NON_BLANK
        kept.append(parameter)
    if "parameters" in operation:
        operation["parameters"] = kept
    if families:
        text = "Also, not declared as parameters (any name after the prefix): " + "; ".join(
            families
        )
        operation["description"] = (operation.get("description", "") + "\n\n" + text).strip()


FINGERPRINT = "^[0-9a-f]{64}$"
VERSION = "^[^\\u0000]*[0-9][^\\u0000]*$"
# Parameters that name an entry of the benchmark catalog, which the server
# checks (a metric of the benchmark, when one is given too, beyond this).
CATALOG_NAMES = {
    "benchmark": lambda: [entry["name"] for entry in benchmark_catalog()["benchmarks"]],
    "metric": lambda: sorted(
        {m["name"] for entry in benchmark_catalog()["benchmarks"] for m in entry["metrics"]}
    ),
}


def _fixed_filters_as_the_measurements(paths: dict[str, Any]) -> None:
    """A comparison's fixed filters are the measurement list's (its
    description says so): each takes the values that list's does, a
    number where it takes a number, an enum where it has one."""
    listed = paths.get("/api/v1/measurements/", {}).get("get", {}).get("parameters", [])
    schemas = {p["name"]: p["schema"] for p in listed if p.get("in") == "query"}
    for operations in paths.values():
        for operation in operations.values():
            if operation.get("operationId") != "comparisons_retrieve":
                continue
            for parameter in operation.get("parameters", []):
                own, name = parameter.get("schema", {}), parameter["name"]
                if name in schemas and own.get("type") == "string" and "enum" not in own:
                    parameter["schema"] = copy.deepcopy(schemas[name])
                if name == "minimum_effect":  # a percentage (benchhub.comparisons.query)
                    own.update(minimum=0, exclusiveMaximum=1000)


def _axis_pattern() -> str:
    """What a comparison's x and series may name: a parameter, or a
    dimension (benchhub.comparisons.query)."""
    from benchhub.comparisons.query import AXIS_DIMENSIONS  # it reads the results app's

    names = "|".join(re.escape(name) for name in AXIS_DIMENSIONS)
    return f"^(?:(?:param|run_param)\\.[a-z][a-z0-9_]{{0,39}}|{names})$"


# Reasons the moderation service requires (benchhub.moderation.services.REASON_REQUIRED).
_REASON_REQUIRED = ["reject", "flag", "request_rerun"]


def _closed_request_bodies(schemas: dict[str, Any]) -> None:
    """Request bodies as the server reads them: an unknown field is a 400
    (benchhub.lib.api's strict input serializers), so no extra property is
    allowed; a moderation action that needs a reason requires one that is
    not blank; a JSON import needs its output."""
    for name, schema in schemas.items():
        if name.endswith("Request") and schema.get("type") == "object":
            schema["additionalProperties"] = False
    moderation = schemas.get("ModerationInputRequest")
    if moderation is not None:
        moderation["allOf"] = [
            {
                "if": {"properties": {"action": {"enum": _REASON_REQUIRED}}},
                "then": {
                    "required": ["reason"],
                    "properties": {"reason": {"minLength": 1, "pattern": NON_BLANK}},
                },
            }
        ]
    report = schemas.get("ReportInputRequest")
    if report is not None:
        report["properties"]["reason"]["pattern"] = NON_BLANK
    tool_import = schemas.get("ToolImportJsonInputRequest")
    if tool_import is not None and "output" not in tool_import.get("required", []):
        tool_import["required"] = [*tool_import.get("required", []), "output"]


def _without_ambiguous_one_of(schema: Any) -> Any:
    """drf-spectacular writes a nullable JSONField as ``oneOf: [{}, {type: null}]``
    under OpenAPI 3.1, which no value satisfies (null matches both): ``{}``,
    which takes any JSON value, null included, is what it means."""
    if isinstance(schema, dict):
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and {} in one_of:
            rest = {k: v for k, v in schema.items() if k != "oneOf"}
            return _without_ambiguous_one_of(rest)
        return {key: _without_ambiguous_one_of(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_without_ambiguous_one_of(item) for item in schema]
    return schema


def submission_document_schemas() -> dict[str, dict[str, Any]]:
    """The submission JSON Schema as OpenAPI components: the document as
    ``SubmissionDocument``, each ``$defs`` entry as ``SubmissionDocument_<name>``.
    Benchmark and metric names are narrowed to the catalog's, which the
    server checks beyond the schema."""
    source = copy.deepcopy(submission_schema())
    definitions = source.pop("$defs")
    for key in ("$schema", "$id"):
        source.pop(key, None)
    catalog = benchmark_catalog()["benchmarks"]
    definitions["run"]["properties"]["benchmark"]["enum"] = [b["name"] for b in catalog]
    definitions["measurement"]["properties"]["metric"]["enum"] = sorted(
        {m["name"] for b in catalog for m in b["metrics"]}
    )
    definitions["database"]["properties"]["settings"]["propertyNames"] = {"pattern": NO_NUL}
    text = json.dumps(_nul_free({DOCUMENT_PREFIX: source, **definitions}))
    text = text.replace('"#/$defs/', f'"#/components/schemas/{DOCUMENT_PREFIX}_')
    renamed = json.loads(text)
    return {
        (name if name == DOCUMENT_PREFIX else f"{DOCUMENT_PREFIX}_{name}"): schema
        for name, schema in renamed.items()
    }


# Text never holds NUL (benchhub_contract.schema.bounds_errors): said here so
# that clients and fuzzers do not build documents the server refuses.
NO_NUL = "^[^\\u0000]*$"


def _nul_free(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {key: _nul_free(value) for key, value in schema.items()}
        types = out.get("type")
        if (types == "string" or (isinstance(types, list) and "string" in types)) and (
            "pattern" not in out
        ):
            out["pattern"] = NO_NUL
        return out
    if isinstance(schema, list):
        return [_nul_free(item) for item in schema]
    return schema


def _example() -> dict[str, Any]:
    """A document the server stores: the catalog's first benchmark, one point."""
    return {
        "schema": 1,
        "uuid": "3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10",
        "source": {"kind": "agent", "tool": "benchhub-agent"},
        "environment": {
            "hardware": {"cpu": "AMD Ryzen 7 5800X 8-Core Processor", "cores": 8},
            "database": {"version_string": "PostgreSQL 16.4"},
        },
        "runs": [
            {
                "benchmark": "select-update",
                "parameters": {"transactions": 10000},
                "measurements": [
                    {"metric": "throughput", "parameters": {"clients": 8}, "value": 2150.5}
                ],
            }
        ],
    }


# Its errors are the API's: JSON in the one error shape. drf-spectacular
# rendered them in the document's negotiated YAML: format=xml was a YAML 404
# "Not found.". Other parameters than format and lang are refused as the lists
# refuse them: version, which this API does not have, went into the
# document's version and its file name, and a newline in it was a 500.
# drf-spectacular's schema objects are shared by all requests (one per view
# class, @extend_schema's), and each generation points them at the view it
# describes: two generations at once on gunicorn's threads pointed them away
# mid-use, a 500 ("Schema generation REQUIRES a view instance"). The document
# takes 0.2 s; one is generated at a time.
_GENERATING = threading.Lock()


class _ErrorsInJson:
    """Errors in the API's JSON shape, whatever the view renders otherwise."""

    def finalize_response(
        self, request: Request, response: HttpResponseBase, *args: Any, **kwargs: Any
    ) -> HttpResponseBase:
        if getattr(response, "exception", False) or request.method == "OPTIONS":
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]


class DocsPage(_ErrorsInJson, SpectacularRedocView):
    """The API's documentation page (Redoc). Its errors were rendered with
    its HTML template, whose context reads the user: a 406 (Accept:
    application/json) with a malformed or wrong token authenticated during
    rendering, and the AuthenticationFailed it raised there was a 500."""

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = super().get(request, *args, **kwargs)
        if isinstance(getattr(response, "data", None), dict):
            # the template hands these to Redoc in a JSON data block, not in inline script
            response.data["settings_object"] = spectacular_settings.REDOC_UI_SETTINGS
        response.csp_style_elements = True  # type: ignore[attr-defined]  # Redoc's own <style>s
        return response


class SchemaApi(_ErrorsInJson, SpectacularAPIView):
    """The OpenAPI 3.1 document of this API: YAML, or JSON with format=json
    or Accept: application/json. Parameters: format (json, yaml), lang."""

    @extend_schema(**SCHEMA_KWARGS)  # as the view it overrides: the document leaves itself out
    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        with _GENERATING:
            return super().get(request, *args, **kwargs)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        _check_schema_parameters(request, {renderer.format for renderer in self.renderer_classes})
        super().initial(request, *args, **kwargs)


def _check_schema_parameters(request: Request, formats: set[str]) -> None:
    takes = f"the schema takes {FORMAT_PARAM} ({' or '.join(sorted(formats))}) and lang"
    for name in request.query_params:
        if name not in (FORMAT_PARAM, "lang"):
            raise _invalid_parameter(name, f"unknown parameter; {takes}")
    given = request.query_params.get(FORMAT_PARAM, "")
    if given not in ("", *formats):
        expected = f"expected {' or '.join(sorted(formats))}"
        raise _invalid_parameter(FORMAT_PARAM, expected, given)
    lang = request.query_params.get("lang", "")
    if lang:
        try:
            translation.get_supported_language_variant(lang)
        except LookupError:
            raise _invalid_parameter(
                "lang", "not a language this site knows (leave it out for English)", lang
            ) from None


def _invalid_parameter(name: str, problem: str, given: str | None = None) -> ApiError:
    shown = "" if given is None else f", not {given[:40]!r}"
    return ApiError(
        f"{name}: {problem}{shown}",
        code="invalid",
        details=[{"path": f"$.{name}", "message": problem}],
    )
