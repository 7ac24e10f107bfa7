"""A request whose transaction a concurrent change broke: a row the upload
refers to deleted before its COMMIT (PostgreSQL checks foreign keys
there), a deadlock, a serialization failure. Each made on the real
database by a second connection; the answer is 503 with Retry-After,
names what happened and says to send again (a 500 before, or a 503
claiming the database was not answering), and nothing of the request is
stored."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections, transaction
from django.test import Client
from django.utils.html import escape

from benchhub.accounts.roles import role_grant
from benchhub.moderation import services as moderation_services
from benchhub.results import events
from benchhub.results import services as result_services
from benchhub.results.models import Benchmark, Hardware, Measurement, Run, Submission
from benchhub.results.services import submission_create
from tests.factories import small_document
from tests.imports.test_tool_upload_form import sysbench_form

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/submissions/"


class OtherConnection:
    """``work`` in a thread with a connection of its own (an administrator's,
    another request's), committed when it returns."""

    def __init__(self, work: Callable[[], object]) -> None:
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(work,))
        self.thread.start()

    def _run(self, work: Callable[[], object]) -> None:
        try:
            with transaction.atomic():
                work()
        except BaseException as error:  # reported in the test's thread
            self.failure.append(error)
        finally:
            connections.close_all()

    def join(self) -> None:
        self.thread.join(30)
        assert not self.thread.is_alive() and not self.failure, self.failure


def while_the_upload_is_stored(monkeypatch, work: Callable[[], object]) -> None:
    """Commit ``work`` on another connection once the upload has written its
    rows and before it commits (submission_arrived is its last step in the
    transaction)."""
    arrived = events.hooks.arrived

    def after_work(submission):
        OtherConnection(work).join()
        return arrived(submission)

    monkeypatch.setattr(events.hooks, "arrived", after_work)


def before_the_upload_stores(monkeypatch, work: Callable[[], object]) -> None:
    """Run ``work`` just before the upload writes: in its transaction when it
    has one (the first upload of a machine, whose rows it creates, does; a
    known machine's upload is one statement on its own)."""
    store = result_services.store

    def after_work(*args, **kwargs):
        work()
        return store(*args, **kwargs)

    monkeypatch.setattr(result_services, "store", after_work)


def lock_benchmark(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE results_benchmark SET title = title WHERE name = %s", [name])


def assert_told_to_send_again(answer, *, naming: str) -> str:
    assert answer.status_code == 503, answer.content
    assert answer["Retry-After"] == "1"
    error = answer.json()["error"]
    assert error["code"] == "concurrent_change"
    assert naming in error["message"], error["message"]
    assert "nothing of it was stored; send it again" in error["message"]
    assert "not answering" not in error["message"]
    return error["message"]


def test_an_upload_whose_hardware_row_is_deleted_before_its_commit_is_told_to_send_again(
    alice_api, bob_api, monkeypatch
):
    # bob's upload described the machine; his run was deleted since (the
    # admin can), leaving a hardware row that nothing refers to.
    assert bob_api.post(URL, small_document(), format="json").status_code == 201
    Run.objects.all().delete()
    (hardware,) = Hardware.objects.all()
    # The administrator deletes it once alice's upload of the same machine
    # has found it, before the upload stores its run on it (a known machine's
    # upload is one statement, which commits itself: there is no moment
    # between its writes and its commit).
    before_the_upload_stores(
        monkeypatch,
        lambda: OtherConnection(lambda: Hardware.objects.filter(pk=hardware.pk).delete()).join(),
    )
    document = small_document()

    answer = alice_api.post(URL, document, format="json")

    assert_told_to_send_again(
        answer, naming=f"hardware with id {hardware.pk} this request refers to was deleted"
    )
    assert not Submission.objects.filter(uuid=document["uuid"]).exists()
    assert not Run.objects.exists() and not Measurement.objects.exists()
    # Sent again, it is stored, on a hardware row of its own.
    monkeypatch.undo()
    assert alice_api.post(URL, document, format="json").status_code == 201
    assert Run.objects.get().hardware_id != hardware.pk


def test_an_upload_whose_benchmark_is_deleted_before_its_commit_is_told_so(alice_api, monkeypatch):
    document = small_document()
    benchmark = Benchmark.objects.get(name=document["runs"][0]["benchmark"])
    while_the_upload_is_stored(
        monkeypatch, lambda: Benchmark.objects.filter(pk=benchmark.pk).delete()
    )

    answer = alice_api.post(URL, document, format="json")

    assert_told_to_send_again(answer, naming=f"benchmark with id {benchmark.pk}")
    assert not Submission.objects.exists() and not Run.objects.exists()


class Deadlock:
    """Another transaction locks one catalog row and waits for a second;
    called in the request's transaction, this locks the second and waits
    for the first. The other one checks for a deadlock only after a
    minute: PostgreSQL breaks the tie (after its deadlock_timeout, a
    second) by failing the request."""

    def __init__(self) -> None:
        self._other_has_its_row = threading.Event()
        self._request_has_its_row = threading.Event()
        self.other = OtherConnection(self._other)

    def _other(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL deadlock_timeout = '60s'")
        lock_benchmark("select-update")
        self._other_has_its_row.set()
        assert self._request_has_its_row.wait(20)
        lock_benchmark("tpcb")

    def __call__(self) -> None:
        assert self._other_has_its_row.wait(20)
        lock_benchmark("tpcb")
        self._request_has_its_row.set()
        lock_benchmark("select-update")


def test_a_deadlock_is_a_conflict_to_send_again_not_a_database_that_is_away(alice_api, monkeypatch):
    """The upload locks one catalog row, another transaction the other,
    and each then waits for the other's."""
    deadlock = Deadlock()
    before_the_upload_stores(monkeypatch, deadlock)

    answer = alice_api.post(URL, small_document(), format="json")

    deadlock.other.join()  # it got the row once the upload was rolled back
    assert_told_to_send_again(answer, naming="(a deadlock)")
    assert not Submission.objects.exists()


def test_a_bulk_approval_whose_second_submission_deadlocks_says_so_for_that_one(alice):
    """Each submission of a selection is approved in its own transaction:
    one broken by a deadlock leaves the others approved. The answer says
    which one was not done and why, not a 503 saying that nothing was."""
    moderator = User.objects.create_user(username="mia")
    role_grant(user=moderator, role="moderator")
    first, second = (
        submission_create(submitter=alice, document=small_document()).submission for _ in "12"
    )
    marked = moderation_services.baselines_mark_dirty
    deadlocks: list[Deadlock] = []

    def marking_into_a_deadlock_the_second_time(**kwargs):
        if deadlocks:
            deadlocks[0]()
        deadlocks.append(Deadlock())
        return marked(**kwargs)

    browser = Client(raise_request_exception=False)
    browser.force_login(moderator)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            moderation_services, "baselines_mark_dirty", marking_into_a_deadlock_the_second_time
        )
        page = browser.post(
            "/moderation/act/",
            {"do": "approve", "submission": [str(first.uuid), str(second.uuid)]},
            follow=True,
        )
    for deadlock in deadlocks:
        deadlock.other.join()

    assert page.status_code == 200, page.content.decode()[:300]
    statuses = dict(Submission.objects.values_list("status", "uuid"))
    assert set(statuses) == {Submission.Status.APPROVED, Submission.Status.PENDING}
    text = page.content.decode()
    assert "Approve: 1 submission." in text
    not_done = str(statuses[Submission.Status.PENDING])[:8]
    assert f"{not_done}…: not done: " in text and "(a deadlock)" in text, text
    assert "try it again" in text


def test_a_serialization_failure_is_a_conflict_to_send_again(alice_api, monkeypatch):
    def serialization_failure() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT title FROM results_benchmark WHERE name = 'tpcb'")
        # Changed and committed after this transaction's snapshot.
        OtherConnection(lambda: lock_benchmark("tpcb")).join()
        lock_benchmark("tpcb")

    before_the_upload_stores(monkeypatch, serialization_failure)

    answer = alice_api.post(URL, small_document(), format="json")

    assert_told_to_send_again(answer, naming="(a serialization failure)")
    assert not Submission.objects.exists()


def stored_from_the_form(alice: User, form: dict[str, str]):
    browser = Client(raise_request_exception=False)
    browser.force_login(alice)
    return browser.post("/imports/new/", form)


def assert_form_kept_and_told_to_store_again(page, form: dict[str, str], *, naming: str) -> None:
    """The form again, filled in as it was sent, the pasted output too, with
    what happened and what to do; not a page that loses what was pasted."""
    assert page.status_code == 503
    assert page["Retry-After"] == "1"
    assert page.templates[0].name == "imports/upload.html"
    (error,) = page.context["form"].non_field_errors()
    assert naming in error, error
    assert "Nothing was stored" in error and "press Store again" in error
    text = page.content.decode()
    assert escape(form["output"]) in text
    assert f'value="{form["hardware_cpu"]}"' in text


def test_the_import_form_whose_upload_lost_its_benchmark_keeps_what_was_pasted(alice, monkeypatch):
    while_the_upload_is_stored(monkeypatch, lambda: Benchmark.objects.all().delete())
    form = sysbench_form()

    page = stored_from_the_form(alice, form)

    assert_form_kept_and_told_to_store_again(
        page, form, naming="this request refers to was deleted by a concurrent change"
    )
    assert not Submission.objects.exists()


def test_the_import_form_after_a_deadlock_stores_when_store_is_pressed_again(alice, monkeypatch):
    deadlock = Deadlock()
    before_the_upload_stores(monkeypatch, deadlock)
    form = sysbench_form()

    page = stored_from_the_form(alice, form)

    deadlock.other.join()
    assert_form_kept_and_told_to_store_again(page, form, naming="(a deadlock)")
    assert not Submission.objects.exists()
    monkeypatch.undo()
    again = stored_from_the_form(alice, form)
    assert again.status_code == 302
    assert Submission.objects.count() == 1
