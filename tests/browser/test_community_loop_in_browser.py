"""The community loop in Chromium, as a stranger and a moderator live it:
sign up → create an API token → upload a run measured by `benchhub-agent`
on the real PostgreSQL → see it pending in "My submissions" → a moderator
approves it from the queue with one click → it is public.

Screenshots of every step are kept under var/artifacts/community-loop/
(printed at the end) to look at."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Page, expect

from benchhub.accounts.roles import role_grant
from benchhub.moderation.models import AuditEntry
from benchhub.results.models import Submission
from tests.agent.databases import measured_database

pytestmark = pytest.mark.django_db(transaction=True)

ARTIFACTS = settings.BASE_DIR / "var" / "artifacts" / "community-loop"
AGENT = Path(sys.executable).parent / "benchhub-agent"
PASSWORD = "a long enough passphrase 42"


@pytest.fixture
def bench_dsn(django_db_setup) -> Iterator[str]:
    """A database of this suite's own for the agent to measure in."""
    with measured_database("bench") as dsn:
        yield dsn


def shoot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def sign_in(page: Page, url: str, username: str) -> None:
    page.goto(f"{url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Sign in')")


def test_a_stranger_uploads_with_the_agent_and_a_moderator_publishes_it(
    live_server, browser: Browser, page: Page, bench_dsn, tmp_path
):
    url = live_server.url
    moderator = User.objects.create_user(username="maud", password=PASSWORD)
    role_grant(user=moderator, role="moderator")

    # 1. sign up
    page.goto(f"{url}/")
    page.click("header >> text=Sign up")
    page.fill("#id_username", "newcomer")
    page.fill("#id_email", "newcomer@example.org")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("button:has-text('Sign up')")
    expect(page.locator("header")).to_contain_text("newcomer")
    expect(page.locator("h1")).to_have_text("API tokens")
    shoot(page, "01-signed-up")

    # 2. a token, shown once
    page.fill("#id_name", "my laptop")
    page.click("button:has-text('Create token')")
    token = page.locator("#new-token").inner_text().strip()
    assert re.fullmatch(r"bh_\S{30,}", token)
    expect(page.locator("#tokens")).to_contain_text("my laptop")
    shoot(page, "02-token-created")

    # 3. the agent measures select-update on PostgreSQL and uploads with it
    measured = subprocess.run(
        [
            str(AGENT), "run", "select-update", "--dsn", bench_dsn, "--clients", "1,2",
            "--transactions", "200", "--repeat", "1", "--upload",
            "--server", url, "--token", token,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            "BENCHHUB_OUTBOX": str(tmp_path / "outbox"),
            "BENCHHUB_CONFIG": str(tmp_path / "none.toml"),
            "PATH": "/usr/bin:/bin",
        },
    )  # fmt: skip
    assert measured.returncode == 0, measured.stdout + measured.stderr
    submission = Submission.objects.get(submitter__username="newcomer")
    assert submission.status == Submission.Status.PENDING

    # 4. pending in "My submissions"; not public yet
    page.click("header >> text=My submissions")
    item = page.locator(f"#item-{submission.uuid}")
    expect(item.locator(".status")).to_have_text("Pending")
    expect(item).to_contain_text("select-update")
    shoot(page, "03-pending-in-my-submissions")
    anonymous = browser.new_context()
    reader = anonymous.new_page()
    assert reader.goto(f"{url}/submissions/{submission.uuid}/").status == 404

    # 5. the moderator approves it from the queue, with one click
    page.click("header >> button:has-text('Sign out')")
    expect(page.locator("header")).to_contain_text("Sign in")
    sign_in(page, url, "maud")
    page.click("header >> text=Moderation")
    queued = page.locator(f"#item-{submission.uuid}")
    expect(queued).to_contain_text("newcomer")
    expect(queued).to_contain_text("postgresql")
    shoot(page, "04-moderation-queue")
    queued.locator("button.act-approve").click()
    expect(page.locator(".messages")).to_contain_text("Approve: 1 submission")
    expect(page.locator(f"#item-{submission.uuid}")).to_have_count(0)
    shoot(page, "05-approved")

    # 6. public, and in the audit log
    submission.refresh_from_db()
    assert submission.status == Submission.Status.APPROVED
    assert reader.goto(f"{url}/submissions/{submission.uuid}/").status == 200
    expect(reader.locator("body")).to_contain_text("select-update")
    reader.screenshot(path=str(ARTIFACTS / "06-public.png"), full_page=True)
    anonymous.close()
    page.goto(f"{url}/moderation/audit/")
    expect(page.locator("#audit tbody tr").first).to_contain_text("maud")
    expect(page.locator("#audit tbody tr").first).to_contain_text("approve")
    shoot(page, "07-audit-log")
    assert AuditEntry.objects.filter(submission=submission, actor=moderator).count() == 1
    print(f"screenshots: {ARTIFACTS}")


def test_the_queue_works_from_the_keyboard(live_server, page: Page, alice):
    from tests.moderation.conftest import upload

    moderator = User.objects.create_user(username="maud", password=PASSWORD)
    role_grant(user=moderator, role="moderator")
    first, second = upload(alice, 1000.0), upload(alice, 2000.0)
    sign_in(page, live_server.url, "maud")
    page.goto(f"{live_server.url}/moderation/")

    page.locator(".queue-item").first.focus()
    page.keyboard.press("j")  # to the second
    page.keyboard.press("r")  # reject it: the cursor goes to its reason
    page.keyboard.type("clients=2 on one core: re-run unpinned")
    page.keyboard.press("Enter")
    expect(page.locator(".messages")).to_contain_text("Reject: 1 submission")
    page.keyboard.press("a")  # the list is back, focused on its first item
    expect(page.locator(".messages")).to_contain_text("Approve: 1 submission")
    shoot(page, "08-keyboard")

    statuses = dict(Submission.objects.values_list("pk", "status"))
    assert (statuses[first.pk], statuses[second.pk]) == ("approved", "rejected")
    assert Submission.objects.get(pk=second.pk).status_reason.startswith("clients=2")


def test_deleting_asks_first_and_hiding_does_not(live_server, page: Page):
    from tests.moderation.conftest import upload

    owner = User.objects.create_user(username="owen", password=PASSWORD)
    submission = upload(owner)
    sign_in(page, live_server.url, "owen")
    page.goto(f"{live_server.url}/accounts/submissions/")
    item = page.locator(f"#item-{submission.uuid}")

    page.once("dialog", lambda dialog: dialog.dismiss())
    item.locator("button:has-text('Delete')").click()
    expect(item.locator(".status")).to_have_text("Pending")
    item.locator("button:has-text('Hide')").click()
    expect(page.locator(f"#item-{submission.uuid} .status")).to_have_text("Hidden")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f"#item-{submission.uuid} button:has-text('Delete')").click()
    expect(page.locator(f"#item-{submission.uuid}")).to_have_count(0)
    expect(page.locator(".messages")).to_contain_text("now deleted")

    assert Submission.objects.get(pk=submission.pk).status == "deleted"
