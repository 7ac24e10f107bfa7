import pytest
from playwright.sync_api import Page, expect

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

MARKERS = """() => {
  const chart = Chart.getChart(document.getElementById("comparison-chart"));
  return chart ? chart.config.plugins.map((plugin) => plugin.id) : null;
}"""


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
    expect(table.locator(".verdict-within-noise")).to_have_count(3)  # zfs, 1 % off
    expect(table.locator(".verdict-better").first).to_contain_text("▲ better")
    assert "mann-whitney-u" in table.locator(".verdict-better").first.get_attribute("title")
