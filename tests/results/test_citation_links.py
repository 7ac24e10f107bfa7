"""A citation's address is a link only when it is a web address: javascript:,
data: and the like are refused on upload, naming the field, and a stored one
(written before the check, or around it) is shown as text on every page."""

from __future__ import annotations

import pytest

from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document

HOSTILE = "javascript:alert(document.domain)//"


def curated(url: str) -> dict:
    document = example_document()
    document["source"] = {
        "kind": "curated",
        "citation": {"title": "Seed 004: select-update", "url": url},
    }
    return document


@pytest.mark.parametrize(
    "url",
    [
        HOSTILE,
        "JavaScript:alert(1)",
        " javascript:alert(1)",
        "data:text/html,<b>x</b>",
        "//evil.example/x",
        "http://",
    ],
)
def test_an_address_that_is_not_http_is_refused_naming_the_field(alice_api, url):
    response = alice_api.post("/api/v1/submissions/", curated(url), format="json")

    assert response.status_code == 400
    (detail,) = response.json()["error"]["details"]
    assert detail["path"] == "$.source.citation.url"
    assert "is not a web address that begins with http:// or https://" in detail["message"]
    assert not Submission.objects.exists()


@pytest.mark.parametrize("url", ["https://example.org/seed-004.html", "HTTP://Example.org/a?b=c"])
def test_a_web_address_is_stored_and_linked(client, alice_api, url):
    response = alice_api.post("/api/v1/submissions/", curated(url), format="json")
    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    Submission.objects.update(status=Submission.Status.APPROVED)

    page = client.get(f"/runs/{submission.runs.get().pk}/").content.decode()

    assert f'<a href="{url.replace("&", "&amp;")}" rel="nofollow noopener">Seed 004' in page


def test_a_stored_script_address_is_shown_as_text_on_every_page(client, bob):
    outcome = submission_create(
        submitter=bob,
        document=curated("https://example.org/x"),
        status=Submission.Status.APPROVED,
    )
    # as if stored before uploads were checked
    Submission.objects.filter(pk=outcome.submission.pk).update(
        citation={"title": "Seed 004: select-update", "url": HOSTILE}
    )
    run = outcome.submission.runs.get()

    for url in (
        f"/runs/{run.pk}/",
        f"/submissions/{outcome.submission.uuid}/",
        f"/benchmarks/{run.benchmark.name}/",
    ):
        page = client.get(url).content.decode()
        assert "Seed 004: select-update" in page, url
        assert "javascript:" not in page.lower(), url
