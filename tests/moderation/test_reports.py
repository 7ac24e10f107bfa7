"""Readers' reports: a report puts a result in front of the moderators and
leaves it public; a moderator acts on it or dismisses it. One troll account
must not be able to unpublish the site."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from benchhub.moderation.models import AuditEntry, Report
from benchhub.moderation.services import reports_dismiss, submission_moderate
from benchhub.results.models import Submission
from tests.moderation.conftest import upload, web

Status = Submission.Status


def report(client, submission, reason="10x faster than the same machine elsewhere"):
    return client.post(
        f"/api/v1/submissions/{submission.uuid}/reports/", {"reason": reason}, format="json"
    )


def public_uuids(client) -> set[str]:
    return {s["uuid"] for s in client.get("/api/v1/submissions/").json()["results"]}


def approved(alice, maud) -> Submission:
    submission = upload(alice)
    submission_moderate(submission=submission, actor=maud, action="approve")
    return submission


def test_a_report_leaves_an_approved_result_public(bob_api, anonymous_api, alice, maud):
    submission = approved(alice, maud)

    response = report(bob_api, submission)

    assert response.status_code == 200
    assert response.json()["status"] == "approved"
    submission.refresh_from_db()
    assert submission.status == Status.APPROVED
    assert str(submission.uuid) in public_uuids(anonymous_api)
    assert Client().get(f"/submissions/{submission.uuid}/").status_code == 200
    entry = AuditEntry.objects.get(action="report")
    assert (entry.actor.username, entry.before, entry.after) == ("bob", "approved", "approved")
    assert entry.reason.startswith("10x faster")


def test_a_report_shows_in_the_queue_with_its_reason(bob_api, alice, maud):
    submission = approved(alice, maud)
    assert str(submission.uuid) not in web(maud).get("/moderation/").content.decode()

    report(bob_api, submission, reason="the disk cannot do that")

    queue = web(maud).get("/moderation/").content.decode()
    assert f'id="item-{submission.uuid}"' in queue
    assert "Reported by 1 reader" in queue
    assert "the disk cannot do that" in queue
    assert f'value="dismiss {submission.uuid}"' in queue


def test_a_reported_approved_result_is_not_offered_approve_again(bob_api, alice, maud):
    submission = approved(alice, maud)
    report(bob_api, submission)

    queue = web(maud).get("/moderation/").content.decode()

    assert f'value="approve {submission.uuid}"' not in queue
    assert f'value="reject {submission.uuid}"' in queue
    assert f'value="dismiss {submission.uuid}"' in queue


def test_dismissing_keeps_it_public_and_takes_it_off_the_queue(bob_api, anonymous_api, alice, maud):
    submission = approved(alice, maud)
    report(bob_api, submission)

    response = web(maud).post("/moderation/act/", {"do": f"dismiss {submission.uuid}"}, follow=True)

    assert "1 report dismissed" in response.content.decode()
    assert f'id="item-{submission.uuid}"' not in response.content.decode()
    assert Report.objects.get().handled_by.username == "maud"
    submission.refresh_from_db()
    assert submission.status == Status.APPROVED
    assert str(submission.uuid) in public_uuids(anonymous_api)
    assert AuditEntry.objects.filter(action="dismiss", submission=submission).exists()


def test_a_moderators_hide_of_a_reported_one_still_hides(bob_api, anonymous_api, alice, maud):
    submission = approved(alice, maud)
    report(bob_api, submission)

    submission_moderate(submission=submission, actor=maud, action="hide")

    assert str(submission.uuid) not in public_uuids(anonymous_api)
    assert Report.objects.get().handled_at is not None  # answered: off the queue
    assert f'id="item-{submission.uuid}"' not in web(maud).get("/moderation/").content.decode()


def test_one_report_per_reader_a_repeat_is_a_409(bob_api, alice, maud):
    submission = approved(alice, maud)
    report(bob_api, submission)

    again = report(bob_api, submission, reason="and again")

    assert again.status_code == 409
    assert again.json()["error"]["code"] == "already_reported"
    assert Report.objects.count() == 1
    assert AuditEntry.objects.filter(action="report").count() == 1


def test_a_reader_may_report_again_once_a_moderator_handled_the_first(bob_api, alice, maud):
    """A dismissed report was a 409 for ever: whatever looked wrong later."""
    submission = approved(alice, maud)
    report(bob_api, submission)
    reports_dismiss(submission=submission, actor=maud)

    again = report(bob_api, submission, reason="the second run is 10x slower")
    twice = report(bob_api, submission, reason="and again")

    assert again.status_code == 200
    assert twice.status_code == 409
    assert "moderators have not looked at it yet" in twice.json()["error"]["message"]
    assert Report.objects.count() == 2
    assert Report.objects.get(handled_at__isnull=True).reason == "the second run is 10x slower"
    assert f'id="item-{submission.uuid}"' in web(maud).get("/moderation/").content.decode()


def test_a_refused_report_points_at_the_request_not_at_an_action_it_has_not(
    alice_api, bob_api, alice, maud
):
    # The report's body is {"reason": …}; its refusals pointed at "$.action".
    submission = approved(alice, maud)
    report(bob_api, submission)

    again = report(bob_api, submission, reason="and again")
    own = report(alice_api, submission)

    assert (again.status_code, own.status_code) == (409, 403)
    assert again.json()["error"]["details"][0]["path"] == "$"
    assert own.json()["error"]["details"][0]["path"] == "$"


def test_the_database_holds_one_open_report_per_reader(alice, bob, maud):
    submission = approved(alice, maud)
    Report.objects.create(submission=submission, reporter=bob, reason="one")

    with pytest.raises(IntegrityError), transaction.atomic():
        Report.objects.create(submission=submission, reporter=bob, reason="two")


def test_a_submitter_cannot_report_their_own(alice_api, alice, maud):
    submission = approved(alice, maud)

    assert report(alice_api, submission).status_code == 403
    assert not Report.objects.exists()


def test_the_web_form_posts_a_report_and_says_so(alice, bob, maud):
    submission = approved(alice, maud)
    page = f"/submissions/{submission.uuid}/"
    assert 'id="report-form"' in web(bob).get(page).content.decode()

    response = web(bob).post(
        f"/moderation/report/{submission.uuid}/",
        {"reason": "impossible latency", "next": page},
        follow=True,
    )

    assert response.redirect_chain[-1][0] == page
    assert "the moderators will look at this result" in response.content.decode()
    assert Report.objects.get().reason == "impossible latency"
    submission.refresh_from_db()
    assert submission.status == Status.APPROVED


@pytest.mark.parametrize("back", ["x", "pgbench", "https://elsewhere.example/", "//elsewhere"])
def test_a_next_that_is_not_a_path_here_goes_back_to_the_submission(alice, bob, maud, back):
    """A bare word was taken by redirect() for a view's name: a 500."""
    submission = approved(alice, maud)

    response = web(bob).post(
        f"/moderation/report/{submission.uuid}/", {"reason": "odd", "next": back}
    )

    assert (response.status_code, response["Location"]) == (
        302,
        f"/submissions/{submission.uuid}/",
    )


def test_the_web_form_refuses_an_empty_reason(alice, bob, maud):
    submission = approved(alice, maud)

    response = web(bob).post(
        f"/moderation/report/{submission.uuid}/", {"reason": "   "}, follow=True
    )

    assert "Not reported: a report needs a reason" in response.content.decode()
    assert not Report.objects.exists()


def test_the_run_page_has_the_form_too_but_not_for_the_submitter(alice, bob, maud):
    submission = approved(alice, maud)
    run = submission.runs.get()

    assert 'id="report-form"' in web(bob).get(f"/runs/{run.pk}/").content.decode()
    assert 'id="report-form"' not in web(alice).get(f"/runs/{run.pk}/").content.decode()


def test_a_reader_who_reported_is_told_so_on_the_pages_instead_of_the_form(alice, bob, trent, maud):
    """The form stayed, and sending it again only answered "already reported"."""
    submission = approved(alice, maud)
    pages = (f"/submissions/{submission.uuid}/", f"/runs/{submission.runs.get().pk}/")
    web(bob).post(f"/moderation/report/{submission.uuid}/", {"reason": "impossible latency"})
    day = Report.objects.get().created_at.date().isoformat()

    for page in pages:
        html = web(bob).get(page).content.decode()
        assert 'id="report-form"' not in html
        assert "You reported this on <time datetime=" in html
        assert f">{day}</time>; the moderators will look at it." in html
        assert 'id="report-form"' in web(trent).get(page).content.decode()

    reports_dismiss(submission=submission, actor=maud)
    html = web(bob).get(pages[0]).content.decode()
    assert f">{day}</time>; a moderator has looked at it since." in html
    assert 'id="report-form"' in html  # and may report it again


def test_the_submitter_sees_no_report_heading_over_nothing(alice, maud):
    pending = upload(alice)
    run = approved(alice, maud).runs.get()

    for page in (f"/submissions/{pending.uuid}/", f"/runs/{run.pk}/"):
        assert 'id="report-result"' not in web(alice).get(page).content.decode()


def test_anonymous_gets_a_sign_in_link_not_the_form(alice, maud):
    submission = approved(alice, maud)

    for page in (f"/submissions/{submission.uuid}/", f"/runs/{submission.runs.get().pk}/"):
        html = Client().get(page).content.decode()
        assert 'id="report-form"' not in html
        assert 'id="report-sign-in"' in html
    posted = Client().post(f"/moderation/report/{submission.uuid}/", {"reason": "x"})
    assert posted.status_code == 302 and "/accounts/login/" in posted["Location"]
    assert not Report.objects.exists()
