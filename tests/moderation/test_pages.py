"""The queue, "My submissions", the audit log and the dimension values, as
pages and htmx fragments."""

from __future__ import annotations

import re

from benchhub.accounts.services import api_token_create
from benchhub.baselines.services import baselines_refresh
from benchhub.moderation import selectors
from benchhub.moderation.models import AuditEntry
from benchhub.moderation.services import submission_moderate
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document
from tests.moderation.conftest import upload, web


def test_the_queue_lists_waiting_submissions_oldest_first_with_evidence(maud, alice, bob):
    for value in (1000.0, 1050.0, 1100.0, 1150.0, 1200.0):
        upload(bob, value, status=Submission.Status.APPROVED)
    first = upload(alice, 9000.0)
    second = upload(bob, 1100.0)
    baselines_refresh()

    page = web(maud).get("/moderation/").content.decode()

    assert page.index(str(first.uuid)) < page.index(str(second.uuid))
    assert page.count('class="queue-item"') == 2
    assert "9000" in page and "1100" in page  # value against the median
    assert 'class="outlier"' in page


def test_the_evidence_shows_the_baseline_median_at_the_digits_it_holds(maud, alice, bob):
    """The median of 1000.1 and 1001.2 counted at 4 significant digits is
    1000.5: "1000.50" was two digits more than the baseline holds."""
    for value in (1000.1, 1001.2):
        upload(bob, value, status=Submission.Status.APPROVED)
    upload(alice, 1500.0)
    baselines_refresh()

    page = web(maud).get("/moderation/").content.decode()

    assert '<td class="num">≈1000</td>' in page
    assert "1000.5" not in page


def test_the_evidence_says_it_is_a_few_of_the_measurements(maud, alice, bob):
    """A sweep of 8 points shows 5: the caption says so, and where the others
    are; the submitter's own page says the same. Two measurements are all there is."""
    sweep = submission_create(
        submitter=alice, document=sweep_document({c: 100.0 * c for c in range(1, 9)})
    ).submission
    upload(bob)

    queue = web(maud).get("/moderation/").content.decode()
    own = web(alice).get("/accounts/submissions/").content.decode()

    run = sweep.runs.get()
    for page in (queue, own):
        # no approved baseline scores them: the first five, not "the most unusual"
        assert "most unusual" not in page
        assert "The first 5 of its 8 measurements" in page
        assert f'href="/runs/{run.pk}/#measurements-title"' in page
    assert queue.count("of its") == 1  # bob's 2 measurements are all shown


def test_scored_evidence_is_called_the_most_unusual(maud, alice, bob):
    for value in (1000.0, 1050.0, 1100.0, 1150.0, 1200.0):
        submission_create(
            submitter=bob,
            document=sweep_document({c: value for c in range(1, 9)}),
            status=Submission.Status.APPROVED,
        )
    submission_create(submitter=alice, document=sweep_document({c: 100.0 for c in range(1, 9)}))
    baselines_refresh()

    queue = web(maud).get("/moderation/").content.decode()

    assert "The 5 most unusual of its 8 measurements" in queue


def test_a_moderator_sees_the_runs_of_the_pending_submission_they_review(maud, alice, bob):
    """The queue says "1 run" and links the submission's page, which read
    "This submission has no runs." for the moderator."""
    submission = upload(alice)
    run = submission.runs.get()

    page = web(maud).get(f"/submissions/{submission.uuid}/").content.decode()

    assert f'href="/runs/{run.pk}/"' in page and "has no runs" not in page
    assert f'href="/runs/{run.pk}/"' not in web(bob).get("/results/").content.decode()


def test_a_re_run_request_reads_as_words_on_every_page_that_shows_it(maud, alice):
    """The submission and run pages printed the status code "rerun", and the
    history "request a re-run by maud" beside "Reject by …"."""
    submission = upload(alice)
    submission_moderate(
        submission=submission, actor=maud, action="request_rerun", reason="one repetition"
    )
    run = submission.runs.get()
    client = web(alice)

    page = client.get(f"/submissions/{submission.uuid}/").content.decode()
    assert ">re-run requested</span>" in page and ">rerun<" not in page
    assert "Request a re-run by maud" in page
    assert ">re-run requested</span>" in client.get(f"/runs/{run.pk}/").content.decode()
    mine = client.get("/accounts/submissions/").content.decode()
    assert ">Re-run requested</span>" in mine and "Request a re-run (" in mine
    audit = web(maud).get("/moderation/audit/").content.decode()
    assert "<td>Request a re-run</td>" in audit


def test_the_queue_pager_says_older_and_newer_as_the_queue_runs(maud, alice, monkeypatch):
    """Oldest first: the page before holds older submissions, the next newer
    ones (the link back read "newer page")."""
    monkeypatch.setattr(selectors, "QUEUE_PAGE", 1)
    older, newer = upload(alice), upload(alice)

    first = web(maud).get("/moderation/").content.decode()
    second = web(maud).get("/moderation/", {"page": 2}).content.decode()

    assert str(older.uuid) in first and str(newer.uuid) in second
    pager = [page.split('<nav class="pager"')[1].split("</nav>")[0] for page in (first, second)]
    assert "newer page →" in pager[0] and "older" not in pager[0]
    assert "← older page" in pager[1] and "newer" not in pager[1]


def test_every_navigation_landmark_has_a_name_and_an_empty_pager_is_none(maud, alice):
    """The site's header and a pager were two unnamed <nav>s on one page
    (axe: landmark-unique), and a queue of one page had an empty pager."""
    upload(alice)
    api_token_create(user=maud, name="laptop")

    for path in ("/moderation/", "/moderation/audit/", "/accounts/tokens/"):
        page = web(maud).get(path).content.decode()
        navs = re.findall(r"<nav\b[^>]*>", page)
        assert navs, path
        assert [nav for nav in navs if "aria-label=" not in nav] == [], path
        assert 'class="pager"' not in page, path  # one page: nothing to page through
        assert "<th></th>" not in page, path  # a column without a name


def test_the_queue_filters_by_submitter_as_a_fragment_for_htmx(maud, alice, bob):
    upload(alice)
    upload(bob)

    fragment = web(maud).get("/moderation/", {"submitter": "bob"}, HTTP_HX_REQUEST="true")

    body = fragment.content.decode()
    assert "<html" not in body
    assert body.count('class="queue-item"') == 1
    assert "<strong>bob</strong>" in body


def test_one_click_approves_one_item_and_answers_the_refreshed_list(maud, alice):
    submission = upload(alice)

    answer = web(maud).post(
        "/moderation/act/", {"do": f"approve {submission.uuid}"}, HTTP_HX_REQUEST="true"
    )

    assert answer.status_code == 200
    assert "Approve: 1 submission" in answer.content.decode()
    assert Submission.objects.get(pk=submission.pk).status == "approved"


def test_a_selection_is_rejected_at_once_with_one_reason(maud, alice, bob):
    chosen = [upload(alice), upload(bob)]
    untouched = upload(alice)

    web(maud).post(
        "/moderation/act/",
        {"do": "reject", "reason": "clients=0 cannot be", "submission": [s.uuid for s in chosen]},
    )

    statuses = dict(Submission.objects.values_list("uuid", "status"))
    assert [statuses[s.uuid] for s in chosen] == ["rejected", "rejected"]
    assert statuses[untouched.uuid] == "pending"
    assert set(AuditEntry.objects.values_list("reason", flat=True)) == {"clients=0 cannot be"}


def test_rejecting_without_a_reason_says_so_and_changes_nothing(maud, alice):
    submission = upload(alice)

    answer = web(maud).post(
        "/moderation/act/", {"do": f"reject {submission.uuid}"}, HTTP_HX_REQUEST="true"
    )

    assert "needs a reason" in answer.content.decode()
    assert Submission.objects.get(pk=submission.pk).status == "pending"


def test_a_reason_the_api_would_refuse_is_refused_by_the_form_too_changing_nothing(maud, alice):
    """A NUL (PostgreSQL text cannot hold one) answered the form a 500; a
    reason over the API's 2,000 characters was stored."""
    one, two = upload(alice), upload(alice)
    client = web(maud)

    for data, said in (
        ({"do": f"flag {one.uuid}", f"reason-{one.uuid}": "nul \x00 here"}, "null character"),
        ({"do": "reject", "submission": [one.uuid, two.uuid], "reason": "\x00"}, "null character"),
        ({"do": f"reject {one.uuid}", f"reason-{one.uuid}": "x" * 2001}, "at most 2000"),
    ):
        answer = client.post("/moderation/act/", data, HTTP_HX_REQUEST="true")

        assert answer.status_code == 200
        assert said in answer.content.decode()
    assert set(Submission.objects.values_list("status", flat=True)) == {"pending"}
    assert not AuditEntry.objects.exists()


def test_the_queue_costs_a_fixed_number_of_queries(maud, alice, django_assert_max_num_queries):
    for _ in range(3):
        upload(alice)
    client = web(maud)
    client.get("/moderation/")
    for _ in range(6):
        upload(alice)

    # session, user, groups, submissions, runs, measurements, baselines
    with django_assert_max_num_queries(8):
        assert client.get("/moderation/").content.decode().count('class="queue-item"') == 9


def test_my_submissions_shows_every_state_with_the_reason(alice, maud, bob):
    rejected = upload(alice)
    from benchhub.moderation.services import submission_moderate

    submission_moderate(submission=rejected, actor=maud, action="reject", reason="wrong <unit>")
    pending = upload(alice)
    upload(bob)

    page = web(alice).get("/accounts/submissions/").content.decode()

    assert str(rejected.uuid) in page and str(pending.uuid) in page
    assert "wrong &lt;unit&gt;" in page
    assert page.count('class="queue-item"') == 2
    assert '<p class="reason reason-to-act-on">Moderator\'s reason: wrong' in page


def test_an_approvals_reason_is_not_shown_as_a_warning(alice, maud):
    """An approval's "looks fine" was in the same red as a rejection's reason."""
    approved = upload(alice)
    submission_moderate(submission=approved, actor=maud, action="approve", reason="looks fine")

    for client, path in (
        (web(alice), "/accounts/submissions/"),
        (web(maud), "/moderation/?state=approved"),
    ):
        page = client.get(path).content.decode()
        assert re.search(r'<p class="reason">[^<]*looks fine</p>', page), path


def test_my_submissions_hide_unhide_and_delete(alice, maud):
    submission = upload(alice)
    client = web(alice)
    url = f"/accounts/submissions/{submission.uuid}/"

    client.post(url, {"action": "hide"})
    assert Submission.objects.get(pk=submission.pk).status == "hidden"
    client.post(url, {"action": "unhide"})
    assert Submission.objects.get(pk=submission.pk).status == "pending"
    client.post(url, {"action": "delete"})
    assert Submission.objects.get(pk=submission.pk).status == "deleted"
    assert str(submission.uuid) not in client.get("/accounts/submissions/").content.decode()


def test_another_submitter_cannot_act_on_my_submission(alice, bob):
    submission = upload(alice)

    answer = web(bob).post(f"/accounts/submissions/{submission.uuid}/", {"action": "delete"})

    assert answer.status_code == 404
    assert Submission.objects.get(pk=submission.pk).status == "pending"


def test_the_audit_logs_actions_read_in_one_case(maud):
    page = web(maud).get("/moderation/audit/").content.decode()

    select = page[page.index('name="action"') :]
    labels = re.findall(r"<option[^>]*>([^<]*)</option>", select[: select.index("</select>")])
    assert labels[:4] == ["any", "approve", "reject", "flag"]
    assert "request a re-run" in labels and "dismiss the reports" in labels
    assert labels == [label.lower() for label in labels]


def test_the_audit_log_filters_by_action(maud, alice):
    from benchhub.moderation.services import submission_moderate

    a, b = upload(alice), upload(alice)
    submission_moderate(submission=a, actor=maud, action="approve")
    submission_moderate(submission=b, actor=maud, action="reject", reason="no")

    page = web(maud).get("/moderation/audit/", {"action": "reject"}).content.decode()

    assert page.count("<tr>") == 2  # header and one entry
    assert str(b.uuid)[:8] in page and str(a.uuid)[:8] not in page


def test_moderation_pages_are_for_moderators_only(alice, client):
    assert web(alice).get("/moderation/").status_code == 403
    assert client.get("/moderation/")["Location"].startswith("/accounts/login/")


def test_the_queue_names_its_states_in_one_case(maud):
    page = web(maud).get("/moderation/").content.decode()

    options = re.findall(r'<option value="[a-z]*"[^>]*>([^<]*)</option>', page)
    assert "pending" in options and "approved" in options and "re-run requested" in options
    assert all(option == option.lower() for option in options), options
