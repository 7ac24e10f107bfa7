"""A tool's output, previewed and stored, at a phone's width."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, expect

from benchhub.imports.services import tool_output_import
from tests.browser.test_queue_on_a_phone_in_browser import OVERFLOW, PASSWORD, signed_in_as_maud

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).resolve().parents[2] / "agents/tests/importers/fixtures"
PGBENCH = (FIXTURES / "pgbench15-tpcb.txt").read_text()


def test_a_stored_imports_measurements_fit_a_phone(live_server, browser: Browser):
    """Metric, point, value and unit (failed_transactions, clients=4, a
    value to the millionth) made the page some 460 px wide: the whole page
    scrolled sideways, not the table."""
    user = User.objects.create_user(username="maud", password=PASSWORD)
    stored = tool_output_import(submitter=user, tool="pgbench", text=PGBENCH).submission
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = signed_in_as_maud(
        context, f"{live_server.url}/accounts/login/?next=/imports/{stored.uuid}/"
    )
    expect(page.locator("table.measurements tbody tr").first).to_be_visible()
    page.wait_for_load_state("load")

    overflow = page.evaluate(OVERFLOW)
    context.close()

    assert overflow == {"scroll": 390, "outside": []}
