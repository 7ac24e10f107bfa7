"""The history over server versions, and the verdicts' intervals on the
comparison chart, drawn by real Chromium from the JSON their pages embed."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = settings.BASE_DIR / "var" / "artifacts" / "history"

# Every rectangle a draw paints that is 10 px across: the verdict intervals
# (compare.js) are drawn so; nothing else on these charts is.
# The chart on the canvas of this id, once drawn; false while Chart.js, a
# deferred script, has not run yet (a predicate that throws fails the wait
# at once instead of retrying it).
DRAWN = "(id) => window.Chart && Chart.getChart(document.getElementById(id))"

PAINTED = """(id) => {
  const chart = Chart.getChart(document.getElementById(id));
  const painted = [];
  const ctx = chart.ctx;
  const fillRect = ctx.fillRect;
  ctx.fillRect = function (x, y, w, h) {
    painted.push([x, y, w, h]);
    return fillRect.apply(this, arguments);
  };
  chart.draw();
  ctx.fillRect = fillRect;
  return {
    painted,
    plugins: chart.config.plugins.map((plugin) => plugin.id),
    data: chart.data.datasets.map((dataset) => dataset.data),
  };
}"""

PEAKS = {
    "15.10": [1311.5, 1290.0, 1302.25, 1275.0, 1320.75],
    "14.11": [1012.0, 998.5, 1021.0],
    "16.1": [1402.0, 1388.5, 1415.0, 1397.25],
    "15.2": [1105.0, 1090.5, 1111.0, 1099.0, 1120.5, 1087.0],
}


@pytest.fixture
def versions(bob):
    for version, peaks in PEAKS.items():
        for peak in peaks:
            document = sweep_document(
                {1: round(peak * 0.23, 2), 8: peak},
                database={"version_string": f"PostgreSQL {version} on x86_64-pc-linux-gnu"},
            )
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)


def test_the_history_draws_each_versions_median_band_and_interval(
    live_server, page: Page, versions, client
):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    query = "engine=postgresql&param.clients=8"
    api = client.get(f"/api/v1/history/select-update/?{query}").json()

    page.goto(live_server.url + "/benchmarks/select-update/")
    page.get_by_role("link", name="History: select-update over server versions").click()
    page.get_by_role("link", name="postgresql", exact=True).click()
    page.fill("input[name='param.clients']", "8")
    page.get_by_role("button", name="Show").click()

    page.wait_for_function(DRAWN, arg="history-chart")
    drawn = page.evaluate(PAINTED, "history-chart")
    page.screenshot(path=str(ARTIFACTS / "history-1280.png"), full_page=True)
    assert "benchhubHistoryIntervals" in drawn["plugins"]
    q3, q1, medians, _legend = drawn["data"]
    assert medians == [v["median"] for v in api["versions"]]
    assert (q1, q3) == ([v["q1"] for v in api["versions"]], [v["q3"] for v in api["versions"]])
    # one interval per version after the first, each 8 px across
    assert len([rect for rect in drawn["painted"] if rect[2] == 8]) == 3
    expect(page.locator("#history-table tbody th")).to_have_text(["14.11", "15.2", "15.10", "16.1"])

    page.set_viewport_size({"width": 390, "height": 900})
    page.reload()
    page.wait_for_function(DRAWN, arg="history-chart")
    page.screenshot(path=str(ARTIFACTS / "history-390.png"), full_page=True)
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0


def test_the_comparison_chart_draws_the_interval_each_verdict_reads(live_server, page: Page, bob):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for value in (100.0, 103.0, 98.0, 101.0, 99.5):
        for filesystem, scale in (("ext4", 1.0), ("xfs", 1.37), ("zfs", 1.02)):
            document = sweep_document(
                {c: round(value * scale * c, 2) for c in (1, 8)}, storage={"filesystem": filesystem}
            )
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    page.goto(
        live_server.url + "/compare/?benchmark=select-update&metric=throughput"
        "&x=param.clients&series=filesystem&reference=ext4"
    )

    page.wait_for_function(DRAWN, arg="comparison-chart")
    drawn = page.evaluate(PAINTED, "comparison-chart")
    page.screenshot(path=str(ARTIFACTS / "compare-intervals.png"), full_page=True)
    assert "benchhubVerdictIntervals" in drawn["plugins"]
    # xfs and zfs at 1 and 8 clients; the reference has no verdict of its own
    assert len([rect for rect in drawn["painted"] if rect[2] == 10]) == 4


Y_AXIS = """() => {
  const chart = Chart.getChart(document.getElementById("history-chart"));
  return chart ? {type: chart.scales.y.type, min: chart.scales.y.min} : null;
}"""


def test_the_history_value_axis_turns_logarithmic_and_the_address_keeps_it(
    live_server, page: Page, versions
):
    page.goto(
        live_server.url + "/benchmarks/select-update/history/?engine=postgresql&param.clients=8"
    )
    page.wait_for_function(Y_AXIS)
    assert page.evaluate(Y_AXIS)["type"] == "linear"
    toggle = page.locator("#history-log-scale")
    expect(toggle).to_have_attribute("aria-pressed", "false")

    toggle.click()

    expect(toggle).to_have_attribute("aria-pressed", "true")
    axis = page.evaluate(Y_AXIS)
    assert axis["type"] == "logarithmic" and axis["min"] > 0
    assert "scale=log" in page.url

    page.reload()  # a shared address draws what its sender saw
    page.wait_for_function(Y_AXIS)
    assert page.evaluate(Y_AXIS)["type"] == "logarithmic"
    expect(page.locator("#history-log-scale")).to_have_attribute("aria-pressed", "true")

    page.select_option("#history-by", "version_major")  # the form sent again keeps it
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**by=version_major**")
    page.wait_for_function(Y_AXIS)
    assert page.evaluate(Y_AXIS)["type"] == "logarithmic"
    assert "scale=log" in page.url

    page.locator("#history-log-scale").click()
    assert page.evaluate(Y_AXIS)["type"] == "linear"
    assert "scale=" not in page.url
