from itertools import pairwise

import pytest
from playwright.sync_api import Page, expect

from benchhub.accounts.roles import role_grant
from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import small_document

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a long enough passphrase 42"


def test_home_page_lists_the_seed_articles(live_server, page: Page):
    articles_load()

    page.goto(live_server.url + "/")

    expect(page.locator("h1")).to_contain_text("compare and reproduce")
    rows = page.locator("#latest-submissions tbody tr")
    expect(rows).to_have_count(5)
    expect(page.locator("#latest-submissions")).to_contain_text("Тестирование MySQL: ZFS vs UFS")
    expect(page.locator("#latest-submissions")).to_contain_text("sql-bench")
    # Vendored htmx is served by BenchHub itself and running.
    assert page.evaluate("typeof window.htmx") == "object"
    # The stylesheet applied: the header is dark.
    header = page.locator(".site-header")
    assert header.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(29, 35, 48)"


def test_user_text_is_shown_as_text_never_run(live_server, page: Page, bob):
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    document = small_document()
    document["source"] = {"kind": "curated", "citation": {"title": hostile}}
    submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    page.goto(live_server.url + "/")

    expect(page.locator("#latest-submissions")).to_contain_text(hostile)
    assert page.evaluate("window.pwned") is None


def test_a_moderators_header_fits_a_phone_one_link_per_label(live_server, browser, alice):
    """At 390 px the header wraps between its links, never inside one, and
    no two of them touch ("My submissions" ran into "API tokens")."""
    role_grant(user=alice, role="moderator")
    alice.set_password(PASSWORD)
    alice.save()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(live_server.url + "/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Sign in')")
    expect(page.locator(".site-header")).to_contain_text("Moderation")

    boxes = page.evaluate(
        """() => [...document.querySelectorAll('.site-header nav a, .site-header nav button')]
          .map(e => { const r = e.getBoundingClientRect();
                      return {text: e.textContent.trim(), left: r.left, right: r.right,
                              top: r.top, bottom: r.bottom,
                              ems: r.height / parseFloat(getComputedStyle(e).fontSize)}; })"""
    )
    context.close()

    assert {box["text"] for box in boxes} >= {"My submissions", "API tokens", "Moderation"}
    for box in boxes:
        assert box["right"] <= 390, box
        assert box["ems"] < 1.9, box  # one line of text, where two are 2.3 em high
    for first, second in pairwise(boxes):
        same_row = first["top"] < second["bottom"] and second["top"] < first["bottom"]
        if same_row:
            assert second["left"] - first["right"] >= 6, (first, second)


def test_on_a_phone_each_latest_submission_is_readable_without_scrolling_sideways(
    live_server, browser
):
    """Seven columns in 390 px: the table scrolled inside itself and each
    row's Open link was off screen, to the right of the database."""
    articles_load()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()

    page.goto(live_server.url + "/")

    table = page.locator("#latest-submissions .table-scroll")
    assert table.evaluate("e => e.scrollWidth <= e.clientWidth")
    first_open = page.locator("#latest-submissions tbody tr").first.get_by_role("link", name="Open")
    box = first_open.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390
    context.close()
