"""Every kind of page under its Content-Security-Policy in Chromium: no page
breaks the policy (a violation fails the test, whether the browser reports it
as an event or in its console), the charts are still drawn and htmx still
swaps, and the policy really refuses an inline handler."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page, expect

from benchhub.accounts.roles import role_grant
from benchhub.imports.services import articles_load
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, sweep_document

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "seven uneven words 83 for the moderator"

# Recorded in every document of the page, before its own scripts run.
LISTEN = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI} ${where}`);
});
"""


@pytest.fixture
def csp_page(browser: Browser):
    """A page whose violations and console errors are collected."""
    context = browser.new_context(viewport={"width": 1180, "height": 900})
    context.add_init_script(LISTEN)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: console.append(str(exc)))
    yield page, console
    context.close()


def violations(page: Page) -> list[str]:
    return page.evaluate("window.__violations")


@pytest.fixture
def site(bob):
    """Seed articles, two engines' sweeps, one pending upload of the
    moderator's queue and a moderator who signs in."""
    articles_load()
    for database, scale in ((None, 1.0), ({"version_string": "10.11.19-MariaDB"}, 0.37)):
        environment = {"database": database} if database else {}
        values = {c: round(scale * 97 * c + 3.1, 3) for c in (1, 3, 8, 21, 55)}
        document = sweep_document(values, **environment)
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    pending = submission_create(submitter=bob, document=example_document()).submission
    moderator = User.objects.create_user(username="maud-7", password=PASSWORD)
    role_grant(user=moderator, role="moderator")
    run = Run.objects.filter(submission__status=Submission.Status.APPROVED).first()
    return {"pending": pending, "run": run}


def visit(page: Page, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, (url, response and response.status)
    policy = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    page.wait_for_load_state("networkidle")


def test_every_page_keeps_to_its_policy_and_still_works(live_server, csp_page, site):
    page, console = csp_page
    url = live_server.url
    pages = [
        "/",
        "/results/",
        f"/runs/{site['run'].pk}/",
        "/benchmarks/select-update/",
        "/filesystems/zfs/",
        "/accounts/login/",
        "/accounts/signup/",
        "/api/docs/",
    ]
    for path in pages:
        visit(page, url + path)
        assert violations(page) == [], path

    # a chart drawn by Chart.js, and an htmx swap redrawing it
    visit(page, url + "/compare/?benchmark=select-update&metric=throughput&x=param.clients")
    page.wait_for_function(
        "() => { const c = document.getElementById('comparison-chart');"
        " return c && Chart.getChart(c) && Chart.getChart(c).data.datasets.length > 0; }"
    )
    page.select_option("#cmp-series", "engine")
    expect(page).to_have_url(re.compile(r"series=engine"))
    page.wait_for_function(
        "() => { const c = Chart.getChart(document.getElementById('comparison-chart'));"
        " return c && c.data.datasets.length === 2; }"
    )
    assert violations(page) == []

    # signed in as a moderator: the queue, a pending submission, imports, tokens
    page.goto(url + "/accounts/login/")
    page.fill("#id_username", "maud-7")
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Sign in')")
    expect(page.locator("header")).to_contain_text("maud-7")
    for path in (
        "/moderation/",
        f"/submissions/{site['pending'].uuid}/",
        "/imports/new/",
        "/accounts/tokens/",
        "/accounts/submissions/",
    ):
        visit(page, url + path)
        assert violations(page) == [], path
    assert console == []


def test_the_policy_refuses_an_inline_handler(live_server, csp_page, site):
    """The control: markup that slipped into a page runs nothing."""
    page, _console = csp_page
    visit(page, live_server.url + "/results/")
    page.evaluate(
        """() => document.body.insertAdjacentHTML('beforeend',
             '<button id="planted" onclick="window.__ran = 17">x</button>')"""
    )
    page.click("#planted")
    page.wait_for_function("() => window.__violations.length > 0")
    assert page.evaluate("window.__ran") is None
    assert any(v.startswith("script-src") for v in violations(page)), violations(page)
