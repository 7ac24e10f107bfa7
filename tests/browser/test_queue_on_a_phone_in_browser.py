"""The moderation queue and "My submissions" at a phone's width, as a
moderator and a submitter use them on an agent upload: long mount options,
an evidence table of six columns, four action buttons."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, BrowserContext, Page, expect

from benchhub.accounts.roles import role_grant
from benchhub.accounts.services import api_token_create
from benchhub.moderation.services import alias_rule_add, submission_moderate
from benchhub.results.services import submission_create
from tests.factories import example_document

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a long enough passphrase 42"
MOUNT = ["discard", "relatime", "resgid=65534", "resuid=65534", "resv_strict", "rw"]

# How far the page scrolls sideways, and every element that sticks out of
# the viewport on the right (but for those a scrolling box holds).
OVERFLOW = """() => ({
  scroll: document.documentElement.scrollWidth,
  outside: [...document.querySelectorAll('main *')]
    .filter(e => !e.closest('.table-scroll'))
    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
    .map(e => e.tagName + ': ' + (e.textContent || e.name || '').trim().slice(0, 40)),
})"""


def signed_in_as_maud(context: BrowserContext, url: str) -> Page:
    page = context.new_page()
    page.goto(url)
    page.fill("#id_username", "maud")
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Sign in')")
    return page


@pytest.mark.parametrize(
    ("role", "url"), [("moderator", "/moderation/"), ("submitter", "/accounts/submissions/")]
)
def test_a_submission_card_fits_a_phone(live_server, browser: Browser, role, url):
    user = User.objects.create_user(username="maud", password=PASSWORD)
    if role == "moderator":
        role_grant(user=user, role="moderator")
    document = example_document(
        storage={"kind": "virtual", "filesystem": "ext4", "mount_options": MOUNT}
    )
    submission_create(submitter=user, document=document)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = signed_in_as_maud(context, live_server.url + "/accounts/login/?next=" + url)
    expect(page.locator(".queue-item")).to_have_count(1)
    page.wait_for_load_state("load")  # the stylesheets too

    overflow = page.evaluate(OVERFLOW)
    context.close()

    assert overflow == {"scroll": 390, "outside": []}


@pytest.mark.parametrize(
    "url", ["/moderation/audit/", "/accounts/tokens/", "/moderation/dimensions/"]
)
def test_the_audit_log_and_the_token_list_fit_a_phone(live_server, browser: Browser, url):
    """Seven columns of the audit log, five of the tokens (with Revoke last),
    six of the alias rules (with Remove last): the page itself scrolled
    sideways, twice a phone's width (the alias rules: by 321 px)."""
    user = User.objects.create_user(username="maud", password=PASSWORD)
    role_grant(user=user, role="moderator")
    submission = submission_create(submitter=user, document=example_document()).submission
    submission_moderate(submission=submission, actor=user, action="approve")
    api_token_create(user=user, name="the laptop the agent runs on")
    alias_rule_add(
        actor=user,
        dimension="storage",
        field="io_scheduler",
        from_value="mq-deadline",
        to_value="deadline",
        reason="blk-mq's deadline",
    )
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = signed_in_as_maud(context, live_server.url + "/accounts/login/?next=" + url)
    expect(page.locator("table.data tbody tr").first).to_be_visible()
    page.wait_for_load_state("load")

    overflow = page.evaluate(OVERFLOW)
    context.close()

    assert overflow == {"scroll": 390, "outside": []}


# The select's width against the one it takes when left to its options
# (shrink to fit, out of the flow that stretches it): Chromium then makes
# room for the longest option and its arrow.
SELECT_FITS = """(select) => {
  const free = select.cloneNode(true);
  free.removeAttribute('id');
  free.style.position = 'absolute';
  free.style.width = 'auto';
  free.style.minWidth = '0';
  free.style.maxWidth = 'none';
  select.parentNode.appendChild(free);
  const needs = free.getBoundingClientRect().width;
  free.remove();
  return {has: Math.round(select.getBoundingClientRect().width), needs: Math.round(needs)};
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_queue_state_filter_shows_its_longest_option_whole(
    live_server, browser: Browser, width
):
    """The default option, "waiting (pending and flagged)", was cut to
    "waiting (pending and flagg" in its 15rem column at a desktop's width."""
    user = User.objects.create_user(username="maud", password=PASSWORD)
    role_grant(user=user, role="moderator")
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = signed_in_as_maud(context, live_server.url + "/accounts/login/?next=/moderation/")
    expect(page.locator("#id_state")).to_be_visible()
    page.wait_for_load_state("load")

    fit = page.locator("#id_state").evaluate(SELECT_FITS)
    overflow = page.evaluate(OVERFLOW)
    context.close()

    assert fit["has"] >= fit["needs"], fit
    assert overflow["scroll"] == width
