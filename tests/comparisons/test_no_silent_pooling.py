"""A comparison cell pools only runs with the same run parameters: where
the matching runs differ in one no axis or filter names, the API refuses
with a 400 naming it and its values, and the page says so beside the
numbers, with one click to fix it or to vary it."""

from __future__ import annotations

import html
import statistics

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

URL = "/api/v1/comparisons/"
QUERY = {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"}


def store(user, transactions: int, values: dict[int, float]) -> None:
    document = sweep_document(values)
    document["runs"][0]["parameters"] = {"transactions": transactions, "locking": "for_update"}
    submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)


def two_transaction_counts(bob) -> None:
    store(bob, 10000, {1: 685.1, 4: 2310.0})
    store(bob, 10000, {1: 701.9, 4: 2290.5})
    store(bob, 2000, {1: 2200.8, 4: 5120.0})


def test_runs_that_differ_in_a_run_parameter_are_refused_naming_it_and_its_values(
    anonymous_api, bob
):
    two_transaction_counts(bob)

    response = anonymous_api.get(URL, QUERY)

    assert response.status_code == 400
    message = str(response.json())
    assert "run_param.transactions" in message
    assert "transactions (run parameter) (10000, 2000)" in message
    assert "fix it (run_param.transactions=10000)" in message
    assert "vary it (series=run_param.transactions)" in message
    assert "locking" not in message  # the same in every run: nothing pooled


def test_fixed_or_varied_each_cell_holds_runs_of_one_transaction_count(anonymous_api, bob):
    two_transaction_counts(bob)

    fixed = anonymous_api.get(URL, {**QUERY, "run_param.transactions": "10000"}).json()
    (series,) = fixed["series"]
    at_1 = next(point for point in series["points"] if point["x"] == 1)
    assert at_1["value"] == statistics.median([685.1, 701.9])
    assert (at_1["n"], at_1["min"], at_1["max"]) == (2, 685.1, 701.9)
    assert fixed["notes"] == []

    varied = anonymous_api.get(URL, {**QUERY, "series": "run_param.transactions"}).json()
    at_1 = {
        series["label"]: next(p["value"] for p in series["points"] if p["x"] == 1)
        for series in varied["series"]
    }
    assert at_1 == {"2000": 2200.8, "10000": statistics.median([685.1, 701.9])}


def test_the_page_says_what_it_pools_with_a_click_to_fix_or_vary_it(client, bob):
    two_transaction_counts(bob)

    page = html.unescape(client.get("/compare/", QUERY).content.decode())

    pooled = page[page.index('id="comparison-pooled"') :]
    pooled = pooled[: pooled.index("</div>")]
    assert "Pooled transactions (run parameter)" in pooled
    assert "(10000, 2000)" in pooled
    assert "run_param.transactions=10000" in pooled and "run_param.transactions=2000" in pooled
    vary = pooled[pooled.index('class="vary-link"') - 200 :]
    assert "series=run_param.transactions" in vary[: vary.index("vary-link")]
    assert (
        client.get(
            "/compare/?benchmark=select-update&metric=throughput&x=param.clients"
            "&series=run_param.transactions"
        ).status_code
        == 200
    )
