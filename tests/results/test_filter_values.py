"""What a filter value means, the same in the API, the CSV, comparisons and
pages: text matches whatever its case; a closed vocabulary refuses an
unknown value naming the known ones; a free value that matches nothing is
an empty list, and the page suggests the nearest known values."""

from __future__ import annotations

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import small_document

EPYC = {"cpu": "AMD EPYC 7763 64-Core Processor", "cores": 64}


@pytest.fixture
def results(bob):
    for hardware in (EPYC, EPYC, {"cpu": "Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz"}):
        document = small_document(hardware=hardware)
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)


def count(api, url: str) -> int:
    response = api.get(url)
    assert response.status_code == 200, response.content
    return len(response.json()["results"])


@pytest.mark.parametrize(
    "query",
    [
        "engine=PostgreSQL",
        "engine=POSTGRESQL&version_major=15",
        "filesystem=EXT4",
        "storage_kind=NVMe",
        "protocol=Unix_Socket",
        "os_distribution=Debian GNU/Linux",
        "os_family=Linux",
        "benchmark=Select-Update",
        "driver=PSYCOPG",
        "config_profile=DEFAULT",
        "load_engine=BenchHub-Agent",
    ],
)
def test_text_values_match_whatever_their_case(anonymous_api, results, query):
    assert count(anonymous_api, f"/api/v1/runs/?{query}") == 3
    assert count(anonymous_api, f"/api/v1/measurements/?{query}") == 6


def test_the_cpu_model_matches_part_of_the_name_in_any_case(anonymous_api, results):
    assert count(anonymous_api, "/api/v1/runs/?cpu_model=epyc") == 2
    assert count(anonymous_api, "/api/v1/runs/?cpu_model=GOLD 6248r") == 1


@pytest.mark.parametrize(
    ("query", "name", "known"),
    [
        ("engine=postgres", "engine", "postgresql, mysql, mariadb, firebird"),
        ("protocol=tcp", "protocol", "unix_socket, tcp_loopback, tcp_remote"),
        ("storage_kind=flash", "storage_kind", "hdd, ssd, nvme, virtual, unknown"),
        ("benchmark=select_update", "benchmark", "select-update, tpcb"),
        ("metric=tps&benchmark=select-update", "metric", "throughput, latency_mean"),
    ],
)
def test_an_unknown_value_of_a_closed_vocabulary_is_a_400_naming_the_known_ones(
    anonymous_api, results, query, name, known
):
    for url in (
        f"/api/v1/measurements/?{query}",
        f"/api/v1/measurements/export.csv?{query}",
    ):
        response = anonymous_api.get(url)

        assert response.status_code == 400, url
        error = response.json()["error"]
        assert error["details"][0]["path"] == f"$.{name}"
        assert "known values:" in error["message"] and known in error["message"]


def test_the_metric_is_checked_against_its_benchmark(anonymous_api, results):
    # "tps" is a tpcb metric, not one of select-update's
    assert count(anonymous_api, "/api/v1/measurements/?metric=TPS") == 0
    response = anonymous_api.get("/api/v1/measurements/?metric=tps&benchmark=Select-Update")
    assert response.status_code == 400
    assert "unknown metric of select-update 'tps'" in response.json()["error"]["message"]
    assert count(anonymous_api, "/api/v1/measurements/?metric=Throughput") == 6


def test_a_free_value_that_matches_nothing_is_an_empty_list(anonymous_api, results):
    assert count(anonymous_api, "/api/v1/runs/?cpu_model=epic") == 0
    assert count(anonymous_api, "/api/v1/runs/?filesystem=reiser5") == 0


def test_comparisons_read_filter_values_the_same_way(anonymous_api, results):
    query = "benchmark=Select-Update&metric=THROUGHPUT&x=param.clients&engine=PostgreSQL"

    answer = anonymous_api.get(f"/api/v1/comparisons/?{query}")

    assert answer.status_code == 200, answer.content
    assert answer.json()["series"][0]["points"][0]["n"] == 3
    refused = anonymous_api.get("/api/v1/comparisons/?" + query.replace("PostgreSQL", "postgres"))
    assert refused.status_code == 400
    assert "known values: postgresql" in refused.json()["error"]["message"]
    unknown = anonymous_api.get("/api/v1/comparisons/?benchmark=select_update&metric=x&x=engine")
    assert "known values: select-update" in unknown.json()["error"]["message"]


def test_the_results_browser_suggests_the_nearest_known_values(client, results):
    page = client.get("/results/?cpu_model=epic").content.decode()

    assert "No run matches" in page
    assert 'id="results-suggestions"' in page
    assert 'href="/results/?cpu_model=EPYC+7763"' in page


def test_the_results_browser_names_the_known_values_of_a_closed_vocabulary(client, results):
    response = client.get("/results/?engine=postgres")

    assert response.status_code == 400
    assert "known values: postgresql" in response.content.decode()
    assert client.get("/results/?engine=PostgreSQL&filesystem=EXT4").status_code == 200


def test_the_compare_page_reads_the_benchmark_in_any_case(client, results):
    response = client.get("/compare/?benchmark=Select-Update&metric=Throughput&x=param.clients")

    assert response.status_code == 302
    assert response.url == "/compare/?benchmark=select-update&metric=throughput&x=param.clients"


# --- spellings a moderator's alias rule maps away ---------------------------------

OPENZFS = {
    "kind": "ssd",
    "device_model": "Samsung 870",
    "filesystem": "OpenZFS",
    "mount_options": "rw,xattr",
    "io_scheduler": "none",
}
XEON_SPELT_TOGETHER = {"cpu": "Intel(R) Xeon(R) CPU E5-2680v4 @ 2.40GHz", "cores": 14}


@pytest.fixture
def merged(bob):
    """Two runs on OpenZFS and two on a Xeon spelt "E5-2680v4", then a
    moderator merges both spellings into the canonical ones and the stored
    rows are rewritten (the alias task, run here in the test)."""
    from benchhub.accounts.roles import role_grant
    from benchhub.moderation.services import alias_rule_add, alias_rules_apply
    from benchhub.results.models import Hardware, Storage

    moderator = type(bob).objects.create_user(username="maud")
    role_grant(user=moderator, role="moderator")
    for _ in range(2):
        for section in ({"storage": OPENZFS}, {"hardware": XEON_SPELT_TOGETHER}):
            document = small_document(**section)
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    filesystem = Storage.objects.exclude(filesystem="ext4").get().filesystem
    cpu = Hardware.objects.get(cores=14).cpu_model
    assert (filesystem, cpu) == ("openzfs", "Xeon E5-2680v4")  # as normalized, before the rules
    for dimension, field, source, target in (
        ("storage", "filesystem", filesystem, "zfs"),
        ("hardware", "cpu_model", cpu, "Xeon E5-2680 v4"),
    ):
        alias_rule_add(
            actor=moderator, dimension=dimension, field=field, from_value=source, to_value=target
        )
        while alias_rules_apply():  # the task's batches, one after another
            pass
    assert set(Storage.objects.values_list("filesystem", flat=True)) == {"ext4", "zfs"}


@pytest.mark.parametrize(
    "query",
    [
        "filesystem=openzfs",
        "filesystem=OpenZFS",
        "filesystem=zfs",
        "cpu_model=Xeon E5-2680v4",
        "cpu_model=xeon e5-2680V4",
        "cpu_model=E5-2680v4",
        "cpu_model=E5-2680 v4",
    ],
)
def test_a_spelling_an_alias_rule_maps_away_finds_the_canonical_values_results(
    anonymous_api, client, merged, query
):
    assert count(anonymous_api, f"/api/v1/runs/?{query}") == 2
    assert count(anonymous_api, f"/api/v1/measurements/?{query}") == 4
    csv = anonymous_api.get(f"/api/v1/measurements/export.csv?{query}")
    assert csv.status_code == 200
    assert len(b"".join(csv.streaming_content).decode().strip().splitlines()) == 1 + 4
    page = client.get(f"/results/?{query}")
    assert page.status_code == 200
    assert "2 runs" in page.content.decode()


def test_an_alias_spelling_does_not_widen_other_filters(anonymous_api, merged):
    assert count(anonymous_api, "/api/v1/runs/?filesystem=openzfs&cpu_model=E5-2680v4") == 0
    assert count(anonymous_api, "/api/v1/runs/?filesystem=btrfs") == 0


def test_the_dimension_page_of_an_alias_spelling_leads_to_the_canonical_one(client, merged):
    filesystem = client.get("/filesystems/OpenZFS/")
    assert filesystem.status_code == 301
    assert filesystem.url == "/filesystems/zfs/"
    cpu = client.get("/cpus/Xeon E5-2680v4/")
    assert cpu.status_code == 301
    assert cpu.url == "/cpus/Xeon%20E5-2680%20v4/"
    assert client.get(cpu.url).status_code == 200
