"""?per=core and ?per=ram_gib: a rate divided by each run's own machine's
cores or GiB of RAM before the median is taken, labelled with its unit, on
both aggregation paths; refused for a metric where it means nothing."""

from __future__ import annotations

import statistics

import pytest
from benchhub_contract.verdicts import RunValues, verdict
from django.contrib.auth.models import AnonymousUser

from benchhub.comparisons import selectors
from benchhub.comparisons.aggregation import cells_from_rows
from benchhub.comparisons.in_database import cells_in_postgresql
from benchhub.comparisons.query import comparison_query_parse
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

API = "/api/v1/comparisons/"
GIB = 2**30
# (cpu, cores, RAM) → peak throughputs of its runs at 8 clients
MACHINES = {
    ("AMD EPYC 7763", 48, 192 * GIB): [9120.0, 8875.5, 9301.0],
    ("Intel Xeon E-2236", 6, 24 * GIB): [2010.0, 1987.5, 2044.0, 1999.0],
    ("ARM Neoverse N1", 0, 0): [777.0],  # a machine that did not say: left out
}
QUERY = {
    "benchmark": "select-update",
    "metric": "throughput",
    "x": "param.clients",
    "series": "cpu_model",
    "param.clients": "8",
}


@pytest.fixture
def machines(bob):
    for (cpu, cores, ram), peaks in MACHINES.items():
        hardware = {"cpu": cpu, **({"cores": cores, "ram_bytes": ram} if cores else {})}
        for peak in peaks:
            document = sweep_document({8: peak, 1: round(peak / 7.3, 2)}, hardware=hardware)
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)


def medians(data: dict) -> dict[str, float]:
    return {series["label"]: series["points"][0]["value"] for series in data["series"]}


def test_per_core_divides_each_run_by_its_own_machines_cores(client, machines):
    data = client.get(API, {**QUERY, "per": "core"}).json()

    assert data["metric"]["unit"] == "tx/s per core"
    assert data["per"] == "core"
    assert medians(data) == pytest.approx(
        {"EPYC 7763": 9120.0 / 48, "Xeon E-2236": statistics.median([2010.0, 1999.0]) / 6}
    )


def test_per_gib_of_ram_and_as_measured(client, machines):
    per_ram = client.get(API, {**QUERY, "per": "ram_gib"}).json()
    measured = client.get(API, QUERY).json()

    assert per_ram["metric"]["unit"] == "tx/s per GiB of RAM"
    assert medians(per_ram) == pytest.approx(
        {"EPYC 7763": 9120.0 / 192, "Xeon E-2236": 2004.5 / 24}
    )
    assert measured["metric"]["unit"] == "tx/s" and measured["per"] is None
    assert len(measured["series"]) == 3  # the machine without cores is there as measured


def test_both_aggregation_paths_divide_alike(machines):
    query = comparison_query_parse({**{k: [v] for k, v in QUERY.items()}, "per": ["ram_gib"]})
    measurements = selectors.comparison_measurements(user=AnonymousUser(), query=query)

    in_database = cells_in_postgresql(measurements, query)
    in_python = cells_from_rows(query, selectors._rows(AnonymousUser(), query))

    assert in_database.stats.keys() == in_python.stats.keys()
    for key, cell in in_python.stats.items():
        assert in_database.stats[key].median == pytest.approx(cell.median)
        assert in_database.stats[key].q1 == pytest.approx(cell.q1)
    assert sorted(in_python.runs["Xeon E-2236", 8].run_values) == pytest.approx(
        sorted(v / 24 for v in MACHINES["Intel Xeon E-2236", 6, 24 * GIB])
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"metric": "latency_mean"}, "latency_mean is in ms: only a rate where higher is better"),
        ({"metric": "errors"}, "errors is in count"),
        ({"per": "socket"}, "'socket': one of core, ram_gib"),
        ({"benchmark": "tpcb", "metric": "tps_relative"}, "tps_relative is in %"),
    ],
)
def test_per_is_refused_where_it_means_nothing(client, machines, query, message):
    response = client.get(API, {**QUERY, "per": "core", **query})

    assert response.status_code == 400
    details = {d["path"]: d["message"] for d in response.json()["error"]["details"]}
    assert message in details["$.per"]


def test_the_page_offers_per_for_rates_only_and_labels_the_axis(client, machines):
    page = client.get("/compare/", {**QUERY, "per": "core"}, follow=True).content.decode()
    latency = client.get(
        "/compare/", {**QUERY, "metric": "latency_mean"}, follow=True
    ).content.decode()

    assert '<option value="core" selected>per core</option>' in page
    assert "throughput (tx/s per core), higher is better" in page
    assert 'id="cmp-per"' not in latency


def test_the_history_divides_too(client, machines):
    data = client.get(
        "/api/v1/history/select-update/",
        {"engine": "postgresql", "param.clients": "8", "per": "core"},
    ).json()

    assert data["metric"]["unit"] == "tx/s per core"
    (version,) = data["versions"]
    assert version["n"] == 7
    assert version["median"] == pytest.approx(1987.5 / 6)  # the middle of 3 EPYC, 4 Xeon runs


def test_a_verdict_on_few_runs_resamples_their_divided_repetitions(client, bob):
    """Fewer than 4 runs a side, repeated: the bootstrap reads each run's
    repetitions, divided by its machine's cores like its value."""
    sides = {
        ("AMD EPYC 7763", 48): [[9100.0, 9180.5, 9050.0], [8990.0, 9075.0, 9122.5]],
        ("Intel Xeon E-2236", 6): [[2010.0, 1995.5, 2031.0], [1980.0, 2004.0, 1990.5]],
    }
    for (cpu, cores), runs in sides.items():
        for samples in runs:
            document = sweep_document(
                {8: statistics.median(samples)}, hardware={"cpu": cpu, "cores": cores}
            )
            document["runs"][0]["measurements"][0]["samples"] = samples
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    data = client.get(API, {**QUERY, "per": "core", "reference": "EPYC 7763"}).json()

    def side(cpu, cores):
        return [
            RunValues(statistics.median(s) / cores, tuple(v / cores for v in s))
            for s in sides[cpu, cores]
        ]

    expected = verdict(side("Intel Xeon E-2236", 6), side("AMD EPYC 7763", 48), direction="higher")
    judged = data["series"][1]["points"][0]["verdict"]
    assert judged["test"] == expected.test == "bootstrap"
    # The resampling order follows the runs' ids (run_sample_key): the same
    # interval within the bootstrap's own play, and nowhere near the undivided
    # repetitions' (about 0.22 times).
    assert judged["ratio_low"] == pytest.approx(expected.ratio_low, rel=0.02)
    assert judged["ratio_high"] == pytest.approx(expected.ratio_high, rel=0.02)
