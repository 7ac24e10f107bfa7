"""GET /api/v1/submissions/?status=…: a moderator's script finds its work
(what the moderation queue shows); anybody else filters what they may see."""

from __future__ import annotations

from benchhub.moderation.services import submission_moderate
from tests.moderation.conftest import upload


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
