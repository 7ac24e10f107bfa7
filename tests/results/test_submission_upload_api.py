"""POST /api/v1/submissions/: a document stored whole, its environment
normalized, a retry stored once, a uuid taken by other content a conflict,
and the answer. Refusals: test_submission_upload_refusals.py; races:
test_submission_upload_concurrency.py; statements: test_submission_upload_queries.py."""

import json

import pytest
from rest_framework.renderers import JSONRenderer

from benchhub.accounts.roles import role_grant
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Measurement, Run, Submission
from benchhub.results.outputs import SubmissionStoredOutput
from tests.factories import example_document
from tests.results.uploads import post


def test_upload_is_stored_with_every_measurement(alice_api, alice):
    document = example_document()

    response = post(alice_api, document)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["uuid"] == document["uuid"]
    assert body["status"] == "pending"
    assert response["Location"] == body["url"]
    submission = Submission.objects.get(uuid=document["uuid"])
    assert submission.submitter == alice
    assert submission.document == document
    assert Run.objects.filter(submission=submission).count() == 1
    assert Measurement.objects.filter(run__submission=submission).count() == 54
    stored = Measurement.objects.get(
        run__submission=submission, metric__name="throughput", parameters__clients=20
    )
    sent = next(
        m
        for m in document["runs"][0]["measurements"]
        if m["metric"] == "throughput" and m["parameters"]["clients"] == 20
    )
    assert stored.value == sent["value"]
    assert stored.samples == sent["samples"]


def test_environment_is_normalized_and_raw_text_kept(alice_api):
    document = example_document(
        hardware={"cpu": "AMD Athlon(tm) 64 X2 Dual Core Processor 5200+", "cores": 2},
        storage={"filesystem": "UFS2", "mount_options": "softupdates,local", "io_scheduler": ""},
    )

    assert post(alice_api, document).status_code == 201

    run = Run.objects.select_related("hardware", "storage", "server").get(
        submission__uuid=document["uuid"]
    )
    assert (run.hardware.cpu_vendor, run.hardware.cpu_model) == ("amd", "Athlon 64 X2 5200+")
    assert run.hardware.cpu_raw == "AMD Athlon(tm) 64 X2 Dual Core Processor 5200+"
    assert (run.storage.filesystem, run.storage.filesystem_raw) == ("ufs", "UFS2")
    assert run.storage.mount_options == "local,softupdates"
    assert (run.server.engine, run.server.version, run.server.version_major) == (
        "postgresql",
        "15.18",
        "15",
    )


def test_same_environment_is_stored_once(alice_api):
    assert post(alice_api, example_document()).status_code == 201
    assert post(alice_api, example_document()).status_code == 201

    runs = Run.objects.all()
    assert runs.count() == 2
    assert (
        len({(r.hardware_id, r.storage_id, r.os_id, r.server_id, r.client_id) for r in runs}) == 1
    )


def test_retried_upload_is_stored_once(alice_api):
    document = example_document()
    first = post(alice_api, document)

    again = post(alice_api, document)

    assert again.status_code == 200
    assert again.json()["url"] == first.json()["url"]
    assert Submission.objects.count() == 1
    assert Measurement.objects.count() == 54


def test_same_uuid_with_other_content_is_a_conflict(alice_api):
    document = example_document()
    post(alice_api, document)
    document["runs"][0]["measurements"][0]["value"] += 1

    response = post(alice_api, document)

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert document["uuid"] in response.json()["error"]["message"]
    assert Measurement.objects.count() == 54


def test_replaying_another_users_document_is_a_conflict(alice_api, bob_api):
    document = example_document()
    post(alice_api, document)

    response = post(bob_api, document)

    assert response.status_code == 409
    assert "another submitter" in response.json()["error"]["message"]


def test_the_same_document_with_its_uuid_in_upper_case_is_the_same_submission(alice_api):
    document = example_document()
    document["uuid"] = "9b2E4c1a-07fd-4e3B-a5c8-d16f0E2b7a94"  # mixed case, as some tools write
    first = post(alice_api, document)

    again = post(alice_api, {**document, "uuid": document["uuid"].upper()})
    lower = post(alice_api, {**document, "uuid": document["uuid"].lower()})

    assert first.status_code == 201, first.json()
    assert (again.status_code, lower.status_code) == (200, 200), (again.json(), lower.json())
    assert again.json()["url"] == lower.json()["url"] == first.json()["url"]
    assert first.json()["uuid"] == "9b2e4c1a-07fd-4e3b-a5c8-d16f0e2b7a94"
    stored = Submission.objects.get()
    assert stored.document["uuid"] == "9b2e4c1a-07fd-4e3b-a5c8-d16f0e2b7a94"
    assert Measurement.objects.count() == 54


@pytest.mark.parametrize("changed", [False, True])
def test_re_posting_a_deleted_submission_is_410_gone(alice_api, alice, changed):
    document = example_document()
    url = post(alice_api, document).json()["url"]
    submission_moderate(
        submission=Submission.objects.get(), actor=alice, action="delete", reason="wrong host"
    )
    if changed:
        document["runs"][0]["measurements"][3]["value"] += 0.25

    response = post(alice_api, {**document, "uuid": document["uuid"].upper()})

    assert response.status_code == 410, response.json()
    error = response.json()["error"]
    assert error["code"] == "gone"
    assert f"submission {document['uuid']} was deleted" in error["message"]
    assert "new uuid" in error["message"]
    assert alice_api.get(url).status_code == 404
    assert Submission.objects.get().status == Submission.Status.DELETED
    assert Measurement.objects.count() == 54


def test_re_posting_somebody_elses_deleted_submission_stays_a_409(alice_api, bob_api, alice):
    document = example_document()
    post(alice_api, document)
    submission_moderate(submission=Submission.objects.get(), actor=alice, action="delete")

    response = post(bob_api, document)

    assert response.status_code == 409  # nothing said about alice's submission
    assert "another submitter" in response.json()["error"]["message"]


def test_every_text_field_at_its_schema_limit_is_stored(alice_api):
    """The schema allows 500 characters of free text; the columns must hold
    them (in multi-byte characters too), or PostgreSQL answers with a 500."""
    long = "é" * 500
    document = example_document(
        hardware={"cpu": long, "virtualization": long, "cores": 1},
        storage={
            "device_model": long,
            "raid": long,
            "filesystem": long,
            "io_scheduler": long,
            "mount_options": [f"{n}{long[:98]}" for n in range(100)],
        },
        os={"family": "other", "distribution": long, "version": long, "kernel": long},
        database={
            "version_string": "PostgreSQL 15." + "9" * 480,
            "config_profile": long,
        },
        client={"driver": long, "driver_version": long, "load_engine": long},
    )
    document["source"].update(tool=long, tool_version=long)

    response = post(alice_api, document)

    assert response.status_code == 201, response.json()
    run = Run.objects.select_related("storage", "server").get(submission__uuid=document["uuid"])
    assert run.storage.filesystem == long
    assert len(run.storage.mount_options.split(",")) == 100


@pytest.mark.parametrize("trusted", [False, True], ids=["pending", "approved on arrival"])
def test_the_upload_answer_is_what_the_submission_serializer_says(alice, alice_api, trusted):
    """A new upload's answer is written out without the serializer (for
    speed); it must say exactly what SubmissionStoredOutput, whose shape the
    OpenAPI schema publishes, says of the stored submission."""
    if trusted:
        role_grant(user=alice, role="trusted")
    document = example_document()
    document["source"].update(tool="pgbench", tool_version="16.4", command="pgbench -c 8")
    document["source"]["note"] = "a <b>note</b>"

    response = post(alice_api, document)

    assert response.status_code == 201
    stored = Submission.objects.get(uuid=document["uuid"])
    assert stored.status == ("approved" if trusted else "pending")
    expected = SubmissionStoredOutput(stored, context={"request": response.wsgi_request}).data
    assert response.json() == json.loads(JSONRenderer().render(expected))
    assert response["Location"] == expected["url"]


def test_a_schema_of_1_0_is_answered_as_version_1_by_the_upload_and_its_retry(alice_api):
    # Found in review: JSON Schema's const 1 admits 1.0, and the upload's
    # answer (written out by hand) echoed it as 1.0 where a retry, the GET
    # and the published schema say 1.
    document = example_document()
    document["schema"] = 1.0

    first, again = post(alice_api, document), post(alice_api, document)

    assert (first.status_code, again.status_code) == (201, 200)
    assert b'"schema_version":1,' in first.content.replace(b" ", b"")
    assert b'"schema_version":1,' in again.content.replace(b" ", b"")
