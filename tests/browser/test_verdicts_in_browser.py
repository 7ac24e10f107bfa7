import re

import pytest
from playwright.sync_api import Page, expect

from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

MARKERS = """() => {
  const chart = Chart.getChart(document.getElementById("comparison-chart"));
  return chart ? chart.config.plugins.map((plugin) => plugin.id) : null;
}"""

# What the chart draws: every text the canvas is asked to fill in one draw
# (the verdict glyphs among them), and per series the tooltip's lines per point.
DRAWN = """() => {
  const chart = Chart.getChart(document.getElementById("comparison-chart"));
  const filled = [];
  const ctx = chart.ctx;
  const fillText = ctx.fillText;
  ctx.fillText = function (text) {
    filled.push(String(text));
    return fillText.apply(this, arguments);
  };
  chart.draw();
  ctx.fillText = fillText;
  const afterLabel = chart.options.plugins.tooltip.callbacks.afterLabel;
  const tooltips = chart.data.datasets.map((dataset) => dataset.benchhubPoints.map(
    (point, index) => point ? afterLabel({dataset, dataIndex: index}) : null));
  return {filled, tooltips};
}"""


# the en dash and the multiplication sign of "inconclusive: 0.856 to 2.63 times"
DASH, TIMES = "\u2013", "\u00d7"


def drawn(page: Page) -> dict:
    page.wait_for_function(MARKERS)
    return page.evaluate(DRAWN)


def test_verdicts_are_marked_on_the_chart_and_named_in_the_table(live_server, page: Page, bob):
    for value in (100.0, 103.0, 98.0, 101.0):
        for filesystem, scale in (("ext4", 1.0), ("xfs", 1.4), ("zfs", 1.01)):
            document = sweep_document(
                {c: value * scale * c for c in (1, 8, 32)}, storage={"filesystem": filesystem}
            )
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    page.goto(
        live_server.url + "/compare/?benchmark=select-update&metric=throughput"
        "&x=param.clients&series=filesystem&reference=ext4"
    )

    page.wait_for_function(MARKERS)
    assert "benchhubVerdictMarkers" in page.evaluate(MARKERS)
    table = page.locator("#comparison-table")
    expect(table.locator(".verdict-better")).to_have_count(3)  # xfs at 1, 8, 32
    expect(table.locator(".verdict-better").first).to_contain_text("▲ better")
    assert "mann-whitney-u" in table.locator(".verdict-better").first.get_attribute("title")
    # zfs is 1 % off, but its runs spread 98-103: the ratio's interval,
    # 98 x 1.01 / 103 to 103 x 1.01 / 98, reaches past 1.05. Not "the same".
    inconclusive = table.locator(".verdict-inconclusive")
    expect(inconclusive).to_have_count(3)
    expect(inconclusive.first).to_have_text(f"? inconclusive: 0.961{DASH}1.06 {TIMES}")
    chart = drawn(page)
    assert chart["filled"].count("▲") == 3 and chart["filled"].count("?") == 3
    zfs = chart["tooltips"][2]
    assert (
        f"verdict: inconclusive: 0.961{DASH}1.06 {TIMES} (mann-whitney-u, p = 0.56; ratio 1.01)"
        in zfs[0]
    )


def test_an_equivalent_series_is_marked_equal(live_server, page: Page, bob):
    """Runs that agree closely: the interval lies within ±5 %, the only case
    where the page says the two are the same."""
    for value in (100.0, 100.4, 99.7, 100.2, 99.9):
        for filesystem, scale in (("ext4", 1.0), ("xfs", 1.012)):
            document = sweep_document({4: value * scale}, storage={"filesystem": filesystem})
            submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    page.goto(
        live_server.url + "/compare/?benchmark=select-update&metric=throughput"
        "&x=param.clients&series=filesystem&reference=ext4"
    )

    cell = page.locator("#comparison-table .verdict-equivalent")
    expect(cell).to_have_text("= equivalent")
    assert "within ±5 %" in cell.get_attribute("title")
    chart = drawn(page)
    assert "=" in chart["filled"]
    assert any(line.startswith("verdict: equivalent (") for line in chart["tooltips"][1][0])


def test_the_seed_002_totals_preset_says_inconclusive_with_its_interval(live_server, page: Page):
    """Seed 002's TOTALS, UFS against ZFS: ratio 1.71, 95 % interval
    0.856-2.63, p = 0.11 over every profile. The test cannot tell; the
    page must not say the two are the same."""
    articles_load()
    page.goto(live_server.url + "/compare/")
    page.get_by_role("link", name=re.compile("sql-bench TOTALS")).click()
    expect(page).to_have_url(re.compile(r"param\.operation=TOTALS"))
    page.wait_for_load_state("load")  # compare.js, deferred, handles the form's changes
    table = page.locator("#comparison-table")
    # one run a profile a side: no test can tell
    expect(table.locator(".verdict-insufficient-data")).to_have_count(4)

    # The TOTALS of every profile at once: x the operation instead of the profile.
    page.select_option("#cmp-x", "param.operation")

    expect(page).to_have_url(re.compile(r"x=param\.operation"))
    expect(table.locator(".verdict")).to_have_count(1)
    # the preset keeps UFS without mount options: 4 runs against 4
    expect(table.locator(".verdict")).to_have_text(f"? inconclusive: 0.833{DASH}2.63 {TIMES}")

    # The article's UFS and UFS+softupdates together, as the issue read it.
    page.goto(
        live_server.url + "/compare/?benchmark=sql-bench&metric=seconds&x=param.operation"
        "&series=filesystem&param.operation=TOTALS"
    )
    verdict = page.locator("#comparison-table .verdict")
    expect(verdict).to_have_text(f"? inconclusive: 0.856{DASH}2.63 {TIMES}")
    expect(page.locator("#comparison-table .verdict-numbers")).to_have_text("p = 0.11 · ratio 1.71")
    assert "0.8562 to 2.632" in verdict.get_attribute("title")
    chart = drawn(page)
    assert "?" in chart["filled"]
    (zfs_totals,) = chart["tooltips"][1]
    assert (
        f"verdict: inconclusive: 0.856{DASH}2.63 {TIMES} (mann-whitney-u, p = 0.11; ratio 1.7129)"
        in (zfs_totals)
    )
    assert "within noise" not in page.content()
