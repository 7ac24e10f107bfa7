"""A reader sees the same median for one cell (PostgreSQL 15 on ext4 at 1
client) on /compare/, on the benchmark page and on the filesystem page:
what each page renders in Chromium, against the median of the runs' values."""

import statistics

import pytest
from playwright.sync_api import Page

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

# Even n, one outlier: the median (321.75) is neither the mean nor a value.
AT_ONE_CLIENT = [300.0, 310.5, 333.0, 2900.0]


def test_one_cell_reads_the_same_on_compare_the_benchmark_and_the_dimension_page(
    live_server, page: Page, bob
):
    for value, at_20 in zip(AT_ONE_CLIENT, (1500.0, 1530.0, 9000.0, 1511.0), strict=True):
        document = sweep_document({1: value, 20: at_20})
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    expected = f"{statistics.median(AT_ONE_CLIENT):.6g}"
    assert expected == "321.75" and expected != f"{statistics.mean(AT_ONE_CLIENT):.6g}"

    page.goto(
        live_server.url
        + "/compare/?benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"
    )
    row = page.locator("#comparison-table tbody tr", has=page.locator("th", has_text="1")).first
    on_compare = row.locator("td .value").first.inner_text()

    shown = {}
    for name, path in (("benchmark", "/benchmarks/select-update/"), ("ext4", "/filesystems/ext4/")):
        page.goto(live_server.url + path)
        cells = page.locator("#spread-select-update tbody tr", has_text="postgresql 15")
        shown[name] = cells.locator("td .value").first.inner_text()
        assert "n=4, 300\u20132900" in cells.locator("td").first.inner_text()

    assert {"compare": on_compare, **shown} == {
        "compare": expected,
        "benchmark": expected,
        "ext4": expected,
    }
