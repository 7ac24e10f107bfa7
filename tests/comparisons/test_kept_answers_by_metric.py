"""Changes by metric: an answer reads one metric's measurements, and only
the changes of that metric, or of every metric, make it stale.

Transactional tests: nothing is kept inside a transaction, so the usual
test transaction would keep nothing. The fixtures are in conftest.py, the
helpers in kept_answers.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchhub.comparisons import kept
from benchhub.comparisons.tasks import comparisons_refresh_task
from benchhub.moderation.services import alias_rule_add, alias_rules_apply, submission_moderate
from benchhub.results.models import Hardware, Measurement, Metric, Run, Storage, Submission
from benchhub.results.services import submission_create
from tests.comparisons.kept_answers import _refresh_window_over, _saved_each, answer, cell
from tests.factories import sql_bench_document

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("_nothing_kept_before", "_exact"),
]


SQL_BENCH = {
    "benchmark": "sql-bench",
    "metric": "seconds",
    "x": "param.operation",
    "series": "filesystem",
}


def sql_bench_upload(user, filesystem: str, scale: float, status=Submission.Status.APPROVED):
    document = sql_bench_document(
        {"insert": 12.5 * scale, "select_range": 3.25 * scale}, filesystem
    )
    return submission_create(submitter=user, document=document, status=status).submission


@pytest.fixture
def sql_bench(bob) -> Submission:
    """Two sql-bench results beside ``stored``'s select-update ones; the zfs one."""
    sql_bench_upload(bob, "ext4", 1.0)
    zfs = sql_bench_upload(bob, "zfs", 1.4)
    _refresh_window_over()
    return zfs


def _sql_bench_approved(ctx):
    pending = sql_bench_upload(ctx["bob"], "xfs", 0.8, status=Submission.Status.PENDING)
    submission_moderate(submission=pending, actor=ctx["moderator"], action="approve")


def _sql_bench_hidden(ctx):
    submission_moderate(
        submission=ctx["sql_bench"], actor=ctx["moderator"], action="hide", reason="r"
    )


def _sql_bench_deleted(ctx):
    ctx["sql_bench"].delete()


def _sql_bench_trusted_upload(ctx):
    sql_bench_upload(ctx["bob"], "xfs", 0.8)


def _sql_bench_value_corrected(ctx):
    _saved_each(Measurement.objects.filter(run__submission=ctx["sql_bench"]), value=0.5)


def _sql_bench_measurement_deleted(ctx):
    Measurement.objects.filter(
        run__submission=ctx["sql_bench"], parameters__operation="insert"
    ).delete()


def _sql_bench_run_edited(ctx):
    xfs = Storage.objects.filter(filesystem="xfs").first()
    _saved_each(Run.objects.filter(submission=ctx["sql_bench"]), storage=xfs)


SQL_BENCH_CHANGES: dict[str, Callable] = {
    "a pending result approved": _sql_bench_approved,
    "an approved result hidden": _sql_bench_hidden,
    "an approved submission deleted": _sql_bench_deleted,
    "an approved result uploaded": _sql_bench_trusted_upload,
    "a value corrected": _sql_bench_value_corrected,
    "a measurement deleted": _sql_bench_measurement_deleted,
    "a run edited": _sql_bench_run_edited,
}


@pytest.mark.parametrize("change", list(SQL_BENCH_CHANGES))
def test_a_change_of_another_benchmark_leaves_an_answer_kept(
    change, stored, sql_bench, bob, moderator, anonymous_api
):
    select_update, _ = answer(anonymous_api)
    seconds, _ = answer(anonymous_api, SQL_BENCH)
    SQL_BENCH_CHANGES[change]({"bob": bob, "moderator": moderator, "sql_bench": sql_bench})
    # No grace (_exact): a stale answer would be computed here.
    assert answer(anonymous_api) == (select_update, False)
    after, computed = answer(anonymous_api, SQL_BENCH)
    assert computed
    assert after != seconds


def test_the_refresh_computes_again_only_the_answers_of_the_metric_changed(
    stored, sql_bench, bob, moderator, anonymous_api
):
    answer(anonymous_api)
    seconds, _ = answer(anonymous_api, SQL_BENCH)
    _sql_bench_approved({"bob": bob, "moderator": moderator})
    stale = kept.kept_answers_stale(served_within=3600, limit=10)
    assert [request[1].metric.name for _, request, _ in stale] == ["seconds"]
    with CaptureQueriesContext(connection) as queries:
        assert comparisons_refresh_task() == 1
    assert sum("percentile_cont" in q["sql"] for q in queries.captured_queries) == 1
    # Both served kept, the sql-bench one with the approval in it.
    assert answer(anonymous_api)[1] is False
    after, computed = answer(anonymous_api, SQL_BENCH)
    assert not computed
    assert cell(after, "xfs", "insert")["n"] == 1
    assert cell(seconds, "xfs", "insert") is None


def _alias_rule(ctx):
    alias_rule_add(
        actor=ctx["moderator"],
        dimension="storage",
        field="filesystem",
        from_value="zetta",
        to_value="zfs",
    )


def _user_renamed(ctx):
    ctx["bob"].username = "robert"
    ctx["bob"].save()


def _hardware_edited(ctx):
    _saved_each(Hardware.objects.all(), threads=64)


def _metric_edited(ctx):
    _saved_each(Metric.objects.filter(name="seconds"), description="per operation")


EVERY_METRIC_CHANGES: dict[str, Callable] = {
    "an alias rule": _alias_rule,
    "a user renamed": _user_renamed,
    "a dimension row edited": _hardware_edited,
    "the catalog edited": _metric_edited,
}


@pytest.mark.parametrize("change", list(EVERY_METRIC_CHANGES))
def test_a_change_of_what_every_metric_shares_makes_every_answer_stale(
    change, stored, sql_bench, bob, moderator, anonymous_api
):
    answer(anonymous_api)
    answer(anonymous_api, SQL_BENCH)
    EVERY_METRIC_CHANGES[change]({"bob": bob, "moderator": moderator})
    assert answer(anonymous_api)[1]
    assert answer(anonymous_api, SQL_BENCH)[1]


def test_stored_values_renamed_by_an_alias_rule_make_every_answer_stale(
    stored, sql_bench, moderator, anonymous_api
):
    alias_rule_add(
        actor=moderator, dimension="storage", field="filesystem", from_value="xfs", to_value="ext4"
    )
    before, _ = answer(anonymous_api)
    answer(anonymous_api, SQL_BENCH)
    assert answer(anonymous_api) == (before, False)  # the rule alone renamed nothing yet
    while alias_rules_apply():
        pass
    after, computed = answer(anonymous_api)
    assert computed
    assert cell(before, "xfs", 1) is not None
    assert cell(after, "xfs", 1) is None
    assert answer(anonymous_api, SQL_BENCH)[1]


def test_a_user_signing_in_leaves_the_answers_kept(stored, bob, anonymous_api, client):
    """A sign-in saves the user's last_login only: no name changed."""
    first, _ = answer(anonymous_api)
    bob.set_password("a long enough password")
    User.objects.filter(pk=bob.pk).update(password=bob.password)
    assert client.login(username="bob", password="a long enough password")
    assert answer(anonymous_api) == (first, False)


@pytest.mark.parametrize(
    ("of", "served"),
    [("another metric", True), ("its metric", False), ("every metric", False)],
)
def test_an_answer_is_served_until_a_version_of_its_metric_or_of_every_metric_changes(of, served):
    """Metric 7's answer, a change of metric 8, of 7, or of every metric."""
    computed = []

    def compute() -> str:
        computed.append(1)
        return f"answer {len(computed)}"

    assert kept.kept_answer(("k",), compute, metric=7) == "answer 1"
    assert kept.kept_answer(("k",), compute, metric=7) == "answer 1"
    kept.versions_bump({"another metric": [8], "its metric": [7], "every metric": None}[of])
    assert kept.kept_answer(("k",), compute, metric=7) == ("answer 1" if served else "answer 2")
