"""Kept comparison answers (benchhub/comparisons/kept.py) on the real
PostgreSQL and Redis: an answer is served again only while nothing it read
has changed, whatever changed it (changes.py); every table it reads is
watched.

Transactional tests: nothing is kept inside a transaction, so the usual
test transaction would keep nothing. The fixtures are in conftest.py, the
helpers in kept_answers.py."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from benchhub.comparisons import changes, selectors
from benchhub.comparisons.query import InvalidComparison, comparison_query_parse
from benchhub.moderation.services import alias_rule_add, submission_moderate
from benchhub.results import events
from benchhub.results.filters import RUN_FIELDS, known_values
from benchhub.results.models import Measurement, Storage, Submission
from tests.comparisons.kept_answers import (
    QUERY,
    _approve_pending,
    _hide_approved,
    _saved_each,
    answer,
    cell,
    upload,
    zfs_cell,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_nothing_kept_before", "_exact"),
]


def test_an_answer_is_kept_and_served_again_unchanged(stored, anonymous_api):
    first, computed = answer(anonymous_api)
    assert computed
    again, computed = answer(anonymous_api)
    assert not computed
    assert again == first
    assert cell(first, "ext4", 4)["n"] == 4
    # Another query is another answer.
    other, computed = answer(anonymous_api, {**QUERY, "series": "engine"})
    assert computed
    assert other != first


def _delete_row(ctx):
    ctx["zfs"].delete()


def _trusted_upload(ctx):
    upload(ctx["bob"], "zfs", 3.1)


def _value_corrected(ctx):
    _saved_each(Measurement.objects.filter(run__submission=ctx["zfs"]), value=5.5)


def _measurement_added(ctx):
    extra = Measurement.objects.filter(run__submission=ctx["zfs"]).order_by("pk").first()
    extra.pk = None
    extra.value = 12345.0
    extra.save()


def _storage_renamed(ctx):
    _saved_each(Storage.objects.filter(filesystem="zfs"), filesystem="btrfs")


def _bulk_correction_told(ctx):
    """A bulk write sends the event itself (results/events.py)."""
    with transaction.atomic():
        rows = Measurement.objects.filter(run__submission=ctx["zfs"])
        rows.update(value=6.5)
        events.public_data_changed.send(
            sender=Measurement, metrics=set(rows.values_list("metric_id", flat=True))
        )


def _hidden_corrected_unhidden(ctx):
    _hide_approved(ctx)
    _saved_each(Measurement.objects.filter(run__submission=ctx["zfs"]), value=7.25)
    submission_moderate(submission=ctx["zfs"], actor=ctx["moderator"], action="unhide")


CHANGES: dict[str, tuple[Callable, Callable[[dict, dict], bool]]] = {
    "a pending result approved": (_approve_pending, lambda b, a: cell(a, "btrfs", 1) is not None),
    "an approved result hidden": (_hide_approved, lambda b, a: zfs_cell(a) is None),
    "an approved submission deleted": (_delete_row, lambda b, a: zfs_cell(a) is None),
    "an approved result uploaded": (_trusted_upload, lambda b, a: zfs_cell(a)["n"] == 2),
    "a value corrected": (_value_corrected, lambda b, a: zfs_cell(a)["value"] == 5.5),
    "a measurement added": (_measurement_added, lambda b, a: zfs_cell(a)["n"] == 2),
    "a filesystem renamed": (_storage_renamed, lambda b, a: cell(a, "btrfs", 1)["n"] == 1),
    "a bulk correction, told": (_bulk_correction_told, lambda b, a: zfs_cell(a)["value"] == 6.5),
    "hidden, corrected, unhidden": (
        _hidden_corrected_unhidden,
        lambda b, a: zfs_cell(a)["value"] == 7.25,
    ),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_change_of_what_an_answer_read_makes_it_computed_again(
    change, stored, bob, moderator, anonymous_api
):
    zfs = Submission.objects.get(runs__storage__filesystem="zfs")
    before, _ = answer(anonymous_api)
    assert answer(anonymous_api) == (before, False)  # kept
    do, seen = CHANGES[change]
    do({"bob": bob, "moderator": moderator, "zfs": zfs})
    after, computed = answer(anonymous_api)
    assert computed
    assert after != before
    assert seen(before, after)


def test_a_kept_answer_gives_the_filters_as_its_request_gave_them(stored, anonymous_api):
    """The same filters in another order are the same statement, so the same
    kept answer; its "filters" are this request's, in this request's order."""
    fixed = {"engine": "postgresql", "protocol": "unix_socket"}
    first, _ = answer(anonymous_api, {**QUERY, **fixed})
    again, computed = answer(anonymous_api, {**QUERY, **dict(reversed(fixed.items()))})
    assert not computed
    assert list(first["filters"]) == ["engine", "protocol"]
    assert list(again["filters"]) == ["protocol", "engine"]
    assert {**again, "filters": first["filters"]} == first


def test_a_pending_upload_leaves_the_public_answer_kept_and_its_owner_sees_it(
    stored, alice, alice_api, anonymous_api
):
    public, _ = answer(anonymous_api)
    upload(alice, "btrfs", 1.9, status=Submission.Status.PENDING)
    again, computed = answer(anonymous_api)
    assert (again, computed) == (public, False)
    # Alice's own view holds her pending result, computed for her alone.
    hers, computed = answer(alice_api)
    assert computed
    assert cell(hers, "btrfs", 1)["n"] == 1
    assert cell(public, "btrfs", 1) is None
    hers_again, computed = answer(alice_api)
    assert computed
    assert hers_again == hers


def test_a_signed_in_user_with_nothing_unpublished_shares_the_public_answer(
    stored, bob_api, anonymous_api
):
    public, _ = answer(anonymous_api)
    assert answer(bob_api) == (public, False)


def test_a_filter_with_an_alias_spelling_is_not_served_the_answer_from_before_the_rule(
    stored, moderator, anonymous_api
):
    query = {**QUERY, "filesystem": "zetta"}
    nothing, _ = answer(anonymous_api, query)
    assert nothing["series"] == []
    alias_rule_add(
        actor=moderator, dimension="storage", field="filesystem", from_value="zetta", to_value="zfs"
    )
    found, computed = answer(anonymous_api, query)
    assert computed
    assert zfs_cell(found)["n"] == 1


def test_a_renamed_submitter_is_not_found_by_the_old_name(stored, bob, anonymous_api):
    query = {**QUERY, "submitter": "bob"}
    found, _ = answer(anonymous_api, query)
    assert found["series"]
    bob.username = "robert"
    bob.save()
    gone, computed = answer(anonymous_api, query)
    assert computed
    assert gone["series"] == []


def test_migrate_starts_every_answer_afresh(stored, anonymous_api):
    """A dump restored under a running site is followed by migrate
    (docs/operations.md): no answer of the data before it is served."""
    answer(anonymous_api)
    call_command("migrate", verbosity=0)
    assert answer(anonymous_api)[1]


def _filter_value(name: str) -> str:
    if name in ("cores", "threads", "ram_bytes_min", "ram_bytes_max"):
        return "4"
    if name == "submission":
        return "0b0e4e34-1f83-4b43-9d4b-9b9d4c7f2f11"
    if name == "benchmark":
        return "select-update"
    return (known_values(name) or ["x"])[0]


def test_every_table_a_comparison_reads_tells_of_its_changes(stored):
    """Each table in the statements of a comparison and of its pooling,
    with every filter applied, is a model whose saves and deletions
    changes.py watches: a new filter or join cannot silently read a table
    whose changes go unseen."""
    params = {name: [_filter_value(name)] for name in RUN_FIELDS if name != "filesystem"}
    params.update({key: [value] for key, value in QUERY.items()})
    params["param.mode"] = ["4"]
    params["run_param.rows"] = ["100"]
    query = comparison_query_parse(params)
    with CaptureQueriesContext(connection) as queries:
        try:
            selectors._comparison_compute(
                AnonymousUser(), query, selectors._measurements(AnonymousUser(), query), True, True
            )
            selectors._pooling_compute(query, selectors._measurements(AnonymousUser(), query))
        except InvalidComparison as exc:
            pytest.fail(f"the filters were refused: {exc.errors}")
    read = set()
    for captured in queries.captured_queries:
        read.update(re.findall(r'(?:FROM|JOIN)\s+"(\w+)"', captured["sql"]))
    assert {"results_measurement", "results_run", "results_submission", "auth_user"} <= read
    watched = {model._meta.db_table for model in changes.WATCHED_MODELS}
    # Alias rules are not read by the statement but by the filters before it.
    assert read - watched == set()
    for model in changes.WATCHED_MODELS:
        assert post_save.has_listeners(model), model
