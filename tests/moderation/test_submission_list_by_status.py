"""GET /api/v1/submissions/?status=…: a moderator's script finds its work
(what the moderation queue shows); anybody else filters what they may see."""

from __future__ import annotations

import pytest

from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Submission
from benchhub.results.selectors import SUBMISSION_LIST_STATUSES
from tests.moderation.conftest import upload, web


def listed(client, query: str) -> set[str]:
    response = client.get(f"/api/v1/submissions/?{query}")
    assert response.status_code == 200, response.content
    return {row["uuid"] for row in response.json()["results"]}


def test_a_moderator_lists_everybodys_pending_uploads(maud_api, alice, bob, trent):
    alices, bobs = upload(alice), upload(bob)
    upload(trent)  # approved on arrival

    assert listed(maud_api, "status=pending") == {str(alices.uuid), str(bobs.uuid)}


def test_waiting_is_the_queues_default_pending_flagged_and_reported(
    maud_api, maud, bob_api, alice, bob, trent
):
    pending = upload(alice)
    flagged = upload(bob)
    submission_moderate(submission=flagged, action="flag", actor=maud, reason="too fast")
    reported = upload(trent)
    bob_api.post(f"/api/v1/submissions/{reported.uuid}/reports/", {"reason": "odd"}, format="json")
    upload(trent)  # approved, not reported: nothing to do

    assert listed(maud_api, "status=waiting") == {
        str(pending.uuid),
        str(flagged.uuid),
        str(reported.uuid),
    }


def test_a_submitter_filters_only_what_they_may_see(alice_api, alice, bob, trent):
    own = upload(alice)
    upload(bob)
    public = upload(trent)

    assert listed(alice_api, "status=pending") == {str(own.uuid)}
    assert listed(alice_api, "status=waiting") == {str(own.uuid)}
    assert listed(alice_api, "status=approved") == {str(public.uuid)}


def test_anonymous_status_pending_is_empty_not_everybodys(anonymous_api, alice):
    upload(alice)

    assert listed(anonymous_api, "status=pending") == set()


def test_an_unknown_status_is_a_400_listing_the_known_ones(maud_api):
    response = maud_api.get("/api/v1/submissions/?status=queued")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"][0]["path"] == "$.status"
    assert "waiting, pending, approved" in error["message"]


def test_status_given_twice_is_a_400(maud_api):
    response = maud_api.get("/api/v1/submissions/?status=pending&status=flagged")

    assert response.status_code == 400
    assert "more than once" in response.json()["error"]["message"]


def deleted_after_a_report(alice, bob_api) -> Submission:
    """Reported by a reader, then deleted by its submitter: its report stays open."""
    submission = upload(alice, status=Submission.Status.APPROVED)
    report = bob_api.post(
        f"/api/v1/submissions/{submission.uuid}/reports/", {"reason": "odd"}, format="json"
    )
    assert report.status_code == 200, report.content
    submission_moderate(submission=submission, action="delete", actor=alice)
    return submission


@pytest.mark.parametrize("status", SUBMISSION_LIST_STATUSES)
def test_what_a_moderator_lists_they_can_open(maud_api, alice, bob_api, status):
    """status=deleted listed deleted submissions whose detail was a 404 to
    the same moderator: deleted is gone for everyone but the audit log."""
    deleted = deleted_after_a_report(alice, bob_api)
    upload(alice)

    shown = listed(maud_api, f"status={status}")

    assert str(deleted.uuid) not in shown
    for uuid in shown:
        assert maud_api.get(f"/api/v1/submissions/{uuid}/").status_code == 200


def test_the_queue_never_shows_a_deleted_submission(maud, alice, bob_api):
    deleted = deleted_after_a_report(alice, bob_api)

    for query in ({}, {"state": "deleted"}):
        page = web(maud).get("/moderation/", query).content.decode()
        assert str(deleted.uuid)[:8] not in page, query
    assert '<option value="deleted"' not in page
