"""The compare form in Chromium: it is never replaced while in use, so
every control works with the mouse and the keyboard, fast typing keeps
every key, and arrowing through the benchmarks leaves form, chart and URL
in agreement."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

START = "/compare/?benchmark=select-update&metric=throughput&x=param.clients&series=filesystem"
# Chart.js may not have run yet when the canvas is in the page (right after
# signing in, a CI run's predicate threw "Chart is not defined").
CHART = """() => {
  const canvas = document.getElementById("comparison-chart");
  const chart = canvas && typeof Chart !== "undefined" && Chart.getChart(canvas);
  return chart ? {labels: chart.data.datasets.map(d => d.label),
                  points: chart.data.datasets.map(d => d.data.length)} : null;
}"""


@pytest.fixture
def sweeps(bob):
    articles_load()
    for filesystem, scale in (("ext4", 1.0), ("xfs", 0.8), ("ext4", 1.1)):
        values = {c: 100.0 * c * scale for c in (1, 2, 4, 8, 20)}
        document = sweep_document(values, storage={"filesystem": filesystem, "kind": "ssd"})
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)


def query_of(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def wait_for_series(page: Page, labels: list[str]) -> None:
    page.wait_for_function(
        f"(want) => {{ const s = ({CHART})(); return s && JSON.stringify(s.labels) === "
        "JSON.stringify(want); }",
        arg=labels,
    )


def test_a_filter_added_with_the_mouse_is_applied_and_stays(live_server, page: Page, sweeps):
    page.goto(live_server.url + START)
    wait_for_series(page, ["ext4", "xfs"])

    page.click("#cmp-add-filter")
    page.keyboard.type("param.clients")
    page.click("#cmp-add-value")
    page.keyboard.type("20")
    page.click("#cmp-add-button")

    expect(page).to_have_url(re.compile(r"param\.clients=20"))
    expect(page.locator("#cmp-fixed-fields input[name='param.clients']")).to_have_value("20")
    expect(page.locator("#cmp-add-filter")).to_have_value("")
    expect(page.locator("#comparison-table tbody tr")).to_have_count(1)
    expect(page.locator("#comparison-status")).to_contain_text("2 series, 2 points")
    # and a second one, with the first kept
    page.fill("#cmp-add-filter", "storage_kind")
    page.fill("#cmp-add-value", "ssd")
    page.click("#cmp-add-button")
    expect(page).to_have_url(re.compile(r"param\.clients=20.*storage_kind=ssd"))


def test_a_filter_added_with_the_keyboard_keeps_the_focus(live_server, page: Page, sweeps):
    page.goto(live_server.url + START)
    wait_for_series(page, ["ext4", "xfs"])

    page.focus("#cmp-add-filter")
    page.keyboard.type("filesystem")
    page.keyboard.press("Tab")
    page.keyboard.type("XFS")
    page.keyboard.press("Enter")

    expect(page).to_have_url(re.compile(r"filesystem=XFS"))
    wait_for_series(page, ["xfs"])
    assert page.evaluate("document.activeElement.id") == "cmp-add-value"
    # Show by keyboard: the focus stays on the button, not the page body
    page.focus("#comparison-form button[type=submit]:not(#cmp-add-button)")
    page.keyboard.press("Enter")
    expect(page.locator("#comparison-status")).to_contain_text("Showing")
    assert page.evaluate("document.activeElement.tagName") == "BUTTON"


def test_fast_typing_across_the_form_keeps_every_key(live_server, page: Page, sweeps):
    page.goto(live_server.url + START)
    wait_for_series(page, ["ext4", "xfs"])

    page.click("#cmp-filter-1")  # engine
    page.keyboard.type("postgresql", delay=20)
    page.keyboard.press("Tab")  # version_major
    page.keyboard.type("15", delay=20)
    page.keyboard.press("Tab")  # os_family
    page.keyboard.press("Tab")  # filesystem
    page.keyboard.type("ext4", delay=20)

    expect(page).to_have_url(re.compile(r"filesystem=ext4"))
    wait_for_series(page, ["ext4"])
    assert page.input_value("#cmp-filter-1") == "postgresql"
    assert page.input_value("#cmp-filter-2") == "15"
    assert page.input_value("#cmp-filter-4") == "ext4"
    query = query_of(page)
    assert (query["engine"], query["version_major"], query["filesystem"]) == (
        ["postgresql"],
        ["15"],
        ["ext4"],
    )
    assert page.evaluate("document.activeElement.id") == "cmp-filter-4"


def test_arrowing_quickly_through_the_benchmarks_leaves_form_chart_and_url_agreeing(
    live_server, page: Page, sweeps
):
    page.goto(live_server.url + START)
    wait_for_series(page, ["ext4", "xfs"])

    page.focus("#cmp-benchmark")
    for _ in range(4):
        page.keyboard.press("ArrowUp")
    for _ in range(2):
        page.keyboard.press("ArrowDown")

    chosen = page.input_value("#cmp-benchmark")
    expect(page).to_have_url(re.compile(rf"benchmark={re.escape(chosen)}&"))
    page.wait_for_load_state("networkidle")
    query = query_of(page)
    metric = page.input_value("#cmp-metric")
    assert query["benchmark"] == [chosen] and query["metric"] == [metric]
    options = page.eval_on_selector_all("#cmp-metric option", "os => os.map(o => o.value)")
    assert metric in options
    assert page.input_value("input[name=shown_benchmark]") == chosen
    title = page.locator("#comparison-title")
    if title.count():
        expect(title).to_contain_text(f"{chosen}: {metric}")
    else:
        expect(page.locator("#comparison")).not_to_contain_text("cannot be drawn")
    assert page.evaluate("document.activeElement.id") == "cmp-benchmark"


@pytest.mark.parametrize("pause", [0, 600], ids=["show-at-once", "show-after-the-pause"])
def test_typing_then_show_asks_the_server_once(live_server, page: Page, sweeps, pause):
    """Typing sends the form after a pause (300 ms), and Show sends it
    again: the same query twice, a second comparison for nothing, whether
    Show came before the pause was over or after."""
    page.goto(live_server.url + START)
    wait_for_series(page, ["ext4", "xfs"])
    page.wait_for_load_state("networkidle")
    asked: list[str] = []
    page.on(
        "request", lambda request: asked.append(request.url) if "/compare/" in request.url else None
    )

    page.click("#cmp-filter-4")  # filesystem
    page.keyboard.type("ext4")
    page.wait_for_timeout(pause)
    page.click("#comparison-form .actions button[type=submit]")

    wait_for_series(page, ["ext4"])
    page.wait_for_timeout(800)  # past the pause: a request still to come has come
    page.wait_for_load_state("networkidle")
    assert len(asked) == 1, asked
    assert parse_qs(urlsplit(asked[0]).query)["filesystem"] == ["ext4"]


def test_the_query_asked_last_is_asked_again_after_going_back(live_server, page: Page, sweeps):
    """Back brings the comparison before it: asking again for the one just
    left is not a repeat of what is shown, and must reach the server."""
    page.goto(live_server.url + START)
    wait_for_series(page, ["ext4", "xfs"])
    page.fill("#cmp-filter-4", "ext4")
    wait_for_series(page, ["ext4"])
    page.go_back()
    wait_for_series(page, ["ext4", "xfs"])

    page.fill("#cmp-filter-4", "ext4")

    wait_for_series(page, ["ext4"])
    expect(page).to_have_url(re.compile(r"filesystem=ext4"))


def test_signing_out_returns_to_the_comparison_as_the_address_bar_has_it(
    live_server, page: Page, sweeps
):
    """The sign-out form's "next" follows htmx's address, as the sign-in
    link does: the comparison as first loaded had lost the filter typed since."""
    User.objects.create_user(username="maud", password="a long enough passphrase 42")
    page.goto(f"{live_server.url}/accounts/login/?next={quote(START)}")
    page.fill("#id_username", "maud")
    page.fill("#id_password", "a long enough passphrase 42")
    page.click("button:has-text('Sign in')")
    wait_for_series(page, ["ext4", "xfs"])
    page.fill("#cmp-filter-4", "ext4")
    wait_for_series(page, ["ext4"])

    page.click("header >> button:has-text('Sign out')")

    expect(page.locator(".messages")).to_contain_text("You are signed out.")
    assert urlsplit(page.url).path == "/compare/"
    assert query_of(page)["filesystem"] == ["ext4"]
    wait_for_series(page, ["ext4"])
