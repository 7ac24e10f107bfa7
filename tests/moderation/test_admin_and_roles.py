"""The admin changes nothing behind moderation's back; roles are granted
in the admin (groups) or with `manage.py grant_role`."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from benchhub.accounts.roles import is_moderator, is_trusted
from benchhub.moderation.models import AuditEntry
from benchhub.results.models import Benchmark, Metric, Submission
from tests.factories import small_document
from tests.moderation.conftest import upload, web


def test_the_admin_form_cannot_change_status_or_submitter(root, alice, bob):
    submission = upload(alice)
    admin = web(root)

    page = admin.get(f"/admin/results/submission/{submission.pk}/change/").content.decode()
    admin.post(
        f"/admin/results/submission/{submission.pk}/change/",
        {"status": "approved", "submitter": bob.pk},
    )

    assert 'name="status"' not in page and 'name="submitter"' not in page
    submission.refresh_from_db()
    assert (submission.status, submission.submitter) == ("pending", alice)
    assert not AuditEntry.objects.exists()


def test_the_admin_action_approves_through_the_service(root, alice):
    pending, deleted = upload(alice), upload(alice)
    web(alice).post(f"/accounts/submissions/{deleted.uuid}/", {"action": "delete"})

    web(root).post(
        "/admin/results/submission/",
        {"action": "moderate_approve", "_selected_action": [pending.pk, deleted.pk]},
    )

    statuses = dict(Submission.objects.values_list("pk", "status"))
    assert (statuses[pending.pk], statuses[deleted.pk]) == ("approved", "deleted")
    entry = AuditEntry.objects.get(action="approve")
    assert (entry.actor, entry.submission_id) == (root, pending.pk)


@pytest.mark.parametrize("model", [Benchmark, Metric])
def test_the_catalog_is_read_only_in_the_admin(root, alice_api, model):
    """Benchmarks and metrics mirror the catalog file (every migrate writes
    them again). Deleted in the admin, every upload of that benchmark
    answered 500 until the next migrate; edited, the edit was undone by it."""
    row = (
        Benchmark.objects.get(name="tpcb")
        if model is Benchmark
        else Metric.objects.get(benchmark__name="tpcb", name="tps")
    )
    base = f"/admin/results/{model._meta.model_name}/"
    admin = web(root)

    assert admin.get(f"{base}{row.pk}/change/").status_code == 200  # seen
    deleted = admin.post(f"{base}{row.pk}/delete/", {"post": "yes"})
    admin.post(f"{base}{row.pk}/change/", {"name": "renamed", "title": "renamed"})
    admin.post(
        f"{base}", {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"}
    )

    assert deleted.status_code == 403
    assert model.objects.get(pk=row.pk).name == row.name
    assert admin.get(f"{base}add/").status_code == 403
    document = small_document()
    document["runs"][0]["benchmark"] = "tpcb"
    document["runs"][0]["measurements"] = [{"metric": "tps", "unit": "tx/s", "value": 812.0}]
    answer = alice_api.post("/api/v1/submissions/", document, format="json")
    assert answer.status_code == 201, answer.content


def test_the_role_groups_exist_for_the_admin_to_grant(db):
    assert set(Group.objects.values_list("name", flat=True)) >= {
        "moderators",
        "trusted submitters",
    }


def test_grant_role_grants_and_revokes(alice):
    out = io.StringIO()
    call_command("grant_role", "alice", "moderator", stdout=out)
    assert "moderator" in out.getvalue()
    assert is_moderator(User.objects.get(pk=alice.pk))

    call_command("grant_role", "alice", "moderator", "--revoke", stdout=io.StringIO())
    call_command("grant_role", "alice", "trusted", stdout=io.StringIO())
    fresh = User.objects.get(pk=alice.pk)
    assert not is_moderator(fresh) and is_trusted(fresh)


def test_grant_role_names_an_unknown_user(db):
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("grant_role", "nobody", "moderator", stdout=io.StringIO())


def test_a_trusted_upload_answers_approved(trent_api):
    from tests.factories import small_document

    answer = trent_api.post("/api/v1/submissions/", small_document(), format="json")

    assert answer.status_code == 201
    assert answer.json()["status"] == "approved"


def test_the_dimension_page_lists_values_with_counts_and_refuses_a_bad_rule(maud, bob):
    upload(bob, status=Submission.Status.APPROVED, storage={"kind": "ssd", "filesystem": "OpenZFS"})
    upload(bob, status=Submission.Status.APPROVED, storage={"kind": "ssd", "filesystem": "zfs"})
    upload(bob, status=Submission.Status.APPROVED, storage={"kind": "ssd", "filesystem": "zfs"})
    client = web(maud)

    page = client.get("/moderation/dimensions/").content.decode()
    refused = client.post(
        "/moderation/dimensions/",
        {"target": "storage.filesystem", "from_value": "zfs", "to_value": "zfs"},
    ).content.decode()

    table = page.split('data-field="storage.filesystem"')[1].split("</table>")[0]
    assert '<td>zfs</td><td class="num">2</td>' in table
    assert "openzfs" in table.lower()
    assert "two different values" in refused
