"""Hostile bodies to the moderation endpoints: a clear 4xx naming the
problem, never a 5xx, nothing changed."""

from __future__ import annotations

import pytest

from benchhub.moderation.models import AuditEntry
from tests.moderation.conftest import upload

BODIES = [
    ("not json", "text/plain", 415),
    ("{", "application/json", 400),
    ('["approve"]', "application/json", 400),
    ('{"action": ["approve"]}', "application/json", 400),
    ('{"action": "approve", "reason": {"x": 1}}', "application/json", 400),
    ('{"action": "reject", "reason": "' + "x" * 3000 + '"}', "application/json", 400),
    ('{"action": "reject", "reason": "nul \\u0000 here"}', "application/json", 400),
    ('{"action": "APPROVE"}', "application/json", 400),
    ('{"action": "report", "reason": "not through this door"}', "application/json", 400),
]


@pytest.mark.parametrize(("body", "content_type", "expected"), BODIES)
def test_a_hostile_moderation_body_is_a_4xx_and_changes_nothing(
    maud_api, alice, body, content_type, expected
):
    submission = upload(alice)

    answer = maud_api.generic(
        "POST",
        f"/api/v1/submissions/{submission.uuid}/moderation/",
        body.encode(),
        content_type=content_type,
    )

    assert answer.status_code == expected, answer.content
    assert "error" in answer.json()
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("endpoint", "action"), [("moderation", "reject"), ("moderation", "hide"), ("reports", None)]
)
@pytest.mark.parametrize(
    ("reason", "kind"), [(5, "the number 5"), (2.5, "the number 2.5"), (True, "a boolean")]
)
def test_a_reason_that_is_not_a_string_is_a_400_naming_it(
    maud_api, bob_api, alice, endpoint, action, reason, kind
):
    """{"reason": 5} was stored as the reason "5", which nobody wrote."""
    submission = upload(alice)
    client, body = (maud_api, {"action": action}) if action else (bob_api, {})

    answer = client.post(
        f"/api/v1/submissions/{submission.uuid}/{endpoint}/",
        {**body, "reason": reason},
        format="json",
    )

    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert error["details"] == [
        {"path": "$.reason", "message": f"must be a JSON string, not {kind}"}
    ]
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/submissions/not-a-uuid/moderation/",
        "/api/v1/submissions/00000000-0000-0000-0000-000000000000/moderation/",
        "/api/v1/submissions/00000000-0000-0000-0000-000000000000/reports/",
    ],
)
def test_an_unknown_submission_is_a_404_in_the_error_shape(maud_api, path):
    body = {"reason": "x"} if path.endswith("/reports/") else {"action": "approve", "reason": "x"}
    answer = maud_api.post(path, body, format="json")

    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"


def test_the_queue_form_survives_garbage(maud, alice):
    from tests.moderation.conftest import web

    upload(alice)
    client = web(maud)

    for data in (
        {"do": "approve", "submission": ["not-a-uuid", "'; DROP TABLE x"]},
        {"do": "explode 123"},
        {},
    ):
        assert client.post("/moderation/act/", data).status_code == 302
    for query in ({"page": "-1"}, {"page": "x" * 50}, {"state": "<script>"}, {"submitter": "\x00"}):
        assert client.get("/moderation/", query).status_code == 200
    assert not AuditEntry.objects.exists()
