"""/changes/?engine=…&from=…&to=…: what changed between two releases, from
machines that ran both — each machine's new runs judged against its own old
runs — and nothing read from a machine that ran only one of them."""

from __future__ import annotations

import html
import re

import pytest
from benchhub_contract.verdicts import RunValues, verdict

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, sweep_document

PAGE = "/changes/"


def pg(version: str) -> dict:
    return {
        "version_string": f"PostgreSQL {version} on x86_64-pc-linux-gnu",
        "config_profile": "default",
    }


def machine(cpu: str) -> dict:
    return {**example_document()["environment"]["hardware"], "cpu": cpu}


def store(user, peak: float, version: str, cpu: str, status=Submission.Status.APPROVED) -> None:
    # three points: the run counts once, at its best one
    values = {1: round(peak * 0.21, 3), 8: peak, 32: round(peak * 0.97, 3)}
    document = sweep_document(values, database=pg(version), hardware=machine(cpu))
    submission_create(submitter=user, document=document, status=status)


EPYC_15 = [1000.0, 1012.5, 991.0, 1003.0, 998.5]
EPYC_16 = [1201.0, 1190.0, 1215.5, 1188.0, 1230.0]
XEON_15 = [700.0, 705.5, 699.0, 702.0, 698.0]
XEON_16 = [640.0, 633.5, 645.0, 629.0, 650.5]


@pytest.fixture
def releases(bob, alice):
    for peak in EPYC_15:
        store(bob, peak, "15.4", "AMD EPYC 7763")
    for peak in EPYC_16:
        store(bob, peak, "16.2", "AMD EPYC 7763")
    for peak in XEON_15:
        store(alice, peak, "15.8", "Intel Xeon Gold 6248R")
    for peak in XEON_16:
        store(alice, peak, "16.4", "Intel Xeon Gold 6248R")
    store(bob, 9000.0, "16.2", "AMD Ryzen 9 7950X")  # a faster machine that never ran 15
    store(alice, 10.0, "15.4", "Intel Atom C3758")  # a slow one that never ran 16


def change(data: dict, metric: str) -> dict:
    return next(c for c in data["metrics"] if c["metric"] == metric)


def test_each_machine_is_judged_against_itself_and_unpaired_runs_say_nothing(client, releases):
    data = client.get(
        PAGE, {"engine": "postgresql", "from": "15", "to": "16", "format": "json"}
    ).json()

    throughput = change(data, "throughput")
    by_cpu = {e["cpu"].split(",")[0]: e for e in throughput["evidence"]}
    assert set(by_cpu) == {"amd EPYC 7763", "intel Xeon Gold 6248R"}
    epyc = by_cpu["amd EPYC 7763"]
    assert (epyc["before"]["median"], epyc["before"]["n"]) == (1000.0, 5)
    assert (epyc["after"]["median"], epyc["after"]["n"]) == (1201.0, 5)
    expected = verdict(
        [RunValues(v) for v in EPYC_16], [RunValues(v) for v in EPYC_15], direction="higher"
    )
    assert epyc["verdict"]["verdict"] == expected.verdict == "better"
    assert epyc["verdict"]["p_value"] == expected.p_value
    assert by_cpu["intel Xeon Gold 6248R"]["verdict"]["verdict"] == "worse"
    assert throughput["call"] == "mixed"  # the machines disagree: no release-wide call
    assert data["unpaired_runs"] == 2


def test_machines_that_agree_make_the_call(client, bob, alice):
    for peak in EPYC_15:
        store(bob, peak, "15.4", "AMD EPYC 7763")
    for peak in EPYC_16:
        store(bob, peak, "16.2", "AMD EPYC 7763")

    data = client.get(
        PAGE, {"engine": "postgresql", "from": "15", "to": "16", "format": "json"}
    ).json()

    assert change(data, "throughput")["call"] == "better"
    assert data["unpaired_runs"] == 0


def test_a_version_prefix_takes_its_minor_releases(client, bob):
    mariadb = {"engine": "mariadb", "config_profile": "default"}
    for peak, version in (
        (900.0, "10.6.18"),
        (910.0, "10.11.9"),
        (1300.0, "11.4.3"),
        (1290.0, "11.4.2"),
    ):
        document = sweep_document(
            {8: peak}, database={**mariadb, "version_string": f"{version}-MariaDB"}
        )
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    data = client.get(
        PAGE, {"engine": "mariadb", "from": "10", "to": "11", "format": "json"}
    ).json()

    (evidence,) = change(data, "throughput")["evidence"]
    assert (evidence["before"]["n"], evidence["after"]["n"]) == (2, 2)


def test_no_machine_that_ran_both_means_nothing_is_said(client, bob):
    store(bob, 1000.0, "15.4", "AMD EPYC 7763")
    store(bob, 2000.0, "16.2", "AMD Ryzen 9 7950X")

    page = html.unescape(
        client.get(PAGE, {"engine": "postgresql", "from": "15", "to": "16"}).content.decode()
    )

    assert "No machine ran both postgresql 15 and 16" in page
    assert "2 runs of these versions ran on a machine that did not run the other one" in page


def test_the_page_shows_each_machines_evidence(client, releases):
    page = html.unescape(
        client.get(PAGE, {"engine": "postgresql", "from": "15", "to": "16"}).content.decode()
    )

    section = page[page.index('id="change-select-update-throughput"') :]
    section = section[: section.index("</section>")]
    assert "mixed" in section
    assert "1000 (5)" in section and "1201 (5)" in section


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"engine": "redis", "from": "1", "to": "2"}, "unknown engine 'redis'"),
        (
            {"engine": "postgresql", "from": "sixteen", "to": "17"},
            "'sixteen' is not a version number",
        ),
        ({"engine": "postgresql", "from": "16", "to": ""}, "'' is not a version number"),
        ({"engine": "postgresql", "from": "16", "to": "16"}, "the same version as from"),
        ({"engine": "postgresql", "from": "\u0661\u0666", "to": "17"}, "is not a version number"),
    ],
)
def test_what_cannot_be_compared_is_a_400_naming_it(client, db, query, message):
    page = client.get(PAGE, query)
    data = client.get(PAGE, {**query, "format": "json"})

    assert page.status_code == 400 and data.status_code == 400
    assert message in html.unescape(page.content.decode())
    assert message in data.json()["error"]["message"]


def test_a_lower_is_better_metric_takes_each_runs_lowest_point(client, bob):
    def latency(version: str, points: dict) -> None:
        document = sweep_document(
            points,
            metric="latency_mean",
            unit="ms",
            database=pg(version),
            hardware=machine("AMD EPYC 7763"),
        )
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    latency("15.4", {1: 0.82, 8: 3.9, 32: 14.5})
    latency("15.4", {1: 0.8, 8: 4.1})
    latency("16.2", {1: 0.61, 8: 3.2, 32: 12.0})
    latency("16.2", {1: 0.64, 8: 3.0})

    data = client.get(
        PAGE, {"engine": "postgresql", "from": "15", "to": "16", "format": "json"}
    ).json()

    (evidence,) = change(data, "latency_mean")["evidence"]
    assert evidence["before"]["median"] == pytest.approx((0.82 + 0.8) / 2)
    assert evidence["after"]["median"] == pytest.approx((0.61 + 0.64) / 2)


def test_the_page_shows_medians_as_the_comparisons_do_without_padding(client, bob):
    store(bob, 3761.4, "15.4", "AMD EPYC 7763")
    store(bob, 4102.25, "16.2", "AMD EPYC 7763")

    page = html.unescape(
        client.get(PAGE, {"engine": "postgresql", "from": "15", "to": "16"}).content.decode()
    )

    section = page[page.index('id="change-select-update-throughput"') :]
    assert re.findall(r'<td class="num">([\d.,]+) \(1\)</td>', section) == ["3761.4", "4102.25"]
