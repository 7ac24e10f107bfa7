"""/benchmarks/<name>/history/ and /api/v1/history/<name>/: one metric at one
point over a server's versions, in version order, from the one aggregation
(the same numbers as /api/v1/comparisons/ with x=version), each version judged
against the one before it."""

from __future__ import annotations

import html
import json
import re

import pytest
from benchhub_contract.verdicts import RunValues, verdict

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, sweep_document

API = "/api/v1/history/select-update/"
PAGE = "/benchmarks/select-update/history/"
EPYC = "AMD EPYC 7763"


def store(user, values: dict, version: str, cpu: str = EPYC, filesystem: str = "ext4") -> None:
    document = sweep_document(
        values,
        database={
            "version_string": f"PostgreSQL {version} on x86_64-pc-linux-gnu",
            "config_profile": "default",
        },
        hardware={**example_document()["environment"]["hardware"], "cpu": cpu},
        storage={"filesystem": filesystem},
    )
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


# Peak throughput at 8 clients per run, per release; text order would put
# 15.10 before 15.2.
RUNS = {
    "15.10": [1311.5, 1290.0, 1302.25, 1275.0, 1320.75],
    "14.11": [1012.0, 998.5, 1021.0],
    "16.1": [1402.0, 1388.5, 1415.0, 1397.25],
    "15.2": [1105.0, 1090.5, 1111.0, 1099.0, 1120.5, 1087.0],
}


@pytest.fixture
def releases(bob, alice):
    for version, peaks in RUNS.items():
        for index, peak in enumerate(peaks):
            user = bob if index % 2 else alice
            store(user, {1: round(peak * 0.23, 2), 8: peak, 32: round(peak * 0.91, 2)}, version)


def test_versions_come_in_version_order_with_the_comparisons_numbers(client, releases):
    query = {"engine": "postgresql", "param.clients": "8"}

    history = client.get(API, query).json()
    comparison = client.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "version", **query},
    ).json()

    assert [v["version"] for v in history["versions"]] == ["14.11", "15.2", "15.10", "16.1"]
    (series,) = comparison["series"]
    assert [
        (v["version"], v["median"], v["n"], v["min"], v["max"]) for v in history["versions"]
    ] == [(p["x"], p["value"], p["n"], p["min"], p["max"]) for p in series["points"]]
    by_version = {v["version"]: v for v in history["versions"]}
    assert by_version["15.2"]["median"] == 1102.0  # (1099 + 1105) / 2: six runs
    assert (by_version["15.2"]["q1"], by_version["15.2"]["q3"]) == (1092.625, 1109.5)
    assert by_version["14.11"]["machines"] == 1


def test_each_version_is_judged_against_the_one_before_it(client, releases):
    data = client.get(API, {"engine": "postgresql", "param.clients": "8"}).json()

    first, *rest = data["versions"]
    assert first["against_previous"] is None and first["interval"] is None
    expected = verdict(
        [RunValues(v) for v in RUNS["15.10"]],
        [RunValues(v) for v in RUNS["15.2"]],
        direction="higher",
    )
    step = rest[1]
    assert step["version"] == "15.10"
    assert step["against_previous"]["verdict"] == expected.verdict == "better"
    assert step["against_previous"]["p_value"] == expected.p_value
    assert step["interval"] == pytest.approx(
        [1102.0 * expected.ratio_low, 1102.0 * expected.ratio_high]
    )
    assert [v["against_previous"]["verdict"] for v in rest] == ["better", "better", "better"]


def test_an_open_point_is_set_to_its_most_measured_value_and_said(client, releases, bob):
    # two runs that stopped at 8 clients: 8 is now the most measured point
    store(bob, {8: 1380.0}, "16.1")
    store(bob, {8: 1391.5, 1: 300.0}, "16.1")

    data = client.get(API, {"engine": "postgresql"}).json()

    assert data["filters"]["param.clients"] == ["8"]
    assert data["chosen"]["param.clients"][0] == "8"
    assert sorted(data["chosen"]["param.clients"][1:]) == ["1", "32"]
    assert any("shown at param.clients=8, the most measured value" in n for n in data["notes"])
    assert data["versions"][-1]["n"] == 6


def test_by_major_version_pools_the_releases_of_a_major(client, releases):
    data = client.get(
        API, {"engine": "postgresql", "param.clients": "8", "by": "version_major"}
    ).json()

    assert [(v["version"], v["n"]) for v in data["versions"]] == [
        ("14", 3),
        ("15", 11),
        ("16", 4),
    ]


def test_machines_like_mine_filter_and_a_change_of_machine_is_flagged(client, releases, alice):
    store(alice, {8: 5300.0}, "16.1", cpu="AMD Ryzen 9 7950X", filesystem="xfs")
    store(alice, {8: 5210.0}, "16.1", cpu="AMD Ryzen 9 7950X", filesystem="xfs")

    mixed = client.get(API, {"engine": "postgresql", "param.clients": "8"}).json()
    mine = client.get(
        API, {"engine": "postgresql", "param.clients": "8", "filesystem": "ext4"}
    ).json()

    assert mixed["machines_differ"] is True
    assert mixed["versions"][-1]["machines"] == 2
    assert mine["machines_differ"] is False
    assert mine["versions"][-1]["median"] == 1399.625


@pytest.mark.parametrize(
    ("query", "key", "message"),
    [
        ({}, "engine", "one engine: a history is over one server's versions"),
        ({"engine": ["postgresql", "mariadb"]}, "engine", "(given 2)"),
        ({"engine": "redis"}, "engine", "unknown engine 'redis'"),
        ({"engine": "postgresql", "by": "kernel"}, "by", "'kernel': one of version"),
        ({"engine": "postgresql", "metric": "speed"}, "metric", "no metric 'speed'"),
        ({"engine": "postgresql", "cores": "many"}, "cores", ""),
        ({"engine": "postgresql", "scale": "logarithmic"}, "scale", "one of linear, log"),
    ],
)
def test_bad_input_is_a_400_naming_the_parameter(client, releases, query, key, message):
    response = client.get(API, query)

    assert response.status_code == 400
    details = {d["path"]: d["message"] for d in response.json()["error"]["details"]}
    assert message in details[f"$.{key}"]


def test_an_unknown_benchmark_is_a_404(client, db):
    response = client.get("/api/v1/history/no-such-bench/", {"engine": "postgresql"})

    assert response.status_code == 404
    assert "no benchmark 'no-such-bench'" in response.json()["error"]["message"]


def test_the_page_draws_the_apis_numbers_and_tabulates_them(client, releases):
    query = {"engine": "postgresql", "param.clients": "8"}

    page = client.get(PAGE, query).content.decode()
    api = client.get(API, query).json()

    embedded = re.search(r'id="history-data" type="application/json">(.*?)</script>', page)
    assert json.loads(embedded.group(1)) == api
    table = html.unescape(page[page.index('id="history-table"') :])
    rows = re.findall(r'<th scope="row">([^<]*)</th>', table)
    assert rows == ["14.11", "15.2", "15.10", "16.1"]
    assert "▲ better" in table
    assert client.get(PAGE, {**query, "format": "json"}).json() == api


def test_the_page_without_an_engine_offers_the_engines_with_runs(client, releases):
    page = client.get(PAGE).content.decode()

    choose = page[page.index('id="history-choose"') :]
    choose = choose[: choose.index("</p>")]
    assert '<a href="?engine=postgresql">postgresql</a>' in choose
    assert "mariadb" not in choose


def test_the_page_names_bad_input_beside_the_form(client, releases):
    response = client.get(PAGE, {"engine": "postgresql", "by": "kernel"})

    assert response.status_code == 400
    errors = html.unescape(response.content.decode())
    assert "<strong>by</strong>: 'kernel': one of version, version_major" in errors


def test_the_benchmark_the_changes_and_the_leaderboard_pages_lead_to_it(client, releases):
    benchmark = client.get("/benchmarks/select-update/").content.decode()
    changes = client.get("/changes/", {"engine": "postgresql", "from": "15", "to": "16"})
    board = client.get("/benchmarks/select-update/leaderboard/", {"engine": "postgresql"})

    assert f'href="{PAGE}"' in benchmark
    assert (
        f'href="{PAGE}?engine=postgresql&amp;metric=throughput&amp;by=version_major"'
        in changes.content.decode()
    )
    assert f'href="{PAGE}?metric=throughput&amp;engine=postgresql"' in board.content.decode()


def test_a_version_where_the_workload_or_the_agent_changed_is_marked(client, bob):
    # 15.10 measured by a newer agent, 16.1 with version 2 of the benchmark as well.
    made = {"14.11": ("0.1.0", "1"), "15.2": ("0.1.0", "1"), "15.10": ("0.2.0", "1"),
            "16.1": ("0.2.0", "2")}  # fmt: skip
    for version, (agent, workload) in made.items():
        for peak in RUNS[version][:3]:
            document = sweep_document(
                {8: peak},
                database={"version_string": f"PostgreSQL {version}", "config_profile": "default"},
            )
            document["source"]["tool_version"] = agent
            document["runs"][0]["benchmark_version"] = workload
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    history = client.get(API, {"engine": "postgresql", "param.clients": "8"}).json()

    changed = {v["version"]: v["changed"] for v in history["versions"]}
    assert changed == {
        "14.11": "",
        "15.2": "",
        "15.10": "agent 0.1.0 → 0.2.0",
        "16.1": "benchmark version 1 → 2",
    }
    assert {v["version"]: v["agent_versions"] for v in history["versions"]}["16.1"] == ["0.2.0"]
    assert any("changed at 15.10, 16.1 (marked ▲)" in note for note in history["notes"])
    page = html.unescape(client.get(PAGE, {"engine": "postgresql"}).content.decode())
    assert "▲ agent 0.1.0 → 0.2.0" in page
