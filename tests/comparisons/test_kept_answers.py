"""Kept comparison answers (benchhub/comparisons/kept.py) on the real
PostgreSQL and Redis: an answer is served again only while nothing it read
has changed, whatever changed it (changes.py) and whenever the change
committed.

Transactional tests: nothing is kept inside a transaction, so the usual
test transaction would keep nothing."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.cache import cache, caches
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from benchhub.celery import app
from benchhub.comparisons import changes, kept, selectors, services, tasks
from benchhub.comparisons.query import InvalidComparison, comparison_query_parse
from benchhub.comparisons.tasks import comparisons_refresh_task
from benchhub.moderation.services import alias_rule_add, alias_rules_apply, submission_moderate
from benchhub.results import events
from benchhub.results.filters import RUN_FIELDS, known_values
from benchhub.results.models import Hardware, Measurement, Metric, Run, Storage, Submission
from benchhub.results.services import submission_create
from tests.factories import sql_bench_document, sweep_document
from tests.workers import in_process_worker

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/comparisons/"
QUERY = {
    "benchmark": "select-update",
    "metric": "throughput",
    "x": "param.clients",
    "series": "filesystem",
}


def upload(user, filesystem: str, scale: float, status=Submission.Status.APPROVED) -> Submission:
    # Skewed values, one point measured by some runs only.
    values = {1: 101.0 * scale, 4: 377.5 * scale**2, 16: 910.25 * scale**0.5}
    if scale > 1:
        values[64] = 1333.0 * scale
    document = sweep_document(values, storage={"filesystem": filesystem})
    return submission_create(submitter=user, document=document, status=status).submission


@pytest.fixture(autouse=True)
def _nothing_kept_before() -> Iterator[None]:
    """No answers, versions or served index of earlier tests, and no bump
    left to retry."""
    client = caches["kept"]._cache.get_client(write=True)
    for key in _kept_keys("*"):
        client.delete(key)
    kept._unbumped.clear()
    yield
    kept._unbumped.clear()


def _kept_keys(kind: str = "answer") -> list[bytes]:
    kept_cache = caches["kept"]
    client = kept_cache._cache.get_client(write=True)
    return list(client.scan_iter(match=f"{kept_cache.key_prefix}:*:{kind}:*"))


@pytest.fixture(autouse=True)
def _exact(settings) -> None:
    """No grace: these tests check what makes an answer stale, seen by the
    very next request. The grace within which a stale answer is still
    served while the worker computes it again is tested on its own."""
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 0


@pytest.fixture
def moderator(db) -> User:
    return User.objects.create_superuser(username="mod", password="x" * 16)


@pytest.fixture
def stored(bob):
    for scale in (1.0, 1.37, 0.61, 2.2):
        upload(bob, "ext4", scale)
        upload(bob, "xfs", scale * 1.13)
    upload(bob, "zfs", 0.9)
    _refresh_window_over()


def _refresh_window_over() -> None:
    """The approved uploads of a fixture queued a refresh (services.py):
    the burst's window is over, the test's own changes queue their own."""
    cache.delete(services._QUEUED)


def answer(client, query=QUERY) -> tuple[dict, bool]:
    """The API's answer, and whether the cells were computed for it."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(URL, query)
    assert response.status_code == 200, response.content[:300]
    computed = any("percentile_cont" in q["sql"] for q in queries.captured_queries)
    return response.json(), computed


def cell(data: dict, series: str, x: int) -> dict | None:
    for entry in data["series"]:
        if entry["label"] == series:
            return next((p for p in entry["points"] if p["x"] == x), None)
    return None


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


def _approve_pending(ctx):
    pending = upload(ctx["bob"], "btrfs", 1.5, status=Submission.Status.PENDING)
    submission_moderate(submission=pending, actor=ctx["moderator"], action="approve")


def _hide_approved(ctx):
    submission_moderate(submission=ctx["zfs"], actor=ctx["moderator"], action="hide", reason="r")


def _delete_row(ctx):
    ctx["zfs"].delete()


def _trusted_upload(ctx):
    upload(ctx["bob"], "zfs", 3.1)


def _saved_each(rows, **values) -> None:
    """As the admin or a shell edits rows: one save() each."""
    for row in rows:
        for name, value in values.items():
            setattr(row, name, value)
        row.save()


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


def zfs_cell(data):
    return cell(data, "zfs", 1)


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


def _in_another_connection(work: Callable[[], None]) -> None:
    def run():
        try:
            work()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def test_a_change_committed_while_an_answer_is_computed_is_not_missed_after(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    """The answer computed reads the cells before the change commits, and
    the versions before that: the commit replaces them, so the answer is
    never served as current, and the next request computes again."""
    pending = upload(bob, "btrfs", 1.5, status=Submission.Status.PENDING)
    original = selectors.combined_scores
    calls = []

    def change_then_score(comparison):
        if not calls:
            _in_another_connection(
                lambda: submission_moderate(submission=pending, actor=moderator, action="approve")
            )
        calls.append(1)
        return original(comparison)

    monkeypatch.setattr(selectors, "combined_scores", change_then_score)
    during, computed = answer(anonymous_api)
    assert computed
    assert cell(during, "btrfs", 1) is None  # read before the approval committed
    after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


@contextmanager
def _change_held_open(bob, moderator) -> Iterator[Callable[[], None]]:
    """A pending btrfs result approved in a transaction of another
    connection, committed by the function yielded, or on leaving."""
    pending = upload(bob, "btrfs", 1.5, status=Submission.Status.PENDING)
    changed, release = threading.Event(), threading.Event()

    def run():
        try:
            with transaction.atomic():
                submission_moderate(submission=pending, actor=moderator, action="approve")
                changed.set()
                release.wait(30)
        finally:
            connections.close_all()

    def commit():
        release.set()
        thread.join()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert changed.wait(30)
        yield commit
    finally:
        commit()


def test_a_change_not_yet_committed_is_served_the_kept_answer_until_it_commits(
    stored, bob, moderator, anonymous_api
):
    before, _ = answer(anonymous_api)
    with _change_held_open(bob, moderator):
        assert answer(anonymous_api) == (before, False)
    after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_a_change_running_when_an_answer_began_and_committed_after_is_not_missed(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    """The change is in progress when the answer reads its versions and
    cells; it commits before the answer is stored."""
    original = selectors.combined_scores
    with _change_held_open(bob, moderator) as commit:

        def commit_then_score(comparison):
            commit()
            return original(comparison)

        monkeypatch.setattr(selectors, "combined_scores", commit_then_score)
        during, computed = answer(anonymous_api)
    assert computed
    assert cell(during, "btrfs", 1) is None  # read before the change committed
    monkeypatch.undo()
    after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_a_bump_the_cache_refused_is_retried_and_nothing_is_served_until_it_is(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    """Redis read-only or away when a change commits: the version is not
    replaced, so the process that made the change remembers it; its next
    answer retries the bump first, and computes while the cache still
    refuses."""
    before, _ = answer(anonymous_api)
    kept_cache = caches["kept"]
    original = kept_cache.set_many
    refused = []

    def refuse(*args, **kwargs):
        refused.append(1)
        raise ConnectionError("the cache refused")

    monkeypatch.setattr(kept_cache, "set_many", refuse)
    _approve_pending({"bob": bob, "moderator": moderator})
    assert refused
    during, computed = answer(anonymous_api)
    assert computed
    assert cell(during, "btrfs", 1)["n"] == 1
    monkeypatch.setattr(kept_cache, "set_many", original)
    after, computed = answer(anonymous_api)  # the retried bump replaced the version
    assert computed
    assert answer(anonymous_api) == (after, False)
    assert cell(before, "btrfs", 1) is None


def test_migrate_starts_every_answer_afresh(stored, anonymous_api):
    """A dump restored under a running site is followed by migrate
    (docs/operations.md): no answer of the data before it is served."""
    answer(anonymous_api)
    call_command("migrate", verbosity=0)
    assert answer(anonymous_api)[1]


def test_nothing_is_kept_inside_a_transaction(stored):
    query = comparison_query_parse({key: [value] for key, value in QUERY.items()})
    with transaction.atomic():
        selectors.comparison_build(user=AnonymousUser(), query=query)
    assert _kept_keys() == []
    selectors.comparison_build(user=AnonymousUser(), query=query)
    assert len(_kept_keys()) == 1


def test_keeping_nothing_when_the_setting_is_zero(stored, anonymous_api, settings):
    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 0
    first, _ = answer(anonymous_api)
    assert answer(anonymous_api) == (first, True)


def test_an_answer_is_kept_for_the_keep_seconds_at_most(stored, anonymous_api, settings):
    settings.BENCHHUB_COMPARISON_KEEP_SECONDS = 600
    answer(anonymous_api)
    (key,) = _kept_keys()
    ttl = caches["kept"]._cache.get_client().ttl(key)
    assert 590 < ttl <= 600


def test_an_unreadable_kept_answer_is_computed_again(stored, anonymous_api):
    first, _ = answer(anonymous_api)
    kept_cache = caches["kept"]
    (key,) = _kept_keys()
    name = "answer:" + key.decode().split(":answer:")[1]
    entry = kept_cache.get(name)
    entry.answer = b"\x80\x04"
    kept_cache.set(name, entry)
    again, computed = answer(anonymous_api)
    assert (again, computed) == (first, True)
    assert answer(anonymous_api) == (first, False)  # and kept again


def test_without_the_cache_the_answer_is_computed(stored, anonymous_api, settings):
    first, _ = answer(anonymous_api)
    settings.CACHES = {
        **settings.CACHES,
        "kept": {**settings.CACHES["kept"], "LOCATION": "redis://127.0.0.1:9/0"},
    }
    assert answer(anonymous_api) == (first, True)
    assert answer(anonymous_api) == (first, True)


def test_the_database_cache_keeps_answers_as_redis_does(
    stored, bob, moderator, anonymous_api, settings
):
    """The embedded default's cache: the table migration 0007 made."""
    settings.CACHES = {
        **settings.CACHES,
        "kept": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "comparisons_kept_cache",
        },
    }
    caches["kept"].clear()  # the table is not flushed between tests
    try:
        first, computed = answer(anonymous_api)
        assert computed
        assert answer(anonymous_api) == (first, False)
        _approve_pending({"bob": bob, "moderator": moderator})
        after, computed = answer(anonymous_api)
        assert computed
        assert cell(after, "btrfs", 1)["n"] == 1
    finally:
        caches["kept"].clear()


class _SlowComputation:
    """A computation in another thread that holds until released: what a
    second request for the same answer meets while the first computes."""

    PARTS = ("asked twice at once", 1)

    def __init__(self, *, fails: bool = False) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.fails = fails
        self.thread = threading.Thread(target=self._ask)

    def _compute(self) -> str:
        self.started.set()
        assert self.release.wait(30)
        if self.fails:
            raise RuntimeError("the first computation failed")
        return "the first one's answer"

    def _ask(self) -> None:
        try:
            with pytest.raises(RuntimeError) if self.fails else contextlib.nullcontext():
                kept.kept_answer(self.PARTS, self._compute, metric=1)
        finally:
            connections.close_all()

    def __enter__(self) -> _SlowComputation:
        self.thread.start()
        assert self.started.wait(30)
        return self

    def __exit__(self, *exc_info) -> None:
        self.release.set()
        self.thread.join(30)


def _ask_in_another_thread() -> tuple[threading.Thread, list]:
    """The second request: (its thread, [its answer, computed by itself?])."""
    outcome: list = []

    def compute() -> str:
        outcome.append("computed")
        return "the second one's answer"

    def ask() -> None:
        try:
            outcome.insert(0, kept.kept_answer(_SlowComputation.PARTS, compute, metric=1))
        finally:
            connections.close_all()

    thread = threading.Thread(target=ask)
    thread.start()
    return thread, outcome


def _waiting_for_another() -> bool:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if kept.waiting:
            return True
        time.sleep(0.02)
    return False


def test_an_answer_asked_for_while_another_process_computes_it_is_computed_once():
    with _SlowComputation():
        second, outcome = _ask_in_another_thread()
        assert _waiting_for_another()
    second.join(30)
    assert outcome == ["the first one's answer"]


def test_a_second_request_computes_itself_if_the_first_fails():
    with _SlowComputation(fails=True):
        second, outcome = _ask_in_another_thread()
        assert _waiting_for_another()
    second.join(30)
    assert outcome == ["the second one's answer", "computed"]


def test_a_second_request_waits_for_the_first_at_most_the_limit(monkeypatch):
    monkeypatch.setattr(kept, "WAIT_SECONDS", 0.2)
    with _SlowComputation():
        second, outcome = _ask_in_another_thread()
        second.join(30)
        assert outcome == ["the second one's answer", "computed"]


def test_the_real_api_computes_a_comparison_asked_twice_at_once_once(
    stored, anonymous_api, monkeypatch
):
    """Two requests of the API at the same time: the cells statement runs once."""
    statements: list[str] = []
    original = kept._versions_and_entry

    def versions_slowly(metric: int, digest: str | None) -> tuple:
        read = original(metric, digest)
        time.sleep(0.3)  # both requests are in before either has computed
        return read

    barrier = threading.Barrier(2)

    def ask() -> None:
        try:
            barrier.wait(10)
            with CaptureQueriesContext(connection) as queries:
                response = anonymous_api.get(URL, QUERY)
            assert response.status_code == 200
            statements.extend(q["sql"] for q in queries.captured_queries)
        finally:
            connections.close_all()

    monkeypatch.setattr(kept, "_versions_and_entry", versions_slowly)
    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sum("percentile_cont" in sql for sql in statements) == 1


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


def _served_at() -> list:
    return sorted((caches["kept"].get("served") or {}).values())


@contextmanager
def _later(monkeypatch, seconds: float) -> Iterator[None]:
    """kept.py's clock ``seconds`` ahead."""
    monkeypatch.setattr(kept, "_clock", lambda: time.time() + seconds)
    try:
        yield
    finally:
        monkeypatch.setattr(kept, "_clock", time.time)


def test_the_refresh_computes_again_what_changed_and_keeps_when_it_was_served(
    stored, bob, moderator, anonymous_api
):
    before, _ = answer(anonymous_api)
    (served,) = _served_at()
    assert comparisons_refresh_task() == 0  # nothing changed
    _approve_pending({"bob": bob, "moderator": moderator})
    assert comparisons_refresh_task() == 1
    assert _served_at() == [served]  # a refresh is not a visit
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(after, "btrfs", 1)["n"] == 1
    assert cell(before, "btrfs", 1) is None


def test_within_the_grace_a_changed_answer_is_served_until_the_refresh_replaces_it(
    stored, bob, moderator, anonymous_api, settings
):
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    before, _ = answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    assert answer(anonymous_api) == (before, False)  # served, the approval not in it yet
    assert comparisons_refresh_task() == 1  # the refresh is not served the stale answer
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(before, "btrfs", 1) is None
    assert cell(after, "btrfs", 1)["n"] == 1


def test_after_the_grace_a_changed_answer_is_computed_on_request(
    stored, bob, moderator, anonymous_api, settings, monkeypatch
):
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    with _later(monkeypatch, 25):
        assert answer(anonymous_api)[1] is False  # 25 s after: still within
    with _later(monkeypatch, 35):
        after, computed = answer(anonymous_api)
    assert computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_the_grace_counts_from_the_oldest_change_the_answer_missed(
    stored, bob, moderator, anonymous_api, settings, monkeypatch
):
    """Changes every 20 s do not keep an answer served for ever: 35 s after
    the first it missed, it is computed, though the latest is 15 s old."""
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    before, _ = answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    with _later(monkeypatch, 20):
        during, computed = answer(anonymous_api)
        assert (during, computed) == (before, False)
        _hide_approved(
            {"moderator": moderator, "zfs": Submission.objects.get(runs__storage__filesystem="zfs")}
        )
    with _later(monkeypatch, 35):
        after, computed = answer(anonymous_api)
    assert computed
    assert zfs_cell(after) is None


def test_a_refresh_that_cannot_replace_a_changed_answer_deletes_it(
    stored, bob, moderator, anonymous_api, settings, monkeypatch
):
    """Its filters refused now, or its key changed with an alias rule: the
    stale answer is neither picked by every refresh nor served."""
    settings.BENCHHUB_COMPARISON_STALE_SECONDS = 30
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    monkeypatch.setattr(tasks, "comparison_answer_refresh", lambda request: False)
    assert comparisons_refresh_task() == 0
    assert _kept_keys() == []


def test_an_answer_nobody_asked_for_within_the_hour_is_not_refreshed(
    stored, bob, moderator, anonymous_api, monkeypatch
):
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    with _later(monkeypatch, 2 * 3600):
        assert comparisons_refresh_task() == 0
        assert answer(anonymous_api)[1]  # computed on request


def test_serving_an_answer_again_brings_its_last_serving_up_to_date(
    stored, anonymous_api, monkeypatch
):
    answer(anonymous_api)
    (old,) = _served_at()
    assert not answer(anonymous_api)[1]
    assert _served_at() == [old]  # not every time
    with _later(monkeypatch, 600):
        assert not answer(anonymous_api)[1]
    (new,) = _served_at()
    assert new > old + 500


def test_the_page_s_pooling_answer_is_refreshed_too(stored, bob, moderator, client):
    # Filesystem on x, nothing fixed: each cell pools the clients.
    query = {"benchmark": "select-update", "metric": "throughput", "x": "filesystem"}
    response = client.get("/compare/", query)
    assert response.status_code == 200
    assert b"clients" in response.content
    assert len(_kept_keys()) == 2  # the comparison and its pooling
    _approve_pending({"bob": bob, "moderator": moderator})
    assert comparisons_refresh_task() == 2
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/compare/", query)
    assert again.status_code == 200
    assert not any("percentile_cont" in q["sql"] for q in queries.captured_queries)
    assert b"btrfs" in again.content


def _wait_until_refreshed(failure: str) -> None:
    """Until no kept answer is stale and one is kept (the worker stored it
    again), at most a minute; else fail with ``failure``."""
    deadline = time.monotonic() + 60
    while kept.kept_answers_stale(served_within=3600, limit=1) or not _served_at():
        assert time.monotonic() < deadline, failure
        time.sleep(0.2)


def test_a_real_worker_refreshes_the_answer_after_an_approval(
    stored, bob, moderator, anonymous_api
):
    answer(anonymous_api)
    _approve_pending({"bob": bob, "moderator": moderator})
    app.control.purge()
    with in_process_worker():
        comparisons_refresh_task.delay()
        _wait_until_refreshed("the worker did not refresh the answer")
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_an_approval_has_the_worker_refresh_the_answers_without_beat(
    stored, bob, moderator, anonymous_api
):
    """No call of the task here and no beat: the approval queues it."""
    answer(anonymous_api)
    pending = upload(bob, "btrfs", 1.5, status=Submission.Status.PENDING)
    app.control.purge()
    with in_process_worker():
        submission_moderate(submission=pending, actor=moderator, action="approve")
        _wait_until_refreshed("the approval did not have the answer refreshed")
    after, computed = answer(anonymous_api)
    assert not computed
    assert cell(after, "btrfs", 1)["n"] == 1


def test_a_burst_of_moderation_queues_one_refresh_after_it(stored, bob, moderator, monkeypatch):
    queued = []
    monkeypatch.setattr(
        comparisons_refresh_task, "apply_async", lambda *a, **options: queued.append(options)
    )
    pending = [
        upload(bob, "btrfs", 1.0 + step / 10, status=Submission.Status.PENDING) for step in range(4)
    ]
    submission_moderate(submission=pending[0], actor=moderator, action="flag", reason="odd")
    assert queued == []  # flagged: still not public, no answer changed
    for submission in pending[1:]:
        submission_moderate(submission=submission, actor=moderator, action="approve")
    assert queued == [{"countdown": services.REFRESH_AFTER_SECONDS}]
    cache.delete(services._QUEUED)  # the burst's window is over
    submission_moderate(submission=pending[1], actor=moderator, action="hide", reason="dup")
    assert len(queued) == 2


def test_stored_values_renamed_by_an_alias_rule_queue_a_refresh(stored, moderator, monkeypatch):
    queued = []
    monkeypatch.setattr(
        comparisons_refresh_task, "apply_async", lambda *a, **options: queued.append(options)
    )
    alias_rule_add(
        actor=moderator, dimension="storage", field="filesystem", from_value="xfs", to_value="ext4"
    )
    assert queued == []  # the rule alone renames nothing stored yet
    while alias_rules_apply():
        pass
    assert Storage.objects.filter(filesystem="xfs").count() == 0
    assert queued == [{"countdown": services.REFRESH_AFTER_SECONDS}]


# Changes by metric: an answer reads one metric's measurements, and only
# the changes of that metric, or of every metric, make it stale.

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
