import pytest
from django.core.management import call_command
from django.test import Client


def test_openapi_schema_is_valid_and_complete(db, tmp_path):
    """drf-spectacular warns when it has to guess a type; a guess is a
    lie in the documentation, so a warning fails."""
    out = tmp_path / "schema.yml"

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))

    schema = out.read_text()
    assert "/api/v1/submissions/" in schema
    assert "apiToken" in schema


def openapi(client) -> dict:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


@pytest.fixture(scope="module")
def document(django_db_setup, django_db_blocker) -> dict:
    """The served document, asked for once: generating it takes most of a
    second, and the tests below only read it."""
    with django_db_blocker.unblock():
        return openapi(Client())


def test_the_submission_list_is_documented_as_the_paginated_page_it_is(document):
    answer = document["paths"]["/api/v1/submissions/"]["get"]["responses"]["200"]
    reference = answer["content"]["application/json"]["schema"]["$ref"]
    page = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    assert {"next", "previous", "results"} <= set(page["properties"])


def test_the_upload_body_is_the_submission_json_schema(document):
    """Generated clients and fuzzers build documents from it: every $ref
    resolves, and a document valid against it is the one the docs show."""
    import jsonschema
    from benchhub_contract.schema import submission_schema

    body = document["paths"]["/api/v1/submissions/"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    components = document["components"]["schemas"]
    assert schema == {"$ref": "#/components/schemas/SubmissionDocument"}
    for name in submission_schema()["$defs"]:
        assert f"SubmissionDocument_{name}" in components
    standalone = {**components["SubmissionDocument"], "components": {"schemas": components}}
    validator = jsonschema.Draft202012Validator(standalone)
    example = body["content"]["application/json"]["examples"]["select-update sweep"]["value"]
    validator.validate(example)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**example, "runs": [{**example["runs"][0], "benchmark": "nope"}]})


def test_every_operation_documents_the_error_shape(document):

    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status in ("400", "404", "500"):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/Error"}, (path, method)


ORDERED_LISTS = {
    "/api/v1/submissions/": "-created_at,-id",
    "/api/v1/runs/": "-id",
    "/api/v1/measurements/": "-id",
    "/api/v1/measurements/export.csv": "-id",
    "/api/v1/measurements/export.jsonl": "-id",
    "/api/v1/hardware/": "-id",
    "/api/v1/storage/": "-id",
    "/api/v1/os/": "-id",
    "/api/v1/servers/": "-id",
    "/api/v1/clients/": "-id",
    "/api/v1/benchmarks/": "name",
}


def test_every_list_documents_its_one_ordering_and_takes_what_it_documents(client, db, document):
    """Clients of other DRF APIs send ?ordering=; the lists take their own
    order (lib/ordering.py), and the document must say which, or generated
    clients and fuzzers never learn it."""

    for path, accepted in ORDERED_LISTS.items():
        parameters = document["paths"][path]["get"].get("parameters", [])
        ordering = [p for p in parameters if p["name"] == "ordering"]
        assert len(ordering) == 1, path
        assert ordering[0]["in"] == "query"
        assert ordering[0]["schema"]["enum"][0] == accepted, path
        for value in ordering[0]["schema"]["enum"]:
            response = client.get(path, {"ordering": value})
            assert response.status_code == 200, (path, value)
            if response.streaming:  # read to its end, as a server does: its cursor closes
                body = b"".join(response.streaming_content)
                assert body.startswith(b"measurement_id,") or path.endswith(".jsonl"), path


def test_the_csv_export_documents_the_filters_of_the_measurement_list(document):
    """It filters with the same filter set; without them documented, the
    README's own ?benchmark=sql-bench was not in the OpenAPI document."""
    paths = document["paths"]

    def names(path: str) -> set[str]:
        return {p["name"] for p in paths[path]["get"]["parameters"]}

    listed = names("/api/v1/measurements/") - {"cursor", "page_size"}
    assert "benchmark" in listed
    assert names("/api/v1/measurements/export.csv") == listed
    assert names("/api/v1/measurements/export.jsonl") == listed


def query_parameters(document: dict):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    yield f"{method.upper()} {path}", parameter


def test_no_query_parameter_the_document_allows_empty_or_by_a_placeholder_name(document):
    """The server refuses a parameter given empty and one literally named
    param.<name>; the document offered both, and fuzzers sent them."""
    import re

    seen = 0
    for where, parameter in query_parameters(document):
        schema = parameter["schema"]
        assert "<" not in parameter["name"], where
        if "enum" in schema:
            assert "" not in schema["enum"], (where, parameter["name"])
        elif schema.get("type") == "string" and "format" not in schema:
            seen += 1
            assert not re.search(schema["pattern"], ""), (where, parameter["name"])
            assert not re.search(schema["pattern"], " \t "), (where, parameter["name"])
            taken = {
                "fingerprint": "3e" * 31 + "a7",
                "version_min": "15.2",
                "version_max": "9",
                "x": "param.clients",
                "series": "filesystem",
            }
            assert re.search(schema["pattern"], taken.get(parameter["name"], "ext4 ")), where
    assert seen > 50
    measurements = document["paths"]["/api/v1/measurements/"]["get"]
    assert "`param.<name>`: measurement parameter equals value" in measurements["description"]


def request_body_validator(document: dict, name: str):
    import jsonschema

    components = document["components"]["schemas"]
    return jsonschema.Draft202012Validator(
        {**components[name], "components": {"schemas": components}}
    )


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"action": "hide"}, True),
        ({"action": "approve", "reason": ""}, True),
        ({"action": "reject", "reason": "wrong units on 3 of 7 runs"}, True),
        ({"action": "reject"}, False),
        ({"action": "flag", "reason": "  "}, False),
        ({"action": "request_rerun", "reason": ""}, False),
        ({"action": "hide", "extra": 1}, False),
    ],
)
def test_the_moderation_body_says_which_actions_need_a_reason(document, body, valid):
    validator = request_body_validator(document, "ModerationInputRequest")

    assert validator.is_valid(body) is valid


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"reason": "numbers copied from another run"}, True),
        ({"reason": "spam", "y": 2}, False),
        ({"reason": " "}, False),
    ],
)
def test_the_report_body_takes_a_reason_and_nothing_else(document, body, valid):
    validator = request_body_validator(document, "ReportInputRequest")

    assert validator.is_valid(body) is valid
