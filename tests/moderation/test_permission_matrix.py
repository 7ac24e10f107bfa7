"""Who may do what, as one table: every page, API endpoint and action of
the community features by every role. Alice ("A") owns the submission acted
on; Bob ("B") is another submitter; Trent is a trusted submitter; Maud a
moderator; Root an admin. Each cell is the HTTP status the request gets,
and where it changes something, the change is checked too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.test import Client
from rest_framework.test import APIClient

from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Submission
from tests.conftest import _client_for
from tests.factories import small_document
from tests.moderation.conftest import upload

S = Submission.Status
ROLES = ("anonymous", "alice", "bob", "trent", "maud", "root")

# A row: what is tried, the state of A's submission before, then the status
# each role gets, in the order of ROLES.
#   what                                      A's state   anon alice bob trent maud root
MATRIX = [
    ("page: API tokens",                       None,       302, 200, 200, 200, 200, 200),
    ("page: my submissions",                   None,       302, 200, 200, 200, 200, 200),
    ("page: tool upload",                      None,       302, 200, 200, 200, 200, 200),
    ("page: moderation queue",                 None,       302, 403, 403, 403, 200, 200),
    ("page: audit log",                        None,       302, 403, 403, 403, 200, 200),
    ("page: dimension values",                 None,       302, 403, 403, 403, 200, 200),
    ("page: django admin",                     None,       302, 302, 302, 302, 302, 200),
    ("page: A's pending upload",               S.PENDING,  404, 200, 404, 404, 404, 404),
    ("queue: approve A's",                     S.PENDING,  302, 403, 403, 403, 200, 200),
    ("queue: add an alias rule",               None,       302, 403, 403, 403, 302, 302),
    ("mine: hide A's",                         S.APPROVED, 302, 302, 404, 404, 404, 404),
    ("mine: delete A's",                       S.APPROVED, 302, 302, 404, 404, 404, 404),
    ("api: upload",                            None,       401, 201, 201, 201, 201, 201),
    ("api: read A's pending",                  S.PENDING,  404, 200, 404, 404, 200, 200),
    ("api: read A's hidden",                   S.HIDDEN,   404, 200, 404, 404, 200, 200),
    ("page: A's pending run",                  S.PENDING,  404, 200, 404, 404, 200, 200),
    ("page: A's rejected run",                 S.REJECTED, 404, 200, 404, 404, 200, 200),
    ("page: A's deleted run",                  S.DELETED,  404, 404, 404, 404, 404, 404),
    ("api: read A's pending run",              S.PENDING,  404, 200, 404, 404, 200, 200),
    ("api: read A's approved",                 S.APPROVED, 200, 200, 200, 200, 200, 200),
    ("api: approve A's pending",               S.PENDING,  401, 403, 404, 404, 200, 200),
    ("api: reject A's pending",                S.PENDING,  401, 403, 404, 404, 200, 200),
    ("api: flag A's approved",                 S.APPROVED, 401, 403, 403, 403, 200, 200),
    ("api: request a re-run of A's",           S.APPROVED, 401, 403, 403, 403, 200, 200),
    ("api: hide A's approved",                 S.APPROVED, 401, 200, 403, 403, 200, 200),
    ("api: unhide A's hidden",                 S.HIDDEN,   401, 200, 404, 404, 200, 200),
    ("api: delete A's approved",               S.APPROVED, 401, 200, 403, 403, 200, 200),
    ("api: report A's approved",               S.APPROVED, 401, 403, 200, 200, 200, 200),
]  # fmt: skip

# What a request that was allowed leaves A's submission as (the others must
# leave it as it was).
EFFECT = {
    "queue: approve A's": S.APPROVED,
    "mine: hide A's": S.HIDDEN,
    "mine: delete A's": S.DELETED,
    "api: approve A's pending": S.APPROVED,
    "api: reject A's pending": S.REJECTED,
    "api: flag A's approved": S.FLAGGED,
    "api: request a re-run of A's": S.RERUN,
    "api: hide A's approved": S.HIDDEN,
    "api: unhide A's hidden": S.APPROVED,
    "api: delete A's approved": S.DELETED,
    # A report changes no status: it puts the result in front of the moderators.
    "api: report A's approved": S.APPROVED,
}


@dataclass
class Actor:
    web: Client
    api: APIClient


def _moderation(action: str, reason: str = "because") -> Callable:
    def call(actor: Actor, submission: Submission) -> int:
        return actor.api.post(
            f"/api/v1/submissions/{submission.uuid}/moderation/",
            {"action": action, "reason": reason},
            format="json",
        ).status_code

    return call


def _page(url: str) -> Callable:
    return lambda actor, submission: actor.web.get(url).status_code


REQUESTS: dict[str, Callable[[Actor, Submission | None], int]] = {
    "page: API tokens": _page("/accounts/tokens/"),
    "page: my submissions": _page("/accounts/submissions/"),
    "page: tool upload": _page("/imports/new/"),
    "page: moderation queue": _page("/moderation/"),
    "page: audit log": _page("/moderation/audit/"),
    "page: dimension values": _page("/moderation/dimensions/"),
    "page: django admin": _page("/admin/"),
    "page: A's pending upload": lambda a, s: a.web.get(f"/imports/{s.uuid}/").status_code,
    "queue: approve A's": lambda a, s: (
        a.web.post(
            "/moderation/act/", {"do": f"approve {s.uuid}"}, HTTP_HX_REQUEST="true"
        ).status_code
    ),
    "queue: add an alias rule": lambda a, s: (
        a.web.post(
            "/moderation/dimensions/",
            {"target": "storage.filesystem", "from_value": "openzfs", "to_value": "zfs"},
        ).status_code
    ),
    "mine: hide A's": lambda a, s: (
        a.web.post(f"/accounts/submissions/{s.uuid}/", {"action": "hide"}).status_code
    ),
    "mine: delete A's": lambda a, s: (
        a.web.post(f"/accounts/submissions/{s.uuid}/", {"action": "delete"}).status_code
    ),
    "api: upload": lambda a, s: (
        a.api.post("/api/v1/submissions/", small_document(), format="json").status_code
    ),
    "api: read A's pending": lambda a, s: a.api.get(f"/api/v1/submissions/{s.uuid}/").status_code,
    "api: read A's hidden": lambda a, s: a.api.get(f"/api/v1/submissions/{s.uuid}/").status_code,
    # The submission page links its runs: a moderator reviewing one opens them.
    "page: A's pending run": lambda a, s: a.web.get(f"/runs/{s.runs.get().pk}/").status_code,
    "page: A's rejected run": lambda a, s: a.web.get(f"/runs/{s.runs.get().pk}/").status_code,
    "page: A's deleted run": lambda a, s: a.web.get(f"/runs/{s.runs.get().pk}/").status_code,
    "api: read A's pending run": lambda a, s: (
        a.api.get(f"/api/v1/runs/{s.runs.get().pk}/").status_code
    ),
    "api: read A's approved": lambda a, s: a.api.get(f"/api/v1/submissions/{s.uuid}/").status_code,
    "api: approve A's pending": _moderation("approve"),
    "api: reject A's pending": _moderation("reject"),
    "api: flag A's approved": _moderation("flag"),
    "api: request a re-run of A's": _moderation("request_rerun"),
    "api: hide A's approved": _moderation("hide"),
    "api: unhide A's hidden": _moderation("unhide"),
    "api: delete A's approved": _moderation("delete"),
    "api: report A's approved": lambda a, s: (
        a.api.post(
            f"/api/v1/submissions/{s.uuid}/reports/", {"reason": "odd"}, format="json"
        ).status_code
    ),
}


def _actor(user: User | AnonymousUser) -> Actor:
    if not user.is_authenticated:
        return Actor(Client(), APIClient())
    web = Client()
    web.force_login(user)
    return Actor(web, _client_for(user))


CASES = [
    pytest.param(what, state, role, status, id=f"{role}: {what}")
    for what, state, *statuses in MATRIX
    for role, status in zip(ROLES, statuses, strict=True)
]


def test_every_row_names_a_request():
    assert [row[0] for row in MATRIX] == list(REQUESTS)


@pytest.mark.parametrize(("what", "state", "role", "expected"), CASES)
def test_permission(what, state, role, expected, request, alice):
    user = AnonymousUser() if role == "anonymous" else request.getfixturevalue(role)
    submission = None
    if state is not None:
        submission = upload(alice)
        if state == S.REJECTED:
            submission_moderate(submission=submission, actor=None, action="reject", reason="no")
        elif state != S.PENDING:
            submission_moderate(submission=submission, actor=None, action="approve")
        if state in (S.HIDDEN, S.DELETED):
            action = "hide" if state == S.HIDDEN else "delete"
            submission_moderate(submission=submission, actor=alice, action=action)

    status = REQUESTS[what](_actor(user), submission)

    assert status == expected
    if submission is not None:
        after = Submission.objects.get(pk=submission.pk).status
        allowed = expected in (200, 201) or (expected == 302 and role != "anonymous")
        assert after == (EFFECT.get(what, state) if allowed else state)
