"""POST /api/v1/imports/: a tool's output, with what it does not say, becomes
a pending submission; a file that is not that tool's output stores nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from rest_framework.test import APIClient

from benchhub.results.models import Benchmark, Measurement, Run, Submission

URL = "/api/v1/imports/"
FIXTURES = Path(__file__).resolve().parents[2] / "agents/tests/importers/fixtures"
PGBENCH = (FIXTURES / "pgbench15-tpcb.txt").read_text()
SYSBENCH = (FIXTURES / "sysbench10-mariadb-oltp_read_write.txt").read_text()

MACHINE = {
    "hardware": {"cpu": "AMD Ryzen 7 5800X 8-Core Processor", "cores": 8, "threads": 16},
    "os": {"family": "linux", "distribution": "Debian", "version": "12"},
    "storage": {"kind": "nvme", "filesystem": "ext4", "mount_options": "rw,noatime"},
    "client": {"protocol": "tcp_loopback"},
}
MARIADB = {"database": {"engine": "mariadb", "version_string": "10.11.6-MariaDB"}}


def post_json(client: APIClient, **body: Any):
    return client.post(URL, data=json.dumps(body), content_type="application/json")


def sysbench_body(**changes: Any) -> dict[str, Any]:
    body = {
        "tool": "sysbench",
        "output": SYSBENCH,
        "parameters": {"test": "oltp_read_write"},
        "environment": MACHINE | MARIADB,
    }
    return body | changes


def test_pgbench_report_is_stored_as_a_pending_import(alice_api, alice):
    response = post_json(alice_api, tool="pgbench", output=PGBENCH, environment=MACHINE)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert response["Location"] == body["url"]
    assert (body["status"], body["source"], body["tool"]) == ("pending", "import", "pgbench")
    assert body["tool_version"] == "15.20 (Debian 15.20-0+deb12u1)"
    submission = Submission.objects.get(uuid=body["uuid"])
    assert submission.submitter == alice
    run = Run.objects.select_related("server", "hardware", "client").get(submission=submission)
    assert run.benchmark.name == "tpcb"
    assert (run.server.engine, run.server.version) == ("postgresql", "15.20")
    assert (run.hardware.cores, run.client.protocol) == (8, "tcp_loopback")
    assert run.client.load_engine == "pgbench"
    tps = Measurement.objects.get(run=run, metric__name="tps")
    assert (tps.value, tps.parameters) == (2400.595767, {"clients": 4})


def test_sysbench_output_is_stored_with_the_database_the_user_names(alice_api):
    response = post_json(alice_api, **sysbench_body())

    assert response.status_code == 201, response.json()
    run = Run.objects.select_related("server").get(submission__uuid=response.json()["uuid"])
    assert (run.server.engine, run.server.version_major) == ("mariadb", "10.11")
    assert run.parameters == {"test": "oltp_read_write"}
    values = dict(Measurement.objects.filter(run=run).values_list("metric__name", "value"))
    assert values["tps"] == 856.20
    assert values["latency_p95"] == 8.90


def test_file_can_be_sent_as_multipart_with_one_field_per_value(alice_api):
    response = alice_api.post(
        URL,
        data={
            "tool": "sysbench",
            "file": SimpleUploadedFile("sysbench.txt", SYSBENCH.encode()),
            "parameters.test": "oltp_read_write",
            "database.engine": "mariadb",
            "database.version_string": "10.11.6",
            "hardware.cores": "4",
            "hardware.ram_bytes": str(16 * 1024**3),
            "storage.mount_options": "rw,noatime",
        },
        format="multipart",
    )

    assert response.status_code == 201, response.json()
    run = Run.objects.select_related("hardware", "storage").get(
        submission__uuid=response.json()["uuid"]
    )
    assert (run.hardware.cores, run.hardware.ram_bytes) == (4, 16 * 1024**3)
    assert run.storage.mount_options == "noatime"


def test_output_of_another_tool_is_refused_saying_what_was_expected(alice_api):
    response = post_json(alice_api, tool="pgbench", output=SYSBENCH, environment=MACHINE)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_tool_output"
    assert "does not look like pgbench output" in error["message"]
    assert "expected a line 'transaction type: …'" in error["message"]
    assert error["details"][0]["path"] == "$.output"
    assert Submission.objects.count() == 0
    assert Run.objects.count() == 0


def test_wrong_file_sent_as_multipart_points_at_the_file(alice_api):
    response = alice_api.post(
        URL,
        data={"tool": "sysbench", "file": SimpleUploadedFile("out.txt", PGBENCH.encode())},
        format="multipart",
    )

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["path"] == "$.file"
    assert "expected a 'SQL statistics:' block" in response.json()["error"]["message"]
    assert Submission.objects.count() == 0


def test_pgbench_initialisation_log_is_not_a_report(alice_api):
    output = (FIXTURES / "pgbench15-init.txt").read_text()

    response = post_json(alice_api, tool="pgbench", output=output)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_tool_output"
    assert Submission.objects.count() == 0


def test_missing_database_description_is_an_error_naming_the_field(alice_api):
    response = post_json(alice_api, **sysbench_body(environment=MACHINE))

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_document"
    assert [d["path"] for d in error["details"]] == ["$.environment.database.version_string"]
    assert "does not name the database server" in error["details"][0]["message"]
    assert Submission.objects.count() == 0


def test_every_environment_error_is_listed_with_its_path(alice_api):
    environment = {
        "hardware": {"cores": "eight"},
        "client": {"protocol": "carrier_pigeon"},
        **MARIADB,
    }

    response = post_json(alice_api, **sysbench_body(environment=environment))

    assert response.status_code == 400
    paths = {d["path"] for d in response.json()["error"]["details"]}
    assert paths == {"$.environment.hardware.cores", "$.environment.client.protocol"}


def test_sysbench_without_its_test_name_points_at_the_parameter(alice_api):
    response = post_json(alice_api, **sysbench_body(parameters={}))

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"][0]["path"] == "$.parameters.test"
    assert "which test ran" in error["message"]


def test_a_description_contradicting_the_output_is_refused_naming_the_field(alice_api):
    database = {"database": {"version_string": "15.21"}}

    response = post_json(alice_api, tool="pgbench", output=PGBENCH, environment=database)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"][0]["path"] == "$.environment.database.version_string"
    assert "PostgreSQL 15.20" in error["details"][0]["message"]
    assert "'15.21'" in error["details"][0]["message"]
    assert Submission.objects.count() == 0


def test_what_the_output_leaves_out_comes_from_the_user(alice_api):
    environment = {"hardware": {"cpu": "AMD Ryzen 7 5800X", "cores": 8}}

    response = post_json(alice_api, tool="pgbench", output=PGBENCH, environment=environment)

    assert response.status_code == 201, response.json()
    run = Run.objects.select_related("server", "hardware").get(
        submission__uuid=response.json()["uuid"]
    )
    assert (run.server.engine, run.server.version) == ("postgresql", "15.20")
    assert (run.hardware.cpu_model, run.hardware.cores) == ("Ryzen 7 5800X", 8)


def test_retried_upload_with_a_uuid_is_stored_once(alice_api):
    key = str(uuid.uuid4())
    first = post_json(alice_api, **sysbench_body(uuid=key))

    again = post_json(alice_api, **sysbench_body(uuid=key))

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["uuid"] == key
    assert again.json()["url"] == first.json()["url"]
    assert Submission.objects.count() == 1
    assert Measurement.objects.count() == 8


def test_retried_upload_without_a_uuid_is_stored_once_too(alice_api):
    first = post_json(alice_api, **sysbench_body())

    again = post_json(alice_api, **sysbench_body())

    assert (first.status_code, again.status_code) == (201, 200)
    assert Submission.objects.count() == 1


def test_a_copy_with_crlf_and_more_trailing_newlines_is_the_same_upload(alice_api):
    first = post_json(alice_api, **sysbench_body())

    copy = SYSBENCH.replace("\n", "\r\n") + "\r\n\r\n"
    again = post_json(alice_api, **sysbench_body(output=copy))

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["url"] == first.json()["url"]
    assert Submission.objects.count() == 1


def test_same_output_from_two_people_is_two_submissions(alice_api, bob_api):
    assert post_json(alice_api, **sysbench_body()).status_code == 201
    assert post_json(bob_api, **sysbench_body()).status_code == 201

    assert Submission.objects.count() == 2


def test_uuid_reused_for_other_content_is_a_conflict(alice_api):
    key = str(uuid.uuid4())
    post_json(alice_api, **sysbench_body(uuid=key))

    response = post_json(alice_api, tool="pgbench", output=PGBENCH, uuid=key)

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert key in response.json()["error"]["message"]
    assert Submission.objects.count() == 1


def test_replaying_another_users_uuid_is_a_conflict(alice_api, bob_api):
    key = str(uuid.uuid4())
    post_json(alice_api, **sysbench_body(uuid=key))

    response = post_json(bob_api, **sysbench_body(uuid=key))

    assert response.status_code == 409
    assert Submission.objects.get().submitter.username == "alice"


def test_a_signed_in_session_may_upload(alice):
    client = APIClient()
    client.force_login(alice)

    response = post_json(client, **sysbench_body())

    assert response.status_code == 201
    assert Submission.objects.get().submitter == alice


def test_upload_without_credentials_is_unauthorized(anonymous_api, db):
    response = post_json(anonymous_api, **sysbench_body())

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert Submission.objects.count() == 0


@override_settings(BENCHHUB_MAX_UPLOAD_BYTES=1_000)
def test_body_over_the_limit_is_refused(alice_api):
    response = post_json(alice_api, **sysbench_body())

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert "1000 bytes" in response.json()["error"]["message"]
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "path", "fragment"),
    [
        ({"tool": "pgbench"}, "$.output", "as `output` text or as a `file`"),
        ({"tool": "ab", "output": PGBENCH}, "$.tool", "expected one of pgbench, pgbench-log"),
        ({"tool": "pgbench", "output": PGBENCH, "uuid": "nope"}, "$.uuid", "valid UUID"),
        (
            {"tool": "pgbench", "output": PGBENCH, "environment": {"os": "linux"}},
            "$.environment.os",
            "dictionary",
        ),
    ],
)
def test_request_field_errors_name_the_field(alice_api, body, path, fragment):
    response = post_json(alice_api, **body)

    assert response.status_code == 400
    details = response.json()["error"]["details"]
    assert details[0]["path"] == path
    assert fragment in details[0]["message"]


@pytest.mark.parametrize("field", ["output", "command"])
@pytest.mark.parametrize(
    ("sent", "kind"), [(5, "the number 5"), (2.5, "the number 2.5"), (True, "a boolean")]
)
def test_an_output_or_command_that_is_not_a_string_is_a_400_naming_it(alice_api, field, sent, kind):
    """{"output": 5} was taken as the text "5", and {"command": 5} stored as
    the command "5", which nobody ran."""
    response = post_json(alice_api, **sysbench_body(**{field: sent}))

    assert response.status_code == 400, response.json()
    assert response.json()["error"]["details"] == [
        {"path": f"$.{field}", "message": f"must be a JSON string, not {kind}"}
    ]
    assert Submission.objects.count() == 0


def test_unknown_multipart_field_is_refused(alice_api):
    response = alice_api.post(
        URL, data={"tool": "pgbench", "output": PGBENCH, "cores": "8"}, format="multipart"
    )

    assert response.status_code == 400
    assert "unknown field 'cores'" in response.json()["error"]["message"]


def test_endpoint_is_in_the_openapi_schema(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()

    operation = schema["paths"]["/api/v1/imports/"]["post"]
    assert set(operation["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert {"201", "200", "400", "401", "409", "413"} <= set(operation["responses"])


def test_a_benchmark_missing_from_the_database_is_a_503_naming_it(alice_api):
    """Deleted from a shell, or the web process started before migrate."""
    Benchmark.objects.filter(name="sysbench").delete()

    response = post_json(alice_api, **sysbench_body())

    assert response.status_code == 503, response.content[:500]
    assert response["Retry-After"] == "300"
    error = response.json()["error"]
    assert error["code"] == "catalog_incomplete"
    assert "lacks benchmark sysbench" in error["message"]
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("field", "value", "path", "fragment"),
    [
        ("hardware.cores", "²", "$.environment.hardware.cores", "is not of type 'integer'"),
        ("hardware.cores", "9" * 5000, "$.environment.hardware.cores", "5000 digits"),
        ("parameters.fillfactor", "9" * 5000, "$.runs[0].parameters.fillfactor", "5000 digits"),
    ],
)
def test_a_multipart_number_python_cannot_read_is_a_400_naming_the_field(
    alice_api, field, value, path, fragment
):
    """A "²" passed str.isdigit() and 5,000 digits passed \\d+, and int() of
    either raised: a 500."""
    machine = {
        f"{section}.{key}": text for section in MACHINE for key, text in MACHINE[section].items()
    }
    pgbench = SimpleUploadedFile("r.txt", PGBENCH.encode())
    response = alice_api.post(
        URL, data=machine | {"tool": "pgbench", "file": pgbench, field: value}, format="multipart"
    )

    assert response.status_code == 400, response.content
    details = response.json()["error"]["details"]
    assert any(d["path"] == path and fragment in d["message"] for d in details), details
    assert Submission.objects.count() == 0


def test_an_output_the_parser_cannot_read_is_a_400_not_a_500(alice_api):
    """json.loads of a deeply nested "summary.json" raised RecursionError."""
    response = post_json(alice_api, tool="benchbase", output="[" * 100_000, environment=MACHINE)

    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_tool_output"
    assert "nested too deeply to read" in error["message"]
    assert Submission.objects.count() == 0


def test_sysbench_dataset_sizes_from_the_command_line_are_two_comparability_keys(alice_api):
    sizes = (10000, 2500000)
    for size in sizes:
        command = (
            "sysbench oltp_read_write --db-driver=mysql --mysql-user=alice --tables=4 "
            f"--table-size={size} --threads=4 --time=5 run"
        )
        response = post_json(alice_api, **sysbench_body(command=command, parameters={}))
        assert response.status_code == 201, response.json()

    runs = Run.objects.order_by("parameters__table_size")
    assert [run.parameters["table_size"] for run in runs] == list(sizes)
    assert runs[0].parameters == {
        "test": "oltp_read_write", "tables": 4, "table_size": 10000, "time": 5,
    }  # fmt: skip
    assert runs[0].fingerprint != runs[1].fingerprint


def test_a_per_transaction_pgbench_log_is_refused_naming_the_output(alice_api):
    log = (FIXTURES / "pgbench15-per-transaction.log").read_text()
    response = post_json(
        alice_api, tool="pgbench-log", output=log, environment=MACHINE | {
            "database": {"engine": "postgresql", "version_string": "15.20"}},
    )  # fmt: skip

    assert response.status_code == 400
    (detail,) = response.json()["error"]["details"]
    assert detail["path"] == "$.output"
    assert "per-transaction log" in detail["message"]
    assert Submission.objects.count() == 0
