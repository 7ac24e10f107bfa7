"""The admin changes nothing behind moderation's back; roles are granted
in the admin (groups) or with `manage.py grant_role`."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from benchhub.accounts.models import ApiToken
from benchhub.accounts.roles import is_moderator, is_trusted
from benchhub.accounts.services import api_token_create, api_token_revoke
from benchhub.moderation.models import AliasRule, AuditEntry
from benchhub.results.models import Benchmark, Metric, Run, Submission
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


def submitted_as_shown(admin, url: str, **changes) -> int:
    """POST the admin's change form as it shows the row, with ``changes``."""
    form = admin.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {name: "" if value is None else value for name, value in data.items()}
    return admin.post(url, {**data, **changes}).status_code


def test_runs_and_their_dimension_rows_are_seen_and_deleted_in_the_admin_never_edited(root, alice):
    """What an upload stored is the document's, normalized. Edited here, a
    run's benchmark was no longer its measurements' (a select-update run
    became tpcb) and its fingerprint no longer the key its values are
    counted in, with no baseline marked; a dimension row's values were no
    longer the ones its digest names, which the next upload of them reuses.
    Normalized values change through alias rules (/moderation/dimensions/);
    the admin may delete a run outright (its key is rebuilt)."""
    upload(alice)
    run = Run.objects.get()
    admin = web(root)
    run_page = f"/admin/results/run/{run.pk}/change/"
    hardware_page = f"/admin/results/hardware/{run.hardware_id}/change/"

    tpcb = Benchmark.objects.get(name="tpcb").pk
    submitted_as_shown(admin, run_page, benchmark=tpcb, fingerprint="0" * 64)
    submitted_as_shown(admin, hardware_page, cpu_model="edited in the admin")

    assert admin.get(run_page).status_code == admin.get(hardware_page).status_code == 200
    after = Run.objects.select_related("benchmark", "hardware").get()
    assert (after.benchmark.name, after.fingerprint) == (run.benchmark.name, run.fingerprint)
    assert after.hardware.cpu_model == run.hardware.cpu_model
    for model in ("run", "hardware", "storage", "operatingsystem", "databaseserver", "client"):
        assert admin.get(f"/admin/results/{model}/add/").status_code == 403, model
    assert admin.post(f"/admin/results/run/{run.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Run.objects.exists()


def test_the_role_groups_exist_for_the_admin_to_grant(db):
    """A data migration makes them. A transactional test's flush empties the
    table of a test database kept between runs (make check's --reuse-db), so
    the test runs the migration's step, as migrate ran it, on an empty table."""
    from django.apps import apps
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(connection)
    assert ("accounts", "0002_role_groups") in loader.applied_migrations
    Group.objects.all().delete()
    for operation in loader.get_migration("accounts", "0002_role_groups").operations:
        operation.code(apps, connection.schema_editor())

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
    upload(bob, status=Submission.Status.APPROVED, storage={"kind": "ssd"})
    client = web(maud)

    page = client.get("/moderation/dimensions/").content.decode()
    refused = client.post(
        "/moderation/dimensions/",
        {"target": "storage.filesystem", "from_value": "zfs", "to_value": "zfs"},
    ).content.decode()

    table = page.split('data-field="storage.filesystem"')[1].split("</table>")[0]
    assert '<td>zfs</td><td class="num">2</td>' in table
    # the empty value as every filter, facet and chart spells it, not "(empty)"
    assert '<td><span class="empty">(none)</span></td><td class="num">1</td>' in table
    assert "openzfs" in table.lower()
    assert "two different values" in refused


@pytest.mark.parametrize(
    ("from_value", "to_value"), [("ufs", "(none)"), ("ufs", "(NONE) "), ("(none)", "ufs")]
)
def test_an_alias_to_or_from_none_is_refused_as_the_empty_value(maud, bob, from_value, to_value):
    """The pages show an empty value as "(none)", and every filter reads it
    as that: ufs rewritten to the text "(none)" showed in the filesystem facet
    as "(none)", counted with the empty runs, and its link found none of them:
    it reads the empty value. Uploads refuse the text; an alias rule let it in."""
    upload(bob, status=Submission.Status.APPROVED, storage={"kind": "hdd", "filesystem": "ufs"})
    client = web(maud)

    refused = client.post(
        "/moderation/dimensions/",
        {"target": "storage.filesystem", "from_value": from_value, "to_value": to_value},
    ).content.decode()

    assert "how BenchHub shows an empty value" in refused
    assert not AliasRule.objects.exists()
    assert not AuditEntry.objects.filter(action="alias_add").exists()


def test_api_tokens_are_seen_and_revoked_in_the_admin_never_made_or_edited(root, alice, bob):
    """A token added in the admin had no secret (an empty digest: the second
    one answered 500); an edit could move a token to another user or bring a
    revoked one back."""
    live, _ = api_token_create(user=alice, name="ci")
    revoked, _ = api_token_create(user=alice, name="old")
    api_token_revoke(user=alice, token_id=revoked.pk)
    revoked.refresh_from_db()
    admin = web(root)
    base = "/admin/accounts/apitoken/"

    assert admin.get(base).status_code == 200
    assert admin.get(f"{base}{live.pk}/change/").status_code == 200  # shown
    for name in ("one", "two"):
        assert admin.post(f"{base}add/", {"name": name, "user": bob.pk}).status_code == 403
    moved = admin.post(
        f"{base}{revoked.pk}/change/", {"name": "x", "user": bob.pk, "revoked_at": ""}
    )
    assert moved.status_code == 403
    assert ApiToken.objects.count() == 2
    again = ApiToken.objects.get(pk=revoked.pk)
    assert (again.user, again.name, again.revoked_at) == (alice, "old", revoked.revoked_at)

    admin.post(base, {"action": "revoke", "_selected_action": [live.pk, revoked.pk]})

    live.refresh_from_db()
    assert live.revoked_at is not None
    assert ApiToken.objects.get(pk=revoked.pk).revoked_at == revoked.revoked_at  # kept


@pytest.mark.parametrize(
    "query",
    [
        "/admin/results/submission/?status__exact=%00",
        "/admin/moderation/auditentry/?action__exact=a%00",
        "/admin/moderation/aliasrule/?dimension__exact=%00",
        "/admin/auth/user/?username=%00",
        "/admin/auth/user/?%00=1",
    ],
)
def test_an_admin_query_with_a_null_character_is_a_400_naming_it(root, query):
    """PostgreSQL text cannot hold a NUL: the changelist's query was a 500."""
    response = web(root).get(query)

    assert response.status_code == 400
    name = query.split("?")[1].split("=")[0].replace("%00", "\\x00")
    assert f"&#x27;{name}&#x27;: a null character is not allowed in a query" in (
        response.content.decode()
    )


@pytest.mark.parametrize("path", ["/admin/results/submission/", "/admin/auth/group/"])
@pytest.mark.parametrize("selected", ["abc", "%00", "1.5"])
def test_an_admin_action_on_rows_that_are_not_ids_is_a_400_naming_them(root, path, selected):
    """Django filtered the changelist with them as they came: a ValueError, a 500."""
    response = web(root).post(
        path,
        f"action=delete_selected&_selected_action=1&_selected_action={selected}&index=0",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 400
    shown = {"abc": "abc", "%00": "\\x00", "1.5": "1.5"}[selected]
    assert f"_selected_action: &#x27;{shown}&#x27; is not the id of a row" in (
        response.content.decode()
    )
