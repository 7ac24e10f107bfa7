"""Django's own refusals raised inside an API view (a helper shared with the
pages raises ``PermissionDenied``, ``Http404``, ``SuspiciousOperation`` or
``BadRequest``): the API's error shape with the status they mean and their own
message, never a 500 nor DRF's words that name nothing."""

from __future__ import annotations

import pytest
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404
from django.test import Client
from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView

import benchhub.urls

RAISED = {
    "denied": PermissionDenied("Moderators only: run 7 is hidden by its submitter"),
    "missing": Http404("No run 424242 that you may see"),
    "suspicious": SuspiciousOperation("Attempted access to '../etc' denied"),
    "bad": BadRequest("'limit': a null character is not allowed in a query"),
    "denied-bare": PermissionDenied(),
    "missing-bare": Http404(),
}


class Raising(APIView):
    """What a view does when a helper it calls refuses the request."""

    def get(self, request, what: str):
        if what == "nothing":
            return Response({"ok": True})
        raise RAISED[what]


urlpatterns = [
    path("api/v1/raising/<str:what>/", Raising.as_view()),
    path("", include(benchhub.urls)),
]

pytestmark = pytest.mark.urls(__name__)


@pytest.mark.parametrize(
    ("what", "status", "code"),
    [
        ("denied", 403, "permission_denied"),
        ("missing", 404, "not_found"),
        ("suspicious", 400, "bad_request"),
        ("bad", 400, "bad_request"),
    ],
)
def test_a_django_refusal_in_an_api_view_is_its_status_with_its_own_message(db, what, status, code):
    response = Client(raise_request_exception=False).get(f"/api/v1/raising/{what}/")

    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"] == str(RAISED[what])


@pytest.mark.parametrize(
    ("what", "status", "words"),
    [("denied-bare", 403, "permission"), ("missing-bare", 404, "not found")],
)
def test_one_raised_without_a_message_still_says_what_it_refused(db, what, status, words):
    response = Client(raise_request_exception=False).get(f"/api/v1/raising/{what}/")

    assert response.status_code == status
    assert words in response.json()["error"]["message"].lower()


def test_the_view_answers_when_nothing_is_raised(db):
    assert Client().get("/api/v1/raising/nothing/").json() == {"ok": True}
