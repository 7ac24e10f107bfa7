import json
import threading

import pytest
from django.apps import apps
from django.db import connection, connections
from django.test import override_settings
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from benchhub.accounts.roles import role_grant
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Benchmark, Hardware, Measurement, Metric, Run, Submission
from benchhub.results.outputs import SubmissionStoredOutput
from benchhub.results.services import SubmissionConflict, catalog_sync, submission_create
from tests.factories import example_document

URL = "/api/v1/submissions/"


def post(client: APIClient, document, **extra):
    return client.post(URL, data=json.dumps(document), content_type="application/json", **extra)


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


def post_at_once(secret: str, documents: list[dict]) -> list[int]:
    """Each document posted by its own client and thread, all released at
    the same moment by a barrier: the statuses, in the order they came."""
    barrier = threading.Barrier(len(documents))
    statuses: list[int] = []

    def upload(document: dict) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
        barrier.wait()
        try:
            statuses.append(post(client, document).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(document,)) for document in documents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicate_uploads_store_one_submission(alice):
    """Two clients post the same uuid at the same moment: PostgreSQL's unique
    index makes the second insert wait for the first, which then wins."""
    from benchhub.accounts.services import api_token_create

    _, secret = api_token_create(user=alice, name="race")
    document = example_document()

    statuses = post_at_once(secret, [document] * 4)

    assert sorted(statuses) == [200, 200, 200, 201]
    assert Submission.objects.count() == 1
    assert Measurement.objects.count() == 54


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


def test_the_measurements_go_in_by_one_statement_text_whatever_their_count(alice):
    """On PostgreSQL the measurements travel as one JSON parameter (in the
    statement that stores the whole document), so the statement's text is
    the same for 3 measurements as for 54: psycopg parses it once, where a
    VALUES list of 54 rows (432 placeholders) was parsed again on every
    upload."""
    texts = []

    def record(execute, sql, params, many, context):
        if "results_measurement" in sql and sql.lstrip().upper().startswith(("INSERT", "WITH")):
            texts.append((sql, len(params)))
        return execute(sql, params, many, context)

    small = example_document()
    small["runs"][0]["measurements"] = small["runs"][0]["measurements"][:3]
    with connection.execute_wrapper(record):
        for document in (example_document(), small):
            submission_create(submitter=alice, document=document)

    assert len(texts) == 2
    assert texts[0] == texts[1]
    # Parameters are the document's, not one (or eight) per measurement.
    assert texts[0][1] < len(example_document()["runs"][0]["measurements"])


def three_runs(machines: tuple[str, ...] = ("a", "b", "c")) -> dict:
    """The example with three runs, each on its own machine."""
    document = example_document()
    run = document["runs"][0]
    document["runs"] = [{**run, "environment": {"hardware": {"cpu": cpu}}} for cpu in machines]
    return document


@pytest.mark.parametrize("make", [example_document, three_runs], ids=["one run", "three runs"])
def test_an_upload_costs_a_fixed_number_of_queries(alice_api, django_assert_max_num_queries, make):
    """However many runs and measurements it has: the submission, its runs,
    their measurements, the metrics' parameter names and the baseline marks
    go in one statement, the metrics and the dimensions of every run are
    found in one, and the answer is built from memory. (The token's lookup
    also reads the submitter's groups: a trusted one's upload is approved
    on arrival.)"""
    post(alice_api, make())  # the dimension rows exist from here on

    with django_assert_max_num_queries(5) as upload:
        response = post(alice_api, make())

    assert response.status_code == 201
    statements = [q["sql"] for q in upload.captured_queries]
    assert sum('INSERT INTO "results_measurement"' in s for s in statements) == 1
    # Lookups by unique keys (the token's digest) need no ORDER BY, nor does
    # a new uuid need a lookup before its INSERT.
    assert not any("ORDER BY" in s for s in statements if s.startswith("SELECT"))
    assert not any(s.startswith('SELECT "results_submission"') for s in statements)
    # The submitter's groups (is a trusted one's upload approved on arrival?)
    # come with the token.
    assert not any(s.startswith('SELECT "auth_group"') for s in statements)


@pytest.mark.django_db(transaction=True)
def test_concurrent_uploads_bringing_the_same_new_machines_in_other_orders_are_both_stored(alice):
    """Two documents whose runs describe the same new machines, in opposite
    orders, uploaded at the same moment: each upload used to create the
    rows run by run, each held a row the other waited for, and PostgreSQL
    broke the deadlock by failing one (a 503). Rows are created in one
    order now."""
    from benchhub.accounts.services import api_token_create

    _, secret = api_token_create(user=alice, name="race")
    machines = [{"cpu": f"new machine {n}", "cores": n} for n in (1, 2, 3)]
    documents = []
    for order in (machines, machines[::-1]):
        document = example_document()
        run = document["runs"][0]
        document["runs"] = [{**run, "environment": {"hardware": machine}} for machine in order]
        documents.append(document)

    statuses = post_at_once(secret, documents)

    assert statuses == [201, 201]
    assert Run.objects.count() == 6
    assert Run.objects.values("hardware").distinct().count() == 3


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("case", "transactions"),
    [("known machine", 0), ("new machine", 1), ("trusted submitter", 1)],
)
def test_a_common_upload_is_one_statement_that_commits_itself(
    alice, monkeypatch, case, transactions
):
    """A pending upload from a machine already described is stored by the
    document's one statement, its own transaction (autocommit): no BEGIN
    and COMMIT around it. A new dimension row or an approval on arrival
    writes more, in one transaction with the document."""
    submission_create(submitter=alice, document=example_document())  # the machine's rows
    if case == "trusted submitter":
        role_grant(user=alice, role="trusted")
    document = example_document()
    if case == "new machine":
        document["environment"]["hardware"] = {"cpu": "a machine never seen"}
    commits = []
    wrapper = type(connections["default"])
    commit = wrapper.commit
    monkeypatch.setattr(wrapper, "commit", lambda self: commits.append(1) or commit(self))

    outcome = submission_create(submitter=alice, document=document)

    assert len(commits) == transactions
    stored = Submission.objects.get(uuid=document["uuid"])
    assert stored.pk == outcome.submission.pk
    assert stored.status == ("approved" if case == "trusted submitter" else "pending")
    assert Measurement.objects.filter(run__submission=stored).count() == 54


@pytest.mark.django_db(transaction=True)
def test_a_refused_upload_leaves_no_new_machine_behind(alice, bob):
    """Rows of a new machine are created in the document's transaction: an
    upload refused (here a uuid taken by another submitter) stores none."""
    taken = example_document()
    submission_create(submitter=bob, document=taken)
    document = example_document()
    document["uuid"] = taken["uuid"]
    document["environment"]["hardware"] = {"cpu": "a machine never seen"}
    machines = Hardware.objects.count()

    with pytest.raises(SubmissionConflict):
        submission_create(submitter=alice, document=document)

    assert Hardware.objects.count() == machines


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
