"""Server versions in one order everywhere (benchhub.results.normalization.
versions.version_order, and its stored text version_sort_text): numerically,
a pre-release before its release (16beta1 < 16beta2 < 16rc1 < 16.0 < 16.1),
whatever a server appends to its number read as nothing. The history, a
comparison over versions, the version bounds, the run list's sort and the
facets all use it."""

from __future__ import annotations

import importlib
import random
import re

import pytest
from django.apps import apps
from django.db import connection

from benchhub.results.models import DatabaseServer, Run, Submission
from benchhub.results.normalization.versions import version_order, version_sort_text
from benchhub.results.services import submission_create
from tests.factories import example_document, small_document, sweep_document

# In version order; spelled as servers print them, not as they are stored.
IN_ORDER = [
    "",
    "Firebird 2.5 RC 1",
    "WI-V3.0.10.33601",
    "3.0.11",
    "WI-V3.0.11.33703",
    "PostgreSQL 9.6.24",
    "5.5.5-10.6.9-MariaDB",
    "10.11.19",
    "11.4.2-MariaDB-log",
    "15.2",
    "PostgreSQL 15.10 (Debian 15.10-1.pgdg120+1)",
    "PostgreSQL 16devel",
    "16beta1",
    "PostgreSQL 16beta2 on x86_64-pc-linux-gnu",
    "16rc1",
    "16.0",
    "16.1",
    "16.10",
    "17beta3",
]


def test_versions_sort_in_release_order_from_any_order():
    for seed in range(5):
        shuffled = IN_ORDER[:]
        random.Random(seed).shuffle(shuffled)
        assert sorted(shuffled, key=version_order) == IN_ORDER


def test_the_stored_text_sorts_as_the_python_key_does():
    texts = [version_sort_text(version) for version in IN_ORDER]

    assert texts == sorted(texts)
    assert len(set(texts)) == len(texts)  # no two versions of the list share a key
    # every key of one width: a collation that skips punctuation orders them alike
    assert len({len(text) for text in texts if text}) == 1


def test_a_version_and_its_spellings_share_a_key():
    assert version_sort_text("11.4.2") == version_sort_text("11.4.2-MariaDB-1:11.4.2+maria~deb12")
    assert version_sort_text("10.11.19") == version_sort_text("5.5.5-10.11.19-MariaDB-log")
    assert version_sort_text("16beta2") == version_sort_text("PostgreSQL 16 Beta 2")
    assert version_sort_text("16") == version_sort_text("16.0")


def store(user, version_string: str, peak: float, *, engine: str = "") -> Run:
    database = {"version_string": version_string, "config_profile": "default"}
    if engine:
        database["engine"] = engine
    document = sweep_document(
        {1: round(peak / 4, 2), 8: peak},
        database=database,
        hardware=example_document()["environment"]["hardware"],
    )
    outcome = submission_create(
        submitter=user, document=document, status=Submission.Status.APPROVED
    )
    return outcome.submission.runs.get()


# Uploaded out of order; as text ("16.1" < "16beta2") or by the old key
# (16beta2 as 16.2) the pre-releases came after 16.1.
POSTGRES = {
    "PostgreSQL 16.1 on x86_64-pc-linux-gnu": [1402.0, 1391.5],
    "PostgreSQL 16beta2 on x86_64-pc-linux-gnu": [1290.0, 1301.5],
    "PostgreSQL 15.10 on x86_64-pc-linux-gnu": [1201.0, 1188.0],
    "PostgreSQL 16rc1 on x86_64-pc-linux-gnu": [1333.0],
    "PostgreSQL 16.0 on x86_64-pc-linux-gnu": [1350.5, 1362.0, 1344.0],
    "PostgreSQL 15.2 on x86_64-pc-linux-gnu": [1100.0],
}
POSTGRES_ORDER = ["15.2", "15.10", "16beta2", "16rc1", "16.0", "16.1"]


@pytest.fixture
def postgres_releases(bob):
    return {
        version: [store(bob, version, peak) for peak in peaks]
        for version, peaks in POSTGRES.items()
    }


def test_the_history_and_a_comparison_over_versions_are_in_version_order(client, postgres_releases):
    query = {"engine": "postgresql", "param.clients": "8"}

    history = client.get("/api/v1/history/select-update/", query).json()
    over_x = client.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "version", **query},
    ).json()
    as_series = client.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}
        | {"series": "version", "engine": "postgresql"},
    ).json()

    assert [step["version"] for step in history["versions"]] == POSTGRES_ORDER
    assert [point["x"] for point in over_x["series"][0]["points"]] == POSTGRES_ORDER
    assert [series["label"] for series in as_series["series"]] == POSTGRES_ORDER


def test_the_version_bounds_put_a_pre_release_before_its_release(client, postgres_releases):
    def versions(**bounds) -> list[str]:
        answer = client.get("/api/v1/runs/", {"engine": "postgresql", **bounds}).json()
        return sorted({run["server"]["version"] for run in answer["results"]}, key=version_order)

    assert versions(version_max="16") == ["15.2", "15.10", "16beta2", "16rc1", "16.0"]
    assert versions(version_min="16beta3") == ["16rc1", "16.0", "16.1"]
    assert versions(version_min="15.3", version_max="16.0.0") == [
        "15.10",
        "16beta2",
        "16rc1",
        "16.0",
    ]


def test_the_run_list_sorted_by_version_puts_the_newest_release_first(client, postgres_releases):
    page = client.get("/results/", {"engine": "postgresql", "sort": "version"}).content.decode()
    table = page[page.index('id="results-table"') :]

    shown = re.findall(r"postgresql (\d[^\s<]*)", table)

    assert list(dict.fromkeys(shown)) == POSTGRES_ORDER[::-1]


def test_mariadb_and_firebird_versions_sort_by_their_numbers(client, bob):
    for raw in ("11.4.2-MariaDB-log", "5.5.5-10.11.19-MariaDB", "10.6.9-MariaDB-1:10.6.9"):
        store(bob, raw, 500.0)

    answer = client.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "version"}
        | {"engine": "mariadb", "param.clients": "8"},
    ).json()

    assert [point["x"] for point in answer["series"][0]["points"]] == [
        "10.6.9",
        "10.11.19",
        "11.4.2",
    ]


def test_a_tie_in_the_version_facet_is_broken_in_version_order(client, bob):
    for raw in ("PostgreSQL 16.1", "PostgreSQL 16beta2", "PostgreSQL 16.0", "PostgreSQL 9.6.24"):
        submission_create(
            submitter=bob,
            document=small_document(database={"version_string": raw}),
            status=Submission.Status.APPROVED,
        )

    page = client.get("/results/").content.decode()
    block = page[page.index('id="facet-version"') :]
    block = block[: block.index("</details>")]

    shown = re.findall(r'<span class="facet-value">(.*?)</span>', block)

    assert shown == ["9.6.24", "16beta2", "16.0", "16.1"]


def test_stored_servers_get_the_new_key_and_the_next_upload_finds_their_row(bob):
    run = store(bob, "PostgreSQL 16beta2 on x86_64-pc-linux-gnu", 1290.0)
    server = run.server
    # The key and digest the former sort key gave it (16beta2 read as 16.2).
    old = "00016.00002"
    from benchhub.results.comparability import canonical_json, sha256_hex
    from benchhub.results.dimensions import server_fields

    values = server_fields({"version_string": server.version_raw, "config_profile": "default"})
    DatabaseServer.objects.filter(pk=server.pk).update(
        version_sort=old, digest=sha256_hex(canonical_json({**values, "version_sort": old}))
    )
    migration = importlib.import_module(
        "benchhub.results.migrations.0011_version_sort_with_prereleases"
    )

    with connection.schema_editor() as editor:
        migration.sort_keys_again(apps, editor)

    server.refresh_from_db()
    assert server.version_sort == version_sort_text("16beta2")
    again = store(bob, "PostgreSQL 16beta2 on x86_64-pc-linux-gnu", 1301.5)
    assert again.server_id == server.pk
    assert DatabaseServer.objects.filter(version="16beta2").count() == 1


def test_the_changes_form_offers_the_engines_majors_in_version_order(client, bob):
    for raw in ("PostgreSQL 16.1", "PostgreSQL 9.6.24", "PostgreSQL 10.23", "PostgreSQL 16beta2"):
        submission_create(
            submitter=bob,
            document=small_document(database={"version_string": raw}),
            status=Submission.Status.APPROVED,
        )
    submission_create(
        submitter=bob,
        document=small_document(database={"engine": "mysql", "version_string": "8.0.36"}),
        status=Submission.Status.APPROVED,
    )

    page = client.get("/changes/", {"engine": "PostgreSQL"}).content.decode()
    offered = re.findall(
        r'<option value="([^"]+)">', page[page.index('<datalist id="changes-versions">') :]
    )

    assert offered == ["9.6", "10", "16"]
    assert 'id="changes-from" name="from" value="" placeholder="16" list="changes-versions"' in page


def test_a_histories_agent_and_benchmark_versions_are_listed_in_version_order(client, bob):
    for agent, workload in (("0.10.0", "1.10"), ("0.9.2", "1.9"), ("0.10.0rc1", "1.10")):
        document = sweep_document(
            {8: 1402.0}, database={"version_string": "PostgreSQL 16.1", "config_profile": "x"}
        )
        document["source"]["tool_version"] = agent
        document["runs"][0]["benchmark_version"] = workload
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    history = client.get(
        "/api/v1/history/select-update/", {"engine": "postgresql", "param.clients": "8"}
    ).json()

    (step,) = history["versions"]
    assert step["agent_versions"] == ["0.9.2", "0.10.0rc1", "0.10.0"]
    assert step["benchmark_versions"] == ["1.9", "1.10"]
