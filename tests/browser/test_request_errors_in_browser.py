"""What an in-page (htmx) request could not do is said on the page: htmx
swaps no 5xx answer and nothing when the server cannot be reached, so a
filter or a button would otherwise do nothing at all. The server's answers
here are its real ones (the 503 page, an API error body), handed to the
browser in place of the request by Playwright, since a concurrent change or
a database going away cannot be timed to a keystroke. A screenshot is kept
under var/artifacts/request-errors/ (look at it)."""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings
from django.template import loader
from playwright.sync_api import Browser, expect

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = settings.BASE_DIR / "var" / "artifacts" / "request-errors"

# An htmx request of the results browser (a search typed in), not its page.
IN_PAGE = re.compile(r".*/results/\?.*")
# What Chromium and htmx log for a failed request: expected here, nothing else.
EXPECTED = (
    "htmx:responseError",
    "htmx:sendError",
    "htmx:afterRequest",
    "Response Status Error Code",
    "Failed to load resource",
)


@pytest.fixture
def results_page(live_server, browser: Browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith(EXPECTED)
            else None
        ),
    )
    page.goto(f"{live_server.url}/results/")
    yield page
    context.close()
    assert errors == [], f"the page logged errors: {errors}"


def search(page, text: str) -> None:
    page.fill("#results-q", text)
    page.press("#results-q", "Enter")


def test_a_503_for_a_concurrent_change_is_said_with_the_servers_sentence(results_page):
    answer = loader.get_template("503.html").render(
        {"conflict": True, "reason": "the hardware with id 7 was deleted meanwhile", "seconds": 1}
    )
    results_page.route(
        IN_PAGE, lambda route: route.fulfill(status=503, content_type="text/html", body=answer)
    )
    search(results_page, "epyc")

    notice = results_page.get_by_role("alert")
    expect(notice).to_contain_text(
        "Your request was not done — The hardware with id 7 was deleted meanwhile: nothing of "
        "it was stored. Go back and send it again in 1 second."
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    results_page.screenshot(path=ARTIFACTS / "results-503.png")


def test_an_api_error_is_said_by_its_message_and_a_later_success_clears_it(results_page):
    body = json.dumps({"error": {"code": "server_error", "message": "Something broke (ref 42)"}})
    results_page.route(
        IN_PAGE,
        lambda route: route.fulfill(status=500, content_type="application/json", body=body),
    )
    search(results_page, "debian")
    expect(results_page.get_by_role("alert")).to_have_text(
        re.compile(r"^Something broke \(ref 42\)\s*Dismiss$")
    )

    results_page.unroute(IN_PAGE)
    search(results_page, "debian 12")
    expect(results_page.get_by_role("alert")).to_have_count(0)


def test_a_server_out_of_reach_is_said_and_the_notice_can_be_dismissed(results_page):
    results_page.route(IN_PAGE, lambda route: route.abort("connectionrefused"))
    search(results_page, "15.4")

    notice = results_page.get_by_role("alert")
    expect(notice).to_contain_text("BenchHub could not be reached")
    notice.get_by_role("button", name="Dismiss").click()
    expect(notice).to_have_count(0)
