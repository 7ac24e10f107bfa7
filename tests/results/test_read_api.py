import csv
import io

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, small_document

MYSQL = {
    "version_string": "10.11.19-MariaDB-0+deb12u1",
    "settings": {"innodb_flush_log_at_trx_commit": "1"},
}
ZFS = {"filesystem": "zfs", "mount_options": ["noatime", "sync"], "io_scheduler": "bfq"}
TCP = {"protocol": "tcp_loopback", "driver": "PyMySQL", "load_engine": "benchhub-agent"}


def store(user, document, status=Submission.Status.APPROVED) -> Submission:
    return submission_create(submitter=user, document=document, status=status).submission


@pytest.fixture
def published(bob):
    """Two approved submissions by bob: PostgreSQL on ext4 over a unix
    socket, and MariaDB on ZFS over TCP."""
    postgres = store(bob, small_document())
    mariadb = store(bob, small_document(database=MYSQL, storage=ZFS, client=TCP))
    return postgres, mariadb


def uuids(response) -> set[str]:
    return {row["submission"] for row in response.json()["results"]}


def test_anonymous_reads_see_approved_results_only(anonymous_api, published, alice):
    store(alice, small_document(), status=Submission.Status.PENDING)

    submissions = anonymous_api.get("/api/v1/submissions/").json()["results"]
    measurements = anonymous_api.get("/api/v1/measurements/")

    assert {s["uuid"] for s in submissions} == {str(s.uuid) for s in published}
    assert uuids(measurements) == {str(s.uuid) for s in published}


def test_submitter_also_sees_own_pending_submission(alice_api, alice, published):
    pending = store(alice, small_document(), status=Submission.Status.PENDING)

    response = alice_api.get("/api/v1/measurements/")

    assert uuids(response) == {str(s.uuid) for s in (*published, pending)}
    detail = alice_api.get(f"/api/v1/submissions/{pending.uuid}/")
    assert detail.status_code == 200
    assert detail.json()["status"] == "pending"


def test_other_users_pending_submission_is_hidden(bob_api, alice):
    pending = store(alice, small_document(), status=Submission.Status.PENDING)
    run = pending.runs.get()

    assert bob_api.get(f"/api/v1/submissions/{pending.uuid}/").status_code == 404
    assert bob_api.get(f"/api/v1/runs/{run.pk}/").status_code == 404
    assert bob_api.get("/api/v1/measurements/").json()["results"] == []
    # Nor does the machine it ran on show up among the dimensions.
    assert bob_api.get("/api/v1/hardware/").json()["results"] == []


def test_rejected_submission_is_hidden_from_the_public(anonymous_api, bob):
    rejected = store(bob, small_document(), status=Submission.Status.REJECTED)

    assert anonymous_api.get(f"/api/v1/submissions/{rejected.uuid}/").status_code == 404


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("filesystem=zfs", "mariadb"),
        ("filesystem=ZFS", "mariadb"),
        ("filesystem=ext4", "postgres"),
        ("engine=mariadb&version=10.11.19", "mariadb"),
        ("engine=postgresql&version_major=15", "postgres"),
        ("version_min=15&version_max=15.99", "postgres"),
        ("protocol=tcp_loopback", "mariadb"),
        ("protocol=unix_socket", "postgres"),
        ("mount_option=sync", "mariadb"),
        ("mount_option=noatime", "both"),
        ("mount_options=sync,noatime", "mariadb"),
        ("io_scheduler=[bfq] mq-deadline", "mariadb"),
        ("io_scheduler=none", "postgres"),
        ("cpu_vendor=amd&cores=8", "both"),
        ("driver=PyMySQL", "mariadb"),
        ("os_distribution=debian", "both"),
        ("storage_kind=nvme", "postgres"),
        ("run_param.locking=for_update", "both"),
        ("run_param.transactions=10000", "both"),
        ("engine=firebird", "none"),
    ],
)
def test_measurements_filter_by_dimension(anonymous_api, published, query, expected):
    postgres, mariadb = published
    wanted = {
        "postgres": {str(postgres.uuid)},
        "mariadb": {str(mariadb.uuid)},
        "both": {str(postgres.uuid), str(mariadb.uuid)},
        "none": set(),
    }[expected]

    response = anonymous_api.get(f"/api/v1/measurements/?{query}")

    assert response.status_code == 200, response.json()
    assert uuids(response) == wanted


def test_measurements_filter_by_point_parameter(anonymous_api, published):
    response = anonymous_api.get("/api/v1/measurements/?param.clients=20&engine=postgresql")

    rows = response.json()["results"]
    assert [(r["metric"], r["parameters"], r["value"]) for r in rows] == [
        ("throughput", {"clients": 20}, 1500.0)
    ]
    assert rows[0]["unit"] == "tx/s"
    assert rows[0]["direction"] == "higher"
    assert rows[0]["storage"]["filesystem"] == "ext4"


def test_unknown_filter_is_an_error_not_everything(anonymous_api, published):
    response = anonymous_api.get("/api/v1/measurements/?filesytem=zfs")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"] == [
        {"path": "$.filesytem", "message": "unknown filter; see /api/docs/ for the list"}
    ]


@pytest.mark.parametrize("name", ["cores", "threads", "ram_bytes_min"])
@pytest.mark.parametrize("path", ["/api/v1/measurements/", "/api/v1/runs/"])
def test_a_count_that_is_not_a_whole_number_is_a_400_naming_it(
    anonymous_api, published, path, name
):
    """cores=8.5 was cut to 8 (Django's integer lookup), and answered the
    8-core runs as if they were what was asked."""
    response = anonymous_api.get(path, {name: "8.5"})

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"path": f"$.{name}", "message": "Enter a whole number."}
    ]
    assert anonymous_api.get(path, {name: "8.0"}).status_code == 200  # still 8


@pytest.mark.parametrize("path", ["/api/v1/runs/", "/api/v1/measurements/"])
def test_a_filter_given_twice_is_a_400_not_its_last_value(anonymous_api, published, path):
    """engine=postgresql&engine=mariadb answered the MariaDB results alone."""
    response = anonymous_api.get(f"{path}?engine=postgresql&engine=mariadb")

    assert response.status_code == 400
    assert response.json()["error"]["details"] == [
        {"path": "$.engine", "message": "given more than once; this filter takes one value"}
    ]
    # a parameter may still be asked for twice (each value must hold)
    assert anonymous_api.get(f"{path}?run_param.rows=100&run_param.rows=100").status_code == 200


@pytest.mark.parametrize("query", [{"page_size": "5"}, {"cursor": "cD00NzU="}])
def test_the_csv_export_refuses_paging_by_name_rather_than_answer_every_row(
    anonymous_api, published, query
):
    response = anonymous_api.get("/api/v1/measurements/export.csv", query)

    assert response.status_code == 400
    name = next(iter(query))
    assert response.json()["error"]["details"][0]["path"] == f"$.{name}"
    assert "not paginated" in response.json()["error"]["message"]
    unpaged = anonymous_api.get("/api/v1/measurements/export.csv")
    assert unpaged.status_code == 200
    assert len(b"".join(unpaged.streaming_content).splitlines()) == 1 + 4


@pytest.mark.parametrize("path", ["/api/v1/measurements/", "/api/v1/measurements/export.csv"])
def test_a_run_id_that_is_not_a_whole_number_is_a_400_not_another_run(
    anonymous_api, published, path
):
    """run=<id>.7 was cut to <id> and answered that run's measurements."""
    run = published[0].runs.get()

    response = anonymous_api.get(path, {"run": f"{run.pk}.7"})

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["path"] == "$.run"
    whole = anonymous_api.get(path, {"run": f"{run.pk}"})
    assert whole.status_code == 200
    if whole.streaming:  # read to its end, as a server does: its cursor closes with it
        assert len(b"".join(whole.streaming_content).splitlines()) == 1 + 2


# "%" and "%s": the message is %-formatted by django-filter (a 500 before).
@pytest.mark.parametrize("value", ["1", "yes", "maybe", "✓", "%", "100%s"])
@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/api/v1/measurements/", {}),
        ("/api/v1/measurements/export.csv", {}),
        (
            "/api/v1/comparisons/",
            {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"},
        ),
    ],
)
def test_a_flag_that_is_neither_true_nor_false_is_a_400_naming_it(
    anonymous_api, published, path, query, value
):
    """approximate=1, yes or a typo filtered nothing: every measurement
    answered, the approximate ones and the others alike."""
    response = anonymous_api.get(path, query | {"approximate": value})

    assert response.status_code == 400, response.content
    details = response.json()["error"]["details"]
    assert {"path": "$.approximate", "message": f"{value!r}: true or false"} in details


def test_a_flag_filters_on_true_false_or_nothing(anonymous_api, published):
    def count(**query: str) -> int:
        return len(anonymous_api.get("/api/v1/measurements/", query).json()["results"])

    everything = count()
    assert count(approximate="false") == count(approximate="False")
    assert count(approximate="false") == everything  # small_document has no approximate value
    assert count(approximate="true") == count(approximate="TRUE") == 0
    # given empty: no filter to guess, a 400
    assert anonymous_api.get("/api/v1/measurements/", {"approximate": ""}).status_code == 400


def test_bad_filter_values_name_the_filter(anonymous_api, published):
    assert anonymous_api.get("/api/v1/measurements/?cores=many").status_code == 400
    response = anonymous_api.get("/api/v1/measurements/?version_min=latest")
    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["path"] == "$.version_min"


def test_cursor_pagination_walks_every_row_once(anonymous_api, bob):
    for _ in range(3):
        store(bob, small_document())
    seen = []
    url = "/api/v1/measurements/?page_size=4"
    while url:
        page = anonymous_api.get(url).json()
        seen.extend(row["id"] for row in page["results"])
        url = page["next"]
    assert len(seen) == 6
    assert len(set(seen)) == 6


def test_run_detail_has_what_run_like_needs(anonymous_api, published):
    run = published[0].runs.get()

    body = anonymous_api.get(f"/api/v1/runs/{run.pk}/").json()

    assert body["benchmark"] == "select-update"
    assert body["parameters"] == {"transactions": 10000, "rows": 100, "locking": "for_update"}
    assert body["fingerprint"] == run.fingerprint
    assert body["command"].startswith("benchhub-agent run select-update")
    assert {(m["metric"], m["parameters"]["clients"]) for m in body["measurements"]} == {
        ("throughput", 1),
        ("throughput", 20),
    }


def test_runs_with_the_same_key_share_a_fingerprint(bob):
    one = store(bob, small_document()).runs.get()
    other_machine = store(bob, small_document(storage=ZFS)).runs.get()
    other_engine = store(bob, small_document(database=MYSQL)).runs.get()

    assert one.fingerprint == other_machine.fingerprint
    assert one.fingerprint != other_engine.fingerprint


def test_csv_export_has_every_matching_row(anonymous_api, published):
    response = anonymous_api.get("/api/v1/measurements/export.csv?engine=mariadb")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 2
    assert {r["engine"] for r in rows} == {"mariadb"}
    assert {r["filesystem"] for r in rows} == {"zfs"}
    assert {r["mount_options"] for r in rows} == {"noatime,sync"}
    assert sorted(float(r["value"]) for r in rows) == [300.0, 1500.0]
    assert {r["parameters"] for r in rows} == {'{"clients": 1}', '{"clients": 20}'}


def test_csv_cells_never_become_spreadsheet_formulas(anonymous_api, bob):
    store(bob, small_document(storage={"device_model": '=HYPERLINK("http://x")'}))

    response = anonymous_api.get("/api/v1/measurements/export.csv")

    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {r["device_model"] for r in rows} == {'\'=HYPERLINK("http://x")'}


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/measurements/",
        "/api/v1/runs/",
        "/api/v1/submissions/",
        "/api/v1/hardware/",
        "/api/v1/servers/",
    ],
)
def test_list_endpoints_run_a_fixed_number_of_queries(
    anonymous_api, bob, django_assert_max_num_queries, url
):
    """No N+1: ten submissions cost the same queries as one."""
    store(bob, small_document())
    with django_assert_max_num_queries(1) as one:
        anonymous_api.get(url)
    for n in range(9):
        store(
            bob,
            small_document(
                hardware={"cpu": f"CPU {n}", "cores": 2},
                database={"version_string": f"PostgreSQL 15.{n}"},
            ),
        )
    with django_assert_max_num_queries(len(one.captured_queries)):
        response = anonymous_api.get(url)
    assert len(response.json()["results"]) >= 10


def test_dimension_lists_show_normalized_and_raw_values(anonymous_api, published):
    servers = anonymous_api.get("/api/v1/servers/?engine=mariadb").json()["results"]

    assert [(s["engine"], s["version"], s["version_major"], s["version_raw"]) for s in servers] == [
        ("mariadb", "10.11.19", "10.11", "10.11.19-MariaDB-0+deb12u1")
    ]
    storage = anonymous_api.get("/api/v1/storage/?filesystem=zfs").json()["results"]
    assert storage[0]["mount_options"] == ["noatime", "sync"]


def test_benchmark_catalog_lists_metrics(anonymous_api, db):
    catalog = anonymous_api.get("/api/v1/benchmarks/").json()

    select_update = next(b for b in catalog if b["name"] == "select-update")
    metrics = {m["name"]: (m["unit"], m["direction"]) for m in select_update["metrics"]}
    assert metrics["throughput"] == ("tx/s", "higher")
    assert metrics["latency_p99"] == ("ms", "lower")


def test_unknown_api_path_answers_json(anonymous_api, db):
    response = anonymous_api.get("/api/v1/nothing-here/")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_openapi_schema_and_offline_docs(anonymous_api, client, db):
    schema = anonymous_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/submissions/" in paths
    assert "post" in paths["/api/v1/submissions/"]
    listing = paths["/api/v1/measurements/"]["get"]
    filters = {p["name"] for p in listing["parameters"]}
    assert {"filesystem", "engine", "protocol", "cursor"} <= filters
    # param.<name> is a family of names, described in words rather than as one parameter
    assert "param.<name>" not in filters and "param.<name>" in listing["description"]

    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    page = docs.content.decode()
    # Served from our own static files, so it works with no internet.
    assert "/static/drf_spectacular_sidecar/" in page
    assert "cdn" not in page.lower()


def test_submission_document_schema_is_served(anonymous_api, db):
    schema = anonymous_api.get("/api/v1/schema/submission.json").json()

    assert schema["title"] == "BenchHub submission document, schema 1"
    assert schema["properties"]["schema"] == {
        "const": 1,
        "description": "Version of this document format.",
    }


def test_example_document_round_trips(alice_api):
    document = example_document()
    created = alice_api.post("/api/v1/submissions/", data=document, format="json").json()

    stored = alice_api.get(created["url"]).json()

    assert stored["document"] == document
    assert [r["benchmark"] for r in stored["runs"]] == ["select-update"]
