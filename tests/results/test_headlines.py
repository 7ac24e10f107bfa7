"""Each run in the results browser shows its benchmark's headline number —
select-update's peak throughput and where it peaked, sql-bench's TOTALS —
with its repetitions, and the list sorts by it, best first."""

from __future__ import annotations

import html
import re

from benchhub_contract.schema import benchmark_catalog

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sql_bench_document, sweep_document

PAGE = "/results/"


def store(user, document) -> int:
    outcome = submission_create(
        submitter=user, document=document, status=Submission.Status.APPROVED
    )
    return outcome.submission.runs.get().pk


def headline_cells(page: str) -> dict[int, str]:
    """{run id: the headline cell's text}, in the page's order."""
    rows = re.findall(
        r'href="/runs/(\d+)/">run \d+</a>.*?<td data-label="Headline"[^>]*>(.*?)</td>', page, re.S
    )
    return {
        int(pk): " ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split()) for pk, cell in rows
    }


def test_every_catalog_headline_names_a_metric_of_its_benchmark_with_a_direction():
    for entry in benchmark_catalog()["benchmarks"]:
        rule = entry["headline"]
        metric = next(m for m in entry["metrics"] if m["name"] == rule["metric"])
        if rule["at"] == "best":
            assert metric["direction"] in ("higher", "lower"), entry["name"]


def test_a_sweep_shows_its_peak_where_it_peaked_and_its_repetitions(client, bob):
    document = sweep_document({1: 310.5, 20: 1512.25, 80: 1498.0, 4: 905.0})
    document["runs"][0]["measurements"][1]["samples"] = [1512.25, 1490.0, 1530.0]
    run = store(bob, document)

    cell = headline_cells(client.get(PAGE).content.decode())[run]

    assert cell == "1,512 tx/s throughput best at clients=20, n 3"


def test_sql_bench_shows_its_totals_not_its_fastest_operation(client, bob):
    run = store(bob, sql_bench_document({"insert": 12.5, "TOTALS": 43.75, "select": 0.5}, "xfs"))

    assert headline_cells(client.get(PAGE).content.decode())[run] == (
        "43.75 s seconds at operation=TOTALS, n 1"
    )


def test_lower_is_better_takes_the_lowest_point(client, bob):
    document = sweep_document(
        {"local": 562.0, "tcp_loopback": 250.0, "services": 941.0},
        metric="seconds",
        unit="s",
        parameter="protocol",
    )
    document["runs"][0]["benchmark"] = "backup"
    document["runs"][0]["parameters"] = {}
    run = store(bob, document)

    cell = headline_cells(client.get(PAGE).content.decode())[run]

    assert cell.startswith("250.0 s seconds best at protocol=tcp_loopback")


def test_sorting_by_headline_puts_each_benchmarks_best_first(client, bob):
    slow = store(bob, sweep_document({1: 200.0, 8: 640.0}))
    fast = store(bob, sweep_document({1: 450.0, 8: 1210.0, 32: 990.0}))
    middle = store(bob, sweep_document({8: 700.0}))
    quick_sql = store(bob, sql_bench_document({"insert": 9.0, "TOTALS": 20.0}, "ext4"))
    slow_sql = store(bob, sql_bench_document({"insert": 3.0, "TOTALS": 31.0}, "ext4"))
    no_totals = store(bob, sql_bench_document({"insert": 1.0}, "ext4"))

    page = client.get(PAGE, {"sort": "headline"}).content.decode()

    assert list(headline_cells(page)) == [fast, middle, slow, quick_sql, slow_sql, no_totals]
    assert headline_cells(page)[no_totals] == "—"
