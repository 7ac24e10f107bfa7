import pytest
from django.core.management import call_command


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


def test_the_submission_list_is_documented_as_the_paginated_page_it_is(client, db):
    document = openapi(client)

    answer = document["paths"]["/api/v1/submissions/"]["get"]["responses"]["200"]
    reference = answer["content"]["application/json"]["schema"]["$ref"]
    page = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    assert {"next", "previous", "results"} <= set(page["properties"])


def test_the_upload_body_is_the_submission_json_schema(client, db):
    """Generated clients and fuzzers build documents from it: every $ref
    resolves, and a document valid against it is the one the docs show."""
    import jsonschema
    from benchhub_agent.schema import submission_schema

    document = openapi(client)
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


def test_every_operation_documents_the_error_shape(client, db):
    document = openapi(client)

    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status in ("400", "404", "500"):
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/Error"}, (path, method)
