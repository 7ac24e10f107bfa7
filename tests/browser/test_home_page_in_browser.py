import pytest
from playwright.sync_api import Page, expect

from benchhub.imports.services import articles_load
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import small_document

pytestmark = pytest.mark.django_db(transaction=True)


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
