from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import small_document


def test_home_page_explains_and_shows_how_to_run_the_agent(client, db):
    response = client.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "benchhub-agent run select-update" in page
    assert "/api/docs/" in page
    assert "No submissions yet" in page


def test_home_page_lists_approved_submissions_only(client, bob, alice):
    approved = submission_create(
        submitter=bob, document=small_document(), status=Submission.Status.APPROVED
    ).submission
    pending = submission_create(submitter=alice, document=small_document()).submission

    page = client.get("/").content.decode()

    assert f"/api/v1/submissions/{approved.uuid}/" in page
    assert str(pending.uuid) not in page


def test_htmx_refresh_gets_only_the_rows(client, bob, django_assert_max_num_queries):
    for _ in range(5):
        submission_create(
            submitter=bob, document=small_document(), status=Submission.Status.APPROVED
        )

    # The session lookup, the submissions, and one prefetch per relation.
    with django_assert_max_num_queries(4):
        response = client.get("/", headers={"HX-Request": "true"})

    fragment = response.content.decode()
    assert fragment.lstrip().startswith("<table")
    assert "<html" not in fragment
    assert fragment.count("<tr>") == 6  # header + 5 rows
