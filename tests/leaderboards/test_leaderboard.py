"""A benchmark's leaderboard: one row per environment, each run once at its
best point (or the point the filters fix), the median of a row's runs,
n, % of the best and the verdict against the best; the API and the page
say the same numbers, checked here against an independent computation."""

from __future__ import annotations

import html
import re
import statistics

import pytest
from benchhub_contract.verdicts import RunValues, verdict

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, sql_bench_document, sweep_document

API = "/api/v1/leaderboards/{}/"
PAGE = "/benchmarks/{}/leaderboard/"


def storage(filesystem: str) -> dict:
    return {**example_document()["environment"]["storage"], "filesystem": filesystem}


MARIADB = {"engine": "mariadb", "version_string": "10.11.9-MariaDB", "config_profile": "default"}


def store(user, values, samples=None, status=Submission.Status.APPROVED, **environment):
    document = sweep_document(values, **environment)
    for measurement in document["runs"][0]["measurements"]:
        point = measurement["parameters"]["clients"]
        if samples and point in samples:
            measurement["samples"] = samples[point]
    submission_create(submitter=user, document=document, status=status)


@pytest.fixture
def select_update(bob, alice):
    """ext4: three runs peaking at different client counts; xfs: two faster runs,
    repeated; MariaDB: one slow run; alice's pending run, the fastest, is hers."""
    store(bob, {1: 300.0, 8: 1620.0, 32: 1600.5})
    store(bob, {1: 280.0, 8: 1480.0})
    store(bob, {4: 990.0, 16: 1500.0, 64: 1499.0})
    xfs = storage("xfs")
    store(bob, {8: 1750.0, 32: 1702.0}, samples={8: [1750.0, 1744.0, 1790.0]}, storage=xfs)
    store(bob, {8: 1690.0, 32: 1700.0}, samples={32: [1700.0, 1650.0, 1725.0]}, storage=xfs)
    store(bob, {8: 905.0}, database=MARIADB)
    store(alice, {8: 5000.0}, status=Submission.Status.PENDING, storage=storage("btrfs"))


def test_rows_are_environments_best_first_with_the_median_of_each_runs_peak(
    anonymous_api, select_update
):
    data = anonymous_api.get(API.format("select-update")).json()

    ext4 = [1620.0, 1480.0, 1500.0]  # each run at its own peak
    xfs = [1750.0, 1700.0]
    mariadb = [905.0]
    rows = data["rows"]
    assert [(r["environment"]["filesystem"], r["environment"]["engine"]) for r in rows] == [
        ("xfs", "postgresql"),
        ("ext4", "postgresql"),
        ("ext4", "mariadb"),
    ]
    assert [r["median"] for r in rows] == [
        statistics.median(xfs),
        statistics.median(ext4),
        statistics.median(mariadb),
    ]
    assert [r["n"] for r in rows] == [2, 3, 1]
    best = statistics.median(xfs)
    assert rows[1]["relative"] == pytest.approx(100 * statistics.median(ext4) / best, rel=1e-12)
    assert rows[0]["relative"] == 100.0 and rows[0]["verdict"] is None
    # each run one observation of its environment: runs against runs
    expected = verdict(
        [RunValues(v) for v in ext4], [RunValues(v) for v in xfs], direction="higher"
    )
    assert rows[1]["verdict"]["verdict"] == expected.verdict
    assert rows[1]["verdict"]["p_value"] == expected.p_value
    assert data["point"] == "each run's best point"


def test_a_fixed_point_ranks_every_run_at_that_point(anonymous_api, select_update):
    data = anonymous_api.get(API.format("select-update"), {"param.clients": "32"}).json()

    assert data["point"] == "clients=32"
    assert [(r["environment"]["filesystem"], r["median"], r["n"]) for r in data["rows"]] == [
        ("xfs", statistics.median([1702.0, 1700.0]), 2),
        ("ext4", 1600.5, 1),
    ]


def test_lower_is_better_ranks_the_lowest_totals_first(anonymous_api, bob):
    for totals, filesystem in ((133.0, "ufs"), (255.0, "zfs"), (160.0, "ufs"), (262.0, "zfs")):
        document = sql_bench_document({"insert": totals / 3, "TOTALS": totals}, filesystem)
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    data = anonymous_api.get(API.format("sql-bench")).json()

    assert data["point"] == "operation=TOTALS"  # the catalog's headline, not the fastest op
    ufs, zfs = statistics.median([133.0, 160.0]), statistics.median([255.0, 262.0])
    assert [(r["environment"]["filesystem"], r["median"]) for r in data["rows"]] == [
        ("ufs", ufs),
        ("zfs", zfs),
    ]
    assert data["rows"][1]["relative"] == pytest.approx(100 * ufs / zfs, rel=1e-12)


def test_the_page_shows_the_apis_numbers(client, select_update):
    page = html.unescape(client.get(PAGE.format("select-update")).content.decode())
    data = client.get(PAGE.format("select-update"), {"format": "json"}).json()

    cells = re.findall(r'<td class="num">([\d.,]+) tx/s</td>\s*<td class="num">(\d+)</td>', page)
    assert [(float(v), int(n)) for v, n in cells] == [(r["median"], r["n"]) for r in data["rows"]]


def test_the_page_shows_medians_as_the_comparisons_do_without_padding(client, bob):
    store(bob, {4: 3761.4, 8: 1201.25})
    store(bob, {8: 1800.0}, database=MARIADB)
    page = html.unescape(client.get(PAGE.format("select-update")).content.decode())
    cells = re.findall(r'<td class="num">([\d.,]+) tx/s</td>', page)
    assert cells == ["3761.4", "1800"]


def test_pending_runs_count_for_their_owner_only(client, anonymous_api, alice, select_update):
    public = anonymous_api.get(API.format("select-update")).json()
    client.force_login(alice)
    hers = client.get(PAGE.format("select-update"), {"format": "json"}).json()

    assert "btrfs" not in {r["environment"]["filesystem"] for r in public["rows"]}
    assert hers["rows"][0]["environment"]["filesystem"] == "btrfs"


@pytest.mark.parametrize(
    ("name", "query", "status", "message"),
    [
        ("select-update", {"metric": "tps"}, 400, "select-update has no metric 'tps'"),
        ("backup", {"metric": "database_bytes"}, 400, "database_bytes has no better direction"),
        ("select-update", {"engine": "redis"}, 400, "unknown engine 'redis'"),
        ("select-update", {"cores": "many"}, 400, "cores"),
        ("no-such-bench", {}, 404, "no benchmark 'no-such-bench'"),
    ],
)
def test_what_cannot_be_ranked_is_refused_naming_why(
    client, anonymous_api, select_update, name, query, status, message
):
    answer = anonymous_api.get(API.format(name), query)
    page = client.get(PAGE.format(name), query)

    assert answer.status_code == status and page.status_code == status
    assert message in answer.json()["error"]["message"]
    assert message in html.unescape(page.content.decode())


def test_the_benchmark_page_links_its_leaderboard(client, select_update):
    page = client.get("/benchmarks/select-update/").content.decode()

    assert 'href="/benchmarks/select-update/leaderboard/"' in page


def test_lower_is_better_takes_each_runs_lowest_point(anonymous_api, bob):
    for seconds, filesystem in (
        ({"local": 562.0, "tcp_loopback": 250.0, "services": 941.0}, "ntfs"),
        ({"local": 300.0, "tcp_loopback": 420.0}, "ext4"),
    ):
        document = sweep_document(
            seconds, metric="seconds", unit="s", parameter="protocol", storage=storage(filesystem)
        )
        document["runs"][0]["benchmark"] = "backup"
        document["runs"][0]["parameters"] = {}
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    data = anonymous_api.get(API.format("backup")).json()

    assert [(r["environment"]["filesystem"], r["median"]) for r in data["rows"]] == [
        ("ntfs", 250.0),
        ("ext4", 300.0),
    ]
