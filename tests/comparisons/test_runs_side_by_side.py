"""/runs/compare/?run=…&run=…: any runs side by side — their common points
with each value's ratio to the first run's and its verdict, and what differs
between what they ran on; JSON and CSV say the same."""

from __future__ import annotations

import csv
import html
import io
import re
import statistics

import pytest
from benchhub_contract.verdicts import RunValues, verdict

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, sweep_document

PAGE = "/runs/compare/"


def store(user, values, *, samples=None, status=Submission.Status.APPROVED, **environment) -> int:
    document = sweep_document(values, **environment)
    for measurement in document["runs"][0]["measurements"]:
        point = measurement["parameters"]["clients"]
        if samples and point in samples:
            measurement["samples"] = samples[point]
            measurement["value"] = statistics.median(samples[point])
    outcome = submission_create(submitter=user, document=document, status=status)
    return outcome.submission.runs.get().pk


def xfs_noatime() -> dict:
    storage = dict(example_document()["environment"]["storage"])
    return {**storage, "filesystem": "xfs", "mount_options": "noatime,nodiratime"}


@pytest.fixture
def three_runs(bob, alice):
    first = store(
        bob, {1: 0, 8: 0}, samples={1: [402.0, 398.5, 410.0], 8: [1510.0, 1495.0, 1540.0, 1502.0]}
    )
    second = store(
        bob,
        {1: 0, 8: 0, 32: 1100.0},
        samples={1: [301.0, 296.0, 305.5], 8: [1720.0, 1705.0, 1760.0]},
        storage=xfs_noatime(),
    )
    third = store(alice, {8: 1490.0, 64: 800.0}, hardware={"cpu": "AMD EPYC 7763", "cores": 64})
    return first, second, third


def test_common_points_show_each_value_its_ratio_and_the_verdict_of_the_same_test(
    client, three_runs
):
    first, second, third = three_runs

    data = client.get(PAGE, {"run": [second, first, third], "format": "json"}).json()

    assert [run["id"] for run in data["runs"]] == [second, first, third]
    (point,) = data["points"]  # clients=8 alone is measured by all three
    assert (point["metric"], point["point"]) == ("throughput", "clients=8")
    reference, candidate, unrepeated = point["cells"]
    assert reference["value"] == 1720.0 and reference["ratio_to_first"] is None
    assert reference["verdict"] is None
    assert candidate["value"] == statistics.median([1510.0, 1495.0, 1540.0, 1502.0])
    assert candidate["n"] == 4
    assert candidate["ratio_to_first"] == pytest.approx(1506.0 / 1720.0, rel=1e-12)
    expected = verdict(
        [RunValues(1506.0, (1510.0, 1495.0, 1540.0, 1502.0))],
        [RunValues(1720.0, (1720.0, 1705.0, 1760.0))],
        direction="higher",
    )
    assert candidate["verdict"]["verdict"] == expected.verdict
    assert candidate["verdict"]["p_value"] == expected.p_value
    assert unrepeated["verdict"]["verdict"] == "insufficient data"


def test_what_differs_is_named_and_what_is_the_same_is_not(client, three_runs):
    first, second, _ = three_runs

    data = client.get(PAGE, {"run": [first, second], "format": "json"}).json()
    differs = {
        (row["section"], row["name"]): row["values"]
        for row in data["environment"]
        if row["differs"]
    }

    assert set(differs) == {("storage", "filesystem"), ("storage", "mount options")}
    assert differs[("storage", "filesystem")] == ["ext4", "xfs"]
    assert ("database", "engine") not in differs
    assert len(data["points"]) == 2  # clients=1 and clients=8


def test_the_page_shows_the_differences_first_and_the_verdicts(client, three_runs):
    first, second, _ = three_runs

    page = html.unescape(client.get(PAGE, {"run": [first, second]}).content.decode())

    differences = page[page.index('id="runs-differences"') : page.index('id="measurements"')]
    assert "storage: filesystem" in differences and "xfs" in differences
    assert "database: engine" not in differences
    points = page[page.index('id="runs-points"') :]
    assert re.search(
        r"clients=1</td>.*?\u00d7 0\.74\d* · (worse|within noise|inconclusive)", points, re.S
    )


def test_the_csv_has_a_row_per_run_and_point(client, three_runs):
    first, second, third = three_runs

    response = client.get(PAGE, {"run": [first, second, third], "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))

    assert [(row["point"], row["run"]) for row in rows] == [
        ("clients=8", str(first)),
        ("clients=8", str(second)),
        ("clients=8", str(third)),
    ]
    assert rows[0]["ratio_to_first"] == "" and float(rows[2]["value"]) == 1490.0


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        (["{first}"], "name at least two runs"),
        (["{first}", "{first}"], "is named twice"),
        (["{first}", "x1"], "'x1' is not a run number"),
        (["{first}", "9" * 30], f"'{'9' * 30}' is not a run number"),
        (["{first}", "\u0661\u0662"], "is not a run number"),
        (["{first}", "999999"], "no published run 999999"),
        (["{first}", "{pending}"], "no published run {pending}"),
        (["{first}"] * 13, "at most 12 runs"),
    ],
)
def test_runs_that_cannot_be_compared_are_a_400_naming_why(
    client, three_runs, alice, runs, message
):
    pending = store(alice, {8: 1.0}, status=Submission.Status.PENDING)
    named = {"first": three_runs[0], "pending": pending}
    wanted = [run.format(**named) for run in runs]

    page = client.get(PAGE, {"run": wanted})
    data = client.get(PAGE, {"run": wanted, "format": "json"})

    assert page.status_code == 400 and data.status_code == 400
    assert message.format(**named) in html.unescape(page.content.decode())
    assert message.format(**named) in data.json()["error"]["message"]


def test_the_owner_may_compare_her_pending_run(client, three_runs, alice):
    pending = store(alice, {8: 1.0}, status=Submission.Status.PENDING)
    client.force_login(alice)

    assert client.get(PAGE, {"run": [three_runs[0], pending]}).status_code == 200


def test_the_results_browser_ticks_runs_into_this_page(client, three_runs):
    page = client.get("/results/").content.decode()

    assert '<form id="runs-compare-form"' in page and 'action="/runs/compare/"' in page
    ticks = re.findall(r'name="run" value="(\d+)" form="runs-compare-form"', page)
    assert sorted(map(int, ticks)) == sorted(three_runs)


def test_the_chart_draws_each_run_as_percent_of_the_first_at_the_common_points(client, three_runs):
    first, second, _ = three_runs

    page = client.get(PAGE, {"run": [second, first]})

    chart = page.context["chart"]
    assert chart["reference"] == f"run {second}"
    assert chart["filename"] == f"runs-{second}-{first}.png"
    throughput = chart["metrics"]["throughput"]
    assert throughput["points"] == ["clients=1", "clients=8"]  # not 32: the first run alone
    reference, other = throughput["series"]
    assert reference == {
        "label": f"run {second}",
        "values": [100.0, 100.0],
        "intervals": [None, None],
    }
    assert other["label"] == f"run {first}"
    assert other["values"] == pytest.approx(
        [100 * 402.0 / 301.0, 100 * statistics.median([1510.0, 1495.0, 1540.0, 1502.0]) / 1720.0]
    )
    assert 'id="runs-chart-data"' in page.content.decode()


def test_the_chart_draws_the_interval_each_verdict_reads(client, three_runs):
    first, second, _ = three_runs

    chart = client.get(PAGE, {"run": [second, first]}).context["chart"]

    expected = verdict(
        [RunValues(1506.0, (1510.0, 1495.0, 1540.0, 1502.0))],
        [RunValues(1720.0, (1720.0, 1705.0, 1760.0))],
        direction="higher",
    )
    _, other = chart["metrics"]["throughput"]["series"]
    assert other["intervals"][1] == pytest.approx(
        [100 * expected.ratio_low, 100 * expected.ratio_high]
    )
    assert other["intervals"][1][0] < other["values"][1] < other["intervals"][1][1]


def test_the_page_shows_values_as_the_comparisons_do_without_padding(client, bob):
    first = store(bob, {8: 3761.4, 16: 4000.0})
    second = store(bob, {8: 1201.25, 16: 4100.5}, storage=xfs_noatime())

    page = html.unescape(client.get(PAGE, {"run": [first, second]}).content.decode())

    points = page[page.index('id="runs-points"') :]
    values = re.findall(r'<td class="num">([\d.,]+) <span class="sub">n 1</span>', points)
    assert values == ["3761.4", "1201.25", "4000", "4100.5"]
