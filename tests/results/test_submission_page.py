"""The submission page /submissions/<uuid>/: who sees it, what a pending one
waits for, its runs, source and moderation history, hostile text shown as
text (on the run page too), the API's links to the pages, and its queries."""

from __future__ import annotations

import html
import json

from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Submission
from tests.factories import example_document, small_document
from tests.results.run_pages import queries_of, run_of, store


def test_the_public_sees_approved_runs_only_and_a_submitter_their_own_pending(client, alice, bob):
    pending = store(alice, small_document(), status=Submission.Status.PENDING)
    run = run_of(pending)

    assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.get(f"/submissions/{pending.uuid}/").status_code == 404
    client.force_login(bob)
    assert client.get(f"/runs/{run.pk}/").status_code == 404
    assert client.get(f"/submissions/{pending.uuid}/").status_code == 404
    client.force_login(alice)
    assert client.get(f"/runs/{run.pk}/").status_code == 200
    assert client.get(f"/submissions/{pending.uuid}/").status_code == 200


def test_a_pending_submission_says_what_it_waits_for_and_who_sees_it(client, alice):
    """The agent prints the submission's URL; its page said only "pending"."""
    submission = store(alice, small_document(), status=Submission.Status.PENDING)
    client.force_login(alice)

    page = client.get(f"/submissions/{submission.uuid}/").content.decode()
    status = page[page.index('<th scope="row">Status</th>') :].split("</tr>")[0]

    assert "waits for a moderator" in status
    assert "only you and the moderators see it" in status
    assert 'href="/accounts/submissions/"' in status

    submission_moderate(submission=submission, actor=None, action="approve")
    page = client.get(f"/submissions/{submission.uuid}/").content.decode()
    assert "waits for a moderator" not in page


def test_the_submission_page_lists_its_runs_source_tool_command_and_status(client, bob):
    document = example_document()
    document["runs"].append(json.loads(json.dumps(document["runs"][0])))
    submission = store(bob, document)

    page = client.get(f"/submissions/{submission.uuid}/").content.decode()

    runs = list(submission.runs.order_by("position"))
    for run in runs:
        assert f'href="/runs/{run.pk}/"' in page
    assert "measured by the agent" in page and "approved" in page
    assert submission.command and html.escape(submission.command) in page


def test_the_moderation_history_is_shown_to_its_submitter_only(client, alice, bob):
    submission = store(alice, small_document(), status=Submission.Status.PENDING)
    submission_moderate(
        submission=submission, actor=None, action="reject", reason="numbers <b>too</b> round"
    )
    client.force_login(alice)

    page = client.get(f"/submissions/{submission.uuid}/").content.decode()

    history = page[page.index('id="moderation-history"') :]
    assert "Reject by BenchHub" in history
    assert "numbers &lt;b&gt;too&lt;/b&gt; round" in history
    client.force_login(bob)
    assert client.get(f"/submissions/{submission.uuid}/").status_code == 404


HOSTILE = "<img src=x onerror=alert(1)>"


def test_a_hostile_hardware_name_is_shown_as_text(client, bob):
    document = example_document(
        hardware={"cpu": HOSTILE, "cores": 2}, storage={"filesystem": HOSTILE}
    )
    submission = store(bob, document)

    for url in (f"/runs/{run_of(submission).pk}/", f"/submissions/{submission.uuid}/"):
        page = client.get(url).content.decode()
        assert "<img src=x" not in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_api_answers_each_submission_and_run_with_its_page(anonymous_api, alice_api, bob):
    document = small_document()
    stored = alice_api.post("/api/v1/submissions/", document, format="json").json()
    assert stored["html_url"] == f"http://testserver/submissions/{document['uuid']}/"
    run_id = stored["runs"][0]["id"]
    assert stored["runs"][0]["html_url"] == f"http://testserver/runs/{run_id}/"

    approved = store(bob, small_document())
    listed = anonymous_api.get("/api/v1/submissions/").json()["results"][0]
    assert listed["html_url"] == f"http://testserver/submissions/{approved.uuid}/"
    run = run_of(approved)
    detail = anonymous_api.get(f"/api/v1/runs/{run.pk}/").json()
    assert detail["html_url"] == f"http://testserver/runs/{run.pk}/"
    assert anonymous_api.get(detail["html_url"]).status_code == 200


def test_the_submission_page_reads_a_fixed_number_of_queries(client, bob):
    def submission_with(runs: int) -> Submission:
        document = example_document()
        document["runs"] = [json.loads(json.dumps(document["runs"][0])) for _ in range(runs)]
        return store(bob, document)

    one, twelve = submission_with(1), submission_with(12)

    # the submission, then its runs with their environment and counts
    counted = queries_of(client, f"/submissions/{one.uuid}/")
    assert queries_of(client, f"/submissions/{twelve.uuid}/") == counted <= 3
