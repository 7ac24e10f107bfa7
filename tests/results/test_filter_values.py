"""What a filter value means, the same in the API, the CSV, comparisons and
pages: text matches whatever its case; a closed vocabulary refuses an
unknown value naming the known ones; a free value that matches nothing is
an empty list, and the page suggests the nearest known values."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import EMPTY_ABLE, small_document, without

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


@pytest.mark.parametrize(("name", "section", "field", "other"), EMPTY_ABLE)
@pytest.mark.parametrize("spelt", ["(none)", "(NONE)"])
def test_none_as_the_pages_show_an_empty_value_filters_on_it_everywhere(
    anonymous_api, client, bob, name, section, field, other, spelt
):
    """Only mount_options=(none) found the runs that gave none: a series or
    a facet the pages label "(none)" could not be fixed as a filter, which
    matched nothing (or, by substring or prefix, everything)."""
    for environment in (without(section, field), without(section, field, **{field: other})):
        document = small_document(**environment)
        document["runs"][0]["note"] = "empty" if field not in environment[section] else ""
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    query = {name: spelt}

    runs = anonymous_api.get("/api/v1/runs/", query).json()["results"]
    assert [run["note"] for run in runs] == ["empty"]
    assert count(anonymous_api, f"/api/v1/measurements/?{urlencode(query)}") == 2
    csv = anonymous_api.get("/api/v1/measurements/export.csv", query)
    assert csv.status_code == 200
    assert len(b"".join(csv.streaming_content).decode().splitlines()) == 1 + 2
    comparison = anonymous_api.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "param.clients", **query},
    ).json()
    assert [point["n"] for point in comparison["series"][0]["points"]] == [1, 1]
    page = client.get("/results/", query)
    assert page.status_code == 200
    assert '<h2 id="results-count" tabindex="-1">1 run<' in page.content.decode()


def test_none_finds_the_empty_text_of_a_parameter(anonymous_api, bob):
    for mode in ("", "fast"):
        document = small_document()
        document["runs"][0]["parameters"]["locking"] = mode
        for measurement in document["runs"][0]["measurements"]:
            measurement["parameters"]["mode"] = mode
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    assert count(anonymous_api, "/api/v1/measurements/?param.mode=(none)") == 2
    assert count(anonymous_api, "/api/v1/runs/?run_param.locking=(none)") == 1
    assert count(anonymous_api, "/api/v1/measurements/?param.mode=fast") == 2


NEVER_EMPTY = {
    name: f"(none), as the pages show an empty value, names no run here: {name} is never "
    f"empty (a run that gave none is left out of a comparison by {name}); give one of "
    "its values"
    for name in ("cores", "threads")
} | {
    name: f"(none), as the pages show an empty value, names no run here: {name} is never "
    "empty, every run has one; give one of its values"
    for name in ("engine", "protocol", "submission")
}
# A bound is no value of a column: "ram_bytes_min is never empty (a run
# that gave none is left out of a comparison by ram_bytes_min)" read oddly.
NO_BOUND = {
    f"ram_bytes_{end}": "(none), as the pages show an empty value, is no bound: "
    f"ram_bytes_{end} takes a whole number and keeps the runs whose ram_bytes is {keeps} "
    "that (a run that gave none is within no bound); leave it out to keep every run"
    for end, keeps in (("min", "at least"), ("max", "at most"))
}


@pytest.mark.parametrize(("name", "expected"), [*NEVER_EMPTY.items(), *NO_BOUND.items()])
def test_none_where_a_value_is_never_empty_is_a_400_saying_so(
    anonymous_api, results, name, expected
):
    """Not "Enter a whole number." nor "unknown engine '(none)'": the value
    is the pages' empty one, which these never have (a run without cores is
    left out of a comparison by cores, and reference=(none) is a 400 there),
    said as each filter is read: every run has an engine, and a RAM bound
    is a number."""
    for url in ("/api/v1/runs/", "/api/v1/measurements/", "/api/v1/measurements/export.csv"):
        response = anonymous_api.get(url, {name: "(none)"})
        assert response.status_code == 400, (url, response.content)
        assert response.json()["error"]["message"] == f"{name}: {expected}", url
    comparison = anonymous_api.get(
        "/api/v1/comparisons/",
        {
            "benchmark": "select-update",
            "metric": "throughput",
            "x": "param.clients",
            name: "(none)",
        },
    )
    assert comparison.status_code == 400
    assert comparison.json()["error"]["message"] == f"{name}: {expected}"


def test_none_is_the_empty_architecture_not_an_unknown_one(anonymous_api, results):
    # architecture is a closed vocabulary, and empty outside Firebird.
    assert count(anonymous_api, "/api/v1/runs/?architecture=(none)") == 3
    assert count(anonymous_api, "/api/v1/runs/?architecture=superserver") == 0


def none_answers(user) -> dict:
    """Runs with an empty filesystem, kernel, CPU and text parameters beside
    runs with them, and what "(none)" filters find among them: run and
    measurement counts, and comparisons' series and counts."""
    from django.contrib.auth.models import AnonymousUser

    from benchhub.comparisons.apis import comparison_as_data
    from benchhub.comparisons.query import comparison_query_parse
    from benchhub.comparisons.selectors import comparison_build
    from benchhub.results.filters import MeasurementFilter, RunFilter
    from benchhub.results.models import Measurement, Run

    for empty in (True, False, False):
        storage = without("storage", "filesystem", **({} if empty else {"filesystem": "xfs"}))
        os_ = without("os", "kernel", **({} if empty else {"kernel": "6.12"}))
        hardware = without("hardware", "cpu", **({} if empty else {"cpu": "AMD EPYC 7763"}))
        document = small_document(storage=storage["storage"], os=os_["os"], **hardware)
        document["runs"][0]["parameters"]["locking"] = "" if empty else "for_update"
        for measurement in document["runs"][0]["measurements"]:
            measurement["parameters"]["mode"] = "" if empty else "fast"
        submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)
    answers: dict = {}
    for query in ("filesystem", "kernel", "cpu_model", "cpu_vendor", "run_param.locking"):
        found = RunFilter(data={query: "(none)"}, queryset=Run.objects.all()).qs
        answers[query] = found.count()
    found = MeasurementFilter(data={"param.mode": "(NONE)"}, queryset=Measurement.objects.all())
    answers["param.mode"] = found.qs.count()
    for given in (
        {"series": "filesystem", "kernel": "(none)"},
        {"series": "param.mode", "reference": "(none)", "cpu_model": "(none)"},
        {"series": "kernel", "reference": "(none)", "run_param.locking": "(none)"},
    ):
        params = {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}
        query = comparison_query_parse({k: [v] for k, v in (params | given).items()})
        body = comparison_as_data(comparison_build(user=AnonymousUser(), query=query))
        answers[str(given)] = [
            (series["label"], [(point["x"], point["n"]) for point in series["points"]])
            for series in body["series"]
        ]
    return answers


EMBEDDED_NONE_ANSWERS = """
import json
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from tests.results.test_filter_values import none_answers

call_command("migrate", verbosity=0)
print(json.dumps(none_answers(get_user_model().objects.create_user(username="embedded"))))
"""


@pytest.mark.slow
def test_none_filters_give_the_same_answers_on_the_embedded_default(bob, tmp_path):
    """PostgreSQL aggregates a comparison in the database, SQLite in Python,
    and each reads JSON its own way: "(none)" finds the same runs on both."""
    from tests.baselines.embedded import run_embedded

    on_postgresql = json.loads(json.dumps(none_answers(bob)))

    done = run_embedded(tmp_path, EMBEDDED_NONE_ANSWERS)

    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == on_postgresql
    assert on_postgresql["filesystem"] == on_postgresql["run_param.locking"] == 1
    assert on_postgresql["param.mode"] == 2
    assert on_postgresql[str({"series": "filesystem", "kernel": "(none)"})] == [
        ["", [[1, 1], [20, 1]]]
    ]


def test_a_refused_value_leaves_nothing_behind_for_the_next_request(anonymous_api, results):
    """Each filter set class builds its form class once (filters.py): a request's
    errors and values stay its own, and runs and measurements keep their own fields."""
    assert anonymous_api.get("/api/v1/runs/?cores=many").status_code == 400
    assert count(anonymous_api, "/api/v1/runs/?cores=64") == 2
    assert anonymous_api.get("/api/v1/measurements/?run=first").status_code == 400
    assert anonymous_api.get("/api/v1/runs/?run=1").status_code == 400  # not a run filter
    assert count(anonymous_api, "/api/v1/measurements/?cores=64") > 0
    assert count(anonymous_api, "/api/v1/runs/?cores=64") == 2
