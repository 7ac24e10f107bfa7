"""Uploads the API refuses, storing nothing: an invalid document (each error
with its path), malformed JSON, another content type, a body over the
limit, no or a wrong token, a catalog entry missing from the database."""

import json

import pytest
from django.apps import apps
from django.test import override_settings
from rest_framework.test import APIClient

from benchhub.results.models import Benchmark, Metric, Run, Submission
from benchhub.results.services import catalog_sync
from tests.factories import example_document
from tests.results.uploads import URL, post


def test_invalid_document_lists_every_error_with_its_path(alice_api):
    document = example_document()
    document["runs"][0]["measurements"][3]["value"] = "fast"
    document["runs"][0]["measurements"][5]["metric"] = "speed"
    document["environment"]["client"]["protocol"] = "carrier_pigeon"
    del document["source"]

    response = post(alice_api, document)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_document"
    paths = {d["path"] for d in error["details"]}
    assert paths == {
        "$.source",
        "$.environment.client.protocol",
        "$.runs[0].measurements[3].value",
    }
    # Catalog checks run once the shape is right: the unknown metric shows next.
    document["source"] = {"kind": "agent"}
    document["runs"][0]["measurements"][3]["value"] = 1.0
    document["environment"]["client"]["protocol"] = "unix_socket"
    second = post(alice_api, document).json()["error"]
    assert [d["path"] for d in second["details"]] == ["$.runs[0].measurements[5].metric"]
    assert "'speed'" in second["details"][0]["message"]
    assert "throughput" in second["details"][0]["message"]  # names what is known
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("change", "path", "fragment"),
    [
        (
            lambda d: d["runs"][0].update(benchmark="tpc-x"),
            "$.runs[0].benchmark",
            "unknown benchmark",
        ),
        (
            lambda d: d["runs"][0]["measurements"][0].update(unit="ms"),
            "$.runs[0].measurements[0].unit",
            "'tx/s'",
        ),
        (
            lambda d: d["runs"][0]["measurements"].append(dict(d["runs"][0]["measurements"][0])),
            "$.runs[0].measurements[54]",
            "duplicate",
        ),
        (
            lambda d: d["environment"]["database"].update(version_string="12.4"),
            "$.environment.database.version_string",
            "database.engine",
        ),
        (
            lambda d: d["runs"][0].update(ended_at="2020-01-01T00:00:00Z"),
            "$.runs[0].ended_at",
            "before",
        ),
        (
            lambda d: d["runs"][0].update(ended_at="2026-11-20T10:04:13.5"),
            "$.runs[0].ended_at",
            "'2026-11-20T10:04:13.5' has no UTC offset; add one",
        ),
        (
            lambda d: d["runs"][0].update(started_at="yesterday"),
            "$.runs[0].started_at",
            "date-time",
        ),
        (
            lambda d: d["environment"].pop("database"),
            "$.runs[0].environment.database",
            "no database",
        ),
    ],
)
def test_catalog_and_environment_errors_name_the_field(alice_api, change, path, fragment):
    document = example_document()
    change(document)

    response = post(alice_api, document)

    assert response.status_code == 400
    details = response.json()["error"]["details"]
    assert [d["path"] for d in details] == [path]
    assert fragment in details[0]["message"]
    assert Submission.objects.count() == 0


def test_bad_run_in_a_multi_run_document_stores_nothing(alice_api):
    document = example_document()
    second = json.loads(json.dumps(document["runs"][0]))
    second["measurements"][0]["metric"] = "nope"
    document["runs"].append(second)

    response = post(alice_api, document)

    assert response.status_code == 400
    assert Submission.objects.count() == 0
    assert Run.objects.count() == 0


def test_malformed_json_is_reported_with_its_position(alice_api):
    response = alice_api.post(URL, data='{"schema": 1,', content_type="application/json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "malformed_json"
    assert "line 1 column" in error["message"]


def test_non_json_content_type_is_refused(alice_api):
    response = alice_api.post(
        URL, data="schema=1", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 415
    assert "application/json" in response.json()["error"]["message"]


@override_settings(BENCHHUB_MAX_UPLOAD_BYTES=2_000)
def test_body_over_the_limit_is_refused(alice_api):
    document = example_document()

    response = post(alice_api, document)

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert "2000 bytes" in response.json()["error"]["message"]
    assert Submission.objects.count() == 0


def test_upload_without_token_is_unauthorized(anonymous_api):
    response = post(anonymous_api, example_document())

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == "Token"


def test_upload_with_wrong_token_is_unauthorized(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token bh_not-a-real-token")

    response = post(client, example_document())

    assert response.status_code == 401
    assert response.json()["error"] == {
        "code": "authentication_failed",
        "message": "Invalid or revoked API token.",
    }
    assert Submission.objects.count() == 0


def _catalog_rows_deleted(what: str) -> None:
    benchmark = Benchmark.objects.get(name="select-update")
    if what == "a metric":
        Metric.objects.filter(benchmark=benchmark, name="latency_p99").delete()
    elif what == "every metric of the benchmark":
        Metric.objects.filter(benchmark=benchmark).delete()
    else:
        benchmark.delete()


@pytest.mark.parametrize(
    ("deleted", "named", "path"),
    [
        ("a metric", ["metric latency_p99 of benchmark select-update"], "measurements[4].metric"),
        (
            "every metric of the benchmark",
            [f"metric {m} of benchmark select-update" for m in ("throughput", "latency_p99")],
            "measurements[0].metric",
        ),
        ("the benchmark", ["benchmark select-update"], "benchmark"),
    ],
)
def test_an_upload_of_a_catalog_entry_missing_from_the_database_is_a_503_naming_it(
    alice_api, deleted, named, path
):
    """Deleted from a shell, or the code updated and the web process started
    before migrate: the document is right by the catalog file, so the answer
    is 503 (the agent keeps it to send again), not a KeyError's 500."""
    _catalog_rows_deleted(deleted)
    document = example_document()
    assert document["runs"][0]["measurements"][4]["metric"] == "latency_p99"
    rows = {model._meta.label: model.objects.count() for model in apps.get_models()}

    response = post(alice_api, document)

    assert response.status_code == 503, response.content[:500]
    # Every 503 says when to send again: here, once migrate has had time to run.
    assert response["Retry-After"] == "300"
    error = response.json()["error"]
    assert error["code"] == "catalog_incomplete"
    assert error["message"].startswith("Nothing was stored: ")
    assert "manage.py migrate" in error["message"]
    for name in named:
        assert name in error["message"]
    assert error["details"][0] == {"path": f"$.runs[0].{path}", "message": f"{named[0]} is missing"}
    assert {model._meta.label: model.objects.count() for model in apps.get_models()} == rows

    catalog_sync()  # what migrate runs
    assert post(alice_api, document).status_code == 201


def test_a_value_spelt_none_is_refused_naming_each_place(alice_api):
    """ "(none)" is how the pages show an empty value, and a filter or a
    reference reads it as that value: a filesystem, a kernel or a parameter
    stored as the text "(none)" would be shown as the empty one and found
    with it. Mount options keep their old reading: "(none)" is no option."""
    document = example_document()
    document["environment"]["storage"]["filesystem"] = "(none)"
    document["environment"]["storage"]["mount_options"] = "(none)"
    document["runs"][0]["environment"] = {"os": {"family": "linux", "kernel": " (NONE) "}}
    document["runs"][0]["parameters"]["locking"] = "(none)"
    document["runs"][0]["measurements"][1]["parameters"]["clients"] = "(none)"

    response = post(alice_api, document)

    assert response.status_code == 400, response.content
    details = response.json()["error"]["details"]
    assert [d["path"] for d in details] == [
        "$.environment.storage.filesystem",
        "$.runs[0].environment.os.kernel",
        "$.runs[0].parameters.locking",
        "$.runs[0].measurements[1].parameters.clients",
    ]
    assert details[0]["message"] == (
        '"(none)" is how BenchHub shows an empty value, so it cannot be a value: '
        'leave the field out, or give "" for none'
    )
    assert Submission.objects.count() == 0

    document["environment"]["storage"]["filesystem"] = ""
    document["runs"][0]["environment"]["os"]["kernel"] = "6.12"
    document["runs"][0]["parameters"]["locking"] = ""
    document["runs"][0]["measurements"][1]["parameters"]["clients"] = 3
    stored = post(alice_api, document)
    assert stored.status_code == 201, stored.content
    assert Run.objects.get().storage.mount_options == ""
