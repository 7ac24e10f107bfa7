"""POST /api/v1/submissions/<uuid>/moderation/ and …/reports/."""

from __future__ import annotations

from benchhub.moderation.models import AuditEntry
from benchhub.results.models import Submission
from tests.moderation.conftest import upload


def moderate(client, submission, action, reason=None):
    body = {"action": action} if reason is None else {"action": action, "reason": reason}
    return client.post(f"/api/v1/submissions/{submission.uuid}/moderation/", body, format="json")


def test_a_moderator_approves_and_gets_the_new_state(maud_api, alice):
    submission = upload(alice)

    response = moderate(maud_api, submission, "approve")

    assert response.status_code == 200
    assert response.json() == {
        "uuid": str(submission.uuid),
        "status": "approved",
        "status_reason": "",
    }


def test_rejecting_without_a_reason_is_a_400_naming_it(maud_api, alice):
    submission = upload(alice)

    response = moderate(maud_api, submission, "reject", reason="")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "reason_required"
    assert error["details"][0]["path"] == "$.reason"
    assert Submission.objects.get(pk=submission.pk).status == "pending"


def test_approving_a_deleted_one_is_a_409(maud_api, alice):
    submission = upload(alice)
    moderate(maud_api, submission, "delete")

    response = moderate(maud_api, submission, "approve")

    assert response.status_code == 409
    assert "deleted submission cannot be approved" in response.json()["error"]["message"]


def test_approving_an_approved_one_is_a_409(maud_api, alice):
    submission = upload(alice)
    moderate(maud_api, submission, "approve")

    response = moderate(maud_api, submission, "approve")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert AuditEntry.objects.count() == 1


def test_a_submitter_approving_their_own_is_a_403(alice_api, alice):
    submission = upload(alice)

    response = moderate(alice_api, submission, "approve")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_a_submitter_hides_their_own_and_the_public_loses_it(
    alice_api, alice, anonymous_api, maud_api
):
    submission = upload(alice)
    moderate(maud_api, submission, "approve")

    response = moderate(alice_api, submission, "hide")

    assert response.json()["status"] == "hidden"
    url = f"/api/v1/submissions/{submission.uuid}/"
    assert anonymous_api.get(url).status_code == 404
    assert alice_api.get(url).status_code == 200


def test_an_unknown_action_is_a_400_listing_the_choices(maud_api, alice):
    response = moderate(maud_api, upload(alice), "<script>")

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["path"] == "$.action"


def test_a_misspelt_field_is_a_400_naming_it_and_nothing_changes(maud_api, alice, bob_api):
    submission = upload(alice)

    misspelt = maud_api.post(
        f"/api/v1/submissions/{submission.uuid}/moderation/",
        {"action": "approve", "reson": "checked"},
        format="json",
    )
    report = bob_api.post(
        f"/api/v1/submissions/{submission.uuid}/reports/",
        {"reason": "too fast", "severity": "high"},
        format="json",
    )

    assert misspelt.status_code == 400
    assert misspelt.json()["error"]["details"] == [
        {"path": "$.reson", "message": "unknown field; this endpoint takes action, reason"}
    ]
    assert report.status_code == 400
    assert report.json()["error"]["details"][0]["path"] == "$.severity"
    assert Submission.objects.get(pk=submission.pk).status == "pending"
    assert not AuditEntry.objects.exists()


def test_a_reader_reports_an_approved_one_and_it_stays_approved(bob_api, alice, maud_api):
    submission = upload(alice)
    moderate(maud_api, submission, "approve")

    response = bob_api.post(
        f"/api/v1/submissions/{submission.uuid}/reports/",
        {"reason": "10x faster than the same machine elsewhere"},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["status"] == "approved"
    entry = AuditEntry.objects.get(action="report")
    assert entry.reason.startswith("10x faster")


def test_a_report_without_a_reason_is_a_400(bob_api, alice, maud_api):
    submission = upload(alice)
    moderate(maud_api, submission, "approve")

    response = bob_api.post(f"/api/v1/submissions/{submission.uuid}/reports/", {}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["path"] == "$.reason"


def test_anonymous_cannot_report(anonymous_api, alice, maud_api):
    submission = upload(alice)
    moderate(maud_api, submission, "approve")

    response = anonymous_api.post(
        f"/api/v1/submissions/{submission.uuid}/reports/", {"reason": "x"}, format="json"
    )

    assert response.status_code == 401
