"""The embedded default (SQLite, no broker: the refresh runs in-process after
each upload's commit), in a process of its own, since the suite runs on
PostgreSQL. Marks written by raw SQL must compare equal to what Django reads
back there, or no run mark is ever cleared."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchhub.baselines import tasks
from benchhub.results.services import submission_create
from tests.factories import small_document

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import threading
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import transaction
from benchhub.baselines.models import Baseline, CountedRun, DirtyKey, DirtyRun
from benchhub.results.services import submission_create
from tests.factories import small_document

call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user(username="embedded")
for value in (1000.0, 1000.0, 1300.0):
    document = small_document()
    document["runs"][0]["measurements"][1]["value"] = value
    with transaction.atomic():  # its commit runs the in-process round
        submission_create(submitter=user, document=document, status="approved")
from benchhub.baselines.tasks import WAITER_THREAD
for thread in threading.enumerate():  # the next round's waiter, if any: its rounds end it
    if thread.name == WAITER_THREAD:
        thread.join()
baseline = Baseline.objects.get(parameters={"clients": 20})
print(DirtyRun.objects.count(), DirtyKey.objects.count(), CountedRun.objects.count(),
      baseline.n, baseline.median, baseline.maximum)
"""


CONCURRENT = """
import threading
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from benchhub.baselines.models import CountedRun, DirtyRun
from benchhub.results.services import submission_create
from tests.factories import small_document

call_command("migrate", verbosity=0)
users = [get_user_model().objects.create_user(username=f"uploader{i}") for i in range(8)]
failures = []

def upload(user):
    try:
        for _ in range(12):
            with transaction.atomic():  # its commit runs the in-process round
                submission_create(submitter=user, document=small_document(), status="approved")
    except Exception as exc:
        failures.append(repr(exc))
    finally:
        connection.close()

threads = [threading.Thread(target=upload, args=(user,)) for user in users]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
from benchhub.baselines.tasks import WAITER_THREAD
for thread in threading.enumerate():  # the next round's waiter, if any: its rounds end it
    if thread.name == WAITER_THREAD:
        thread.join()
# No upload after the burst: its last rounds must have taken every mark.
print(len(failures), DirtyRun.objects.count(), CountedRun.objects.count())
"""


# SQLite's busy handler off (busy_timeout 0): a writer of this process that
# met the write lock taken would fail at once ("database is locked"), so
# every upload stored says each one waited for its turn in the backend's
# queue (lib/sqlite) instead. The argument says what each uploader writes:
# "transactions" (uploads, whose commits run the in-process rounds), or
# also "autocommit" statements (an UPDATE outside a transaction, as the API
# token's last use).
QUEUED = """
import sys
import threading
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.backends.signals import connection_created
from django.utils import timezone
from benchhub.baselines.models import DirtyRun
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import small_document

call_command("migrate", verbosity=0)
connection.close()

def no_busy_handler(sender, connection, **kwargs):
    connection.connection.execute("PRAGMA busy_timeout = 0")

connection_created.connect(no_busy_handler)
User = get_user_model()
users = [User.objects.create_user(username=f"uploader{i}") for i in range(8)]
failures = []

def upload(user):
    try:
        for _ in range(10):
            if sys.argv[1] == "autocommit":
                User.objects.filter(pk=user.pk).update(last_login=timezone.now())
            with transaction.atomic():  # its commit runs the in-process round
                submission_create(submitter=user, document=small_document(), status="approved")
    except Exception as exc:
        failures.append(repr(exc))
    finally:
        connection.close()

threads = [threading.Thread(target=upload, args=(user,)) for user in users]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(len(failures), Submission.objects.count(), failures[:1])
"""

# The queue only orders the writers: one that gets no turn within the busy
# timeout (a turn held by something that is no write, here) goes on to
# SQLite's lock and writes; a turn is passed on however a transaction
# ends: committed, rolled back, or its connection closed inside it.
TURNS = """
import threading
import django
django.setup()
from django.conf import settings
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from benchhub.lib.sqlite.base import write_queue

call_command("migrate", verbosity=0)
User = get_user_model()
queue = write_queue(settings.DATABASES["default"]["NAME"])

def free():
    if not queue.acquire(timeout=0.01):
        return False
    queue.release()
    return True

def write_late():
    with transaction.atomic():
        User.objects.create(username="late")
    connection.close()

assert queue.acquire(timeout=1)
writer = threading.Thread(target=write_late)
writer.start()
writer.join(timeout=60)
wrote_without_its_turn = not writer.is_alive()
queue.release()
writer.join()
print("fallback", wrote_without_its_turn, User.objects.filter(username="late").exists(), free())

try:
    with transaction.atomic():
        User.objects.create(username="rolled-back")
        raise RuntimeError
except RuntimeError:
    pass
print("rollback", User.objects.filter(username="rolled-back").exists(), free())

with transaction.atomic():
    User.objects.create(username="closed")
    connection.close()
print("close", free())
"""


# One upload marked and its round held back, then the round alone, with
# every BEGIN counted: on SQLite each transaction is a turn for the write
# lock, so the round's claim, update and release go in one.
ONE_TURN = """
from unittest import mock
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import connection
from benchhub.baselines import tasks
from benchhub.baselines.models import CountedRun, DirtyRun
from benchhub.results.services import submission_create
from tests.factories import small_document

call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user(username="embedded")
with mock.patch.object(tasks, "_in_process_rounds"):
    submission_create(submitter=user, document=small_document(), status="approved")
begins = []

def count_begins(execute, sql, params, many, context):
    if sql.startswith("BEGIN"):
        begins.append(sql)
    return execute(sql, params, many, context)

marked = DirtyRun.objects.count()
with connection.execute_wrapper(count_begins):
    tasks.baselines_refresh_task.apply()
print(marked, len(begins), DirtyRun.objects.count(), CountedRun.objects.count())
"""


# Twenty approved uploads marked with their round held back, then the
# round: its scores and its baselines written by one statement each, not
# Django's bulk_update (a CASE per row and column, in batches of 333 rows
# at most on SQLite): most of a round's time, all of it under the one write
# lock. The baselines must still read what the uploads hold.
APPROVED_ROUND = """
from unittest import mock
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import connection
from benchhub.baselines import tasks
from benchhub.baselines.models import Baseline, DirtyRun
from benchhub.results.models import Measurement
from benchhub.results.services import submission_create
from tests.factories import example_document

call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user(username="embedded")
with mock.patch.object(tasks, "_in_process_rounds"):
    for i in range(20):
        document = example_document()
        for run in document["runs"]:
            for measurement in run["measurements"]:
                measurement["value"] *= 1 + i / 100
        submission_create(submitter=user, document=document, status="approved")
updates = []

def count_updates(execute, sql, params, many, context):
    if sql.startswith("UPDATE"):
        updates.append(sql.split()[1])
    return execute(sql, params, many, context)

with connection.execute_wrapper(count_updates):
    tasks.baselines_refresh_task.apply()
all_scored = not Measurement.objects.filter(outlier_score__isnull=True).exists()
all_stamped = not Baseline.objects.filter(computed_at__isnull=True).exists()
baseline = Baseline.objects.order_by("metric_id", "point").first()
print(updates.count('"results_measurement"'), updates.count('"baselines_baseline"'),
      DirtyRun.objects.count(), all_scored, baseline.n, all_stamped)
"""


PRAGMAS = """
import django
django.setup()
from django.db import connection

with connection.cursor() as cursor:
    print(cursor.execute("PRAGMA journal_mode").fetchone()[0],
          cursor.execute("PRAGMA synchronous").fetchone()[0])
"""


def run_embedded(
    tmp_path: Path, script: str, *args: str, **environ: str
) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "DATABASE_URL", "BENCHHUB_VAR_DIR")
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.sqlite3'}",
        DJANGO_SETTINGS_MODULE="benchhub.settings",
        PYTHONPATH=str(ROOT),
        **environ,
    )
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_concurrent_uploads_on_the_embedded_default_leave_no_run_behind(tmp_path):
    # Eight uploaders at once, as `make run` serves them (one process, a
    # thread per request): every upload stored, and the in-process rounds
    # done rather than refused their write lock ("database is locked"), and
    # nothing left marked when the burst ends: a request that found a round
    # running ran the next one, or returned to one waiting to, so no mark
    # waits for a change that might not come, or for a refresh that only a
    # worker would do.
    done = run_embedded(tmp_path, CONCURRENT)

    assert done.returncode == 0, done.stderr[-3000:]
    assert "database is locked" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "0", "96"], done.stdout


@pytest.mark.slow
def test_in_the_embedded_default_each_upload_brings_its_key_up_to_date(tmp_path):
    done = run_embedded(tmp_path, SCRIPT)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "0", "3", "3", "1000.0", "1300.0"], done.stdout


@pytest.mark.slow
def test_uploads_in_one_process_wait_their_turn_for_the_write_lock(tmp_path):
    done = run_embedded(tmp_path, QUEUED, "transactions")

    assert done.returncode == 0, done.stderr[-3000:]
    assert "database is locked" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.split()[:2] == ["0", "80"], done.stdout


@pytest.mark.slow
def test_writes_outside_a_transaction_wait_their_turn_too(tmp_path):
    done = run_embedded(tmp_path, QUEUED, "autocommit")

    assert done.returncode == 0, done.stderr[-3000:]
    assert "database is locked" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.split()[:2] == ["0", "80"], done.stdout


@pytest.mark.slow
def test_a_turn_is_passed_on_however_a_write_ends_and_never_waited_for_past_the_timeout(
    tmp_path,
):
    done = run_embedded(tmp_path, TURNS, DATABASE_BUSY_TIMEOUT="1")

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "fallback True True True",
        "rollback False True",
        "close True",
    ], done.stdout
    assert "no turn in the write queue after 1 s" in done.stderr


def join_waiters() -> None:
    for thread in threading.enumerate():
        if thread.name == tasks.WAITER_THREAD:
            thread.join(timeout=60)


def test_a_request_that_finds_a_round_running_has_a_waiter_run_the_next_unless_one_already_waits(
    monkeypatch,
):
    # In-process (eager) rounds, one at a time: the first request to find
    # one running starts a waiter, which runs the next one after it; that
    # round starts after the commits of those that came meanwhile and so
    # takes their marks; they return at once. Before, all of them returned,
    # and the marks of a burst's last uploads stayed for a change that
    # might not come.
    rounds = []
    first_started, first_may_end = threading.Event(), threading.Event()

    def round_(**kwargs) -> tuple[int, int]:
        rounds.append(threading.current_thread().name)
        if len(rounds) == 1:
            first_started.set()
            first_may_end.wait(timeout=60)
        return 1, 0  # one key done, none left

    monkeypatch.setattr(tasks, "baselines_refresh", round_)
    first = threading.Thread(target=tasks.baselines_refresh_task.apply, name="first")
    first.start()
    assert first_started.wait(timeout=60)
    second = threading.Thread(target=tasks.baselines_refresh_task.apply, name="second")
    second.start()
    second.join(timeout=60)  # returned: its waiter waits
    assert tasks._next_in_process_round.locked()
    tasks.baselines_refresh_task.apply()  # a third finds the waiter there
    third_returned_with = list(rounds)
    first_may_end.set()
    first.join(timeout=60)
    join_waiters()

    assert third_returned_with == ["first"]
    assert rounds == ["first", tasks.WAITER_THREAD]


def test_a_change_soon_after_a_round_leaves_the_next_to_a_waiter_after_the_interval(
    monkeypatch,
):
    # A round's fixed cost is shared: within IN_PROCESS_ROUND_INTERVAL of
    # the last round no request runs one; the first starts a waiter, which
    # runs one round for all of them once the interval is over, and none of
    # them waits for it.
    rounds = []

    def round_(**kwargs) -> tuple[int, int]:
        rounds.append((threading.current_thread().name, time.monotonic()))
        return 1, 0

    monkeypatch.setattr(tasks, "baselines_refresh", round_)
    last_round_end = time.monotonic()
    monkeypatch.setattr(tasks, "_last_in_process_round_end", last_round_end)
    returned_after = []
    for _ in range(3):
        started = time.monotonic()
        tasks.baselines_refresh_task.apply()
        returned_after.append(time.monotonic() - started)
    rounds_by_then = list(rounds)
    join_waiters()

    assert rounds_by_then == []
    assert max(returned_after) < tasks.IN_PROCESS_ROUND_INTERVAL / 2
    assert [name for name, _ in rounds] == [tasks.WAITER_THREAD]
    assert rounds[0][1] - last_round_end >= tasks.IN_PROCESS_ROUND_INTERVAL
    assert not tasks._in_process_round.locked()
    assert not tasks._next_in_process_round.locked()


def test_on_a_quiet_site_a_change_runs_its_round_at_once_and_the_next_one_soon_after_waits(
    monkeypatch,
):
    rounds = []
    monkeypatch.setattr(tasks, "_claimable_marks", lambda: 0)  # no rebuild mark left either
    monkeypatch.setattr(
        tasks,
        "baselines_refresh",
        lambda **kwargs: rounds.append(threading.current_thread().name) or (1, 0),
    )
    monkeypatch.setattr(
        tasks, "_last_in_process_round_end", time.monotonic() - tasks.IN_PROCESS_ROUND_INTERVAL
    )

    tasks.baselines_refresh_task.apply()
    at_once = list(rounds)
    tasks.baselines_refresh_task.apply()  # within the interval of that round
    rounds_by_then = list(rounds)
    join_waiters()

    assert at_once == [threading.current_thread().name]
    assert rounds_by_then == at_once
    assert rounds == [*at_once, tasks.WAITER_THREAD]


@pytest.mark.slow
def test_an_in_process_round_takes_one_turn_for_the_write_lock(tmp_path):
    done = run_embedded(tmp_path, ONE_TURN)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1", "1", "0", "1"], done.stdout


@pytest.mark.slow
def test_an_approved_round_writes_its_scores_and_baselines_in_one_statement_each(tmp_path):
    done = run_embedded(tmp_path, APPROVED_ROUND)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["1", "1", "0", "True", "20", "True"], done.stdout


@pytest.mark.django_db(transaction=True)
def test_the_waiters_rounds_take_the_marks_of_every_request_that_returned_to_it(alice, monkeypatch):
    # Found in review: a request that returns to the waiter may have marked
    # another key than the one the waiter's first round takes (the oldest),
    # and nothing would take it after them. The waiter goes on while marks
    # are left (a bounded number of rounds).
    from django.db import connection

    from benchhub.baselines import services as baseline_services
    from benchhub.baselines.models import DirtyKey

    monkeypatch.setattr(baseline_services, "_queue_refresh", lambda: None)  # no round yet
    for rows in (1000, 2000):  # two comparability keys
        document = small_document()
        document["runs"][0]["parameters"]["rows"] = rows
        submission_create(submitter=alice, document=document, status="approved")
    assert DirtyKey.objects.count() == 2

    assert tasks._in_process_round.acquire(blocking=False)  # a round is running
    released = False
    try:

        def waiter() -> None:
            try:
                tasks.baselines_refresh_task.apply()
            finally:
                connection.close()

        second = threading.Thread(target=waiter)
        second.start()
        for _ in range(1000):
            if tasks._next_in_process_round.locked():
                break
            time.sleep(0.01)
        assert tasks._next_in_process_round.locked()
        tasks.baselines_refresh_task.apply()  # a third returns to the waiter
        tasks._in_process_round.release()  # the running round ends
        released = True
        second.join(timeout=60)
        join_waiters()
    finally:
        if not released:
            tasks._in_process_round.release()

    assert not tasks._in_process_round.locked()
    assert list(DirtyKey.objects.values_list("fingerprint", flat=True)) == []


@pytest.mark.slow
def test_the_embedded_default_commits_without_waiting_for_the_disk(tmp_path):
    # WAL, and synchronous=NORMAL (1): a commit is not synced, the log is at
    # checkpoints; the file stays consistent through a crash.
    done = run_embedded(tmp_path, PRAGMAS)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["wal", "1"], done.stdout


# More keys than one waiter's rounds take, uploaded faster than the interval,
# then nothing: every key must still be refreshed (the waiter goes on while
# marks are left), and a key marked for a rebuild too (no request does one).
# Then marks left by a process that stopped before its rounds (they are held
# back here) are taken by the next process's start, with no change after it.
MANY_KEYS = """
import sys
import threading
from unittest import mock
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from benchhub.baselines import tasks
from benchhub.baselines.models import Baseline, DirtyKey
from benchhub.baselines.marking import mark_keys
from benchhub.results.models import Run
from benchhub.results.services import submission_create
from tests.factories import small_document

def join_waiter():
    for thread in threading.enumerate():
        if thread.name == tasks.WAITER_THREAD:
            thread.join()

def report(label):
    keys = set(Run.objects.values_list("fingerprint", flat=True))
    with_baseline = set(Baseline.objects.values_list("fingerprint", flat=True))
    print(label, DirtyKey.objects.count(), len(keys), len(keys - with_baseline))

if sys.argv[1] == "burst":
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(username="embedded")
    for rows in (1000, 1300, 1700, 2300, 2900, 3100, 3700, 4100, 4700, 5300, 5900):
        document = small_document()
        document["runs"][0]["parameters"]["rows"] = rows
        with transaction.atomic():  # its commit runs the in-process round
            submission_create(submitter=user, document=document, status="approved")
    join_waiter()
    report("burst")
    key = Run.objects.order_by("id").values_list("fingerprint", flat=True).first()
    Baseline.objects.filter(fingerprint=key).delete()
    mark_keys([key], timezone.now(), rebuild=True)
    tasks.baselines_refresh_task.apply()  # a change: its own round leaves rebuilds alone
    join_waiter()
    report("rebuild")
    user2 = get_user_model().objects.create_user(username="later")
    with mock.patch.object(tasks, "_in_process_rounds"):  # stopped before its rounds
        for rows in (6100, 6700, 7300, 7900, 8300, 8900, 9700):
            document = small_document()
            document["runs"][0]["parameters"]["rows"] = rows
            submission_create(submitter=user2, document=document, status="approved")
    report("stopped")
else:
    tasks.catch_up_in_process()
    join_waiter()
    report("restarted")
"""


@pytest.mark.slow
def test_every_marked_key_is_refreshed_after_a_burst_and_after_a_restart(tmp_path):
    burst = run_embedded(tmp_path, MANY_KEYS, "burst")

    assert burst.returncode == 0, burst.stderr[-3000:]
    assert burst.stdout.splitlines() == [
        "burst 0 11 0",
        "rebuild 0 11 0",
        "stopped 7 18 7",
    ], burst.stdout

    restarted = run_embedded(tmp_path, MANY_KEYS, "restart")

    assert restarted.returncode == 0, restarted.stderr[-3000:]
    assert restarted.stdout.splitlines() == ["restarted 0 18 0"], restarted.stdout


# What make run shows: /healthz names the database it asked, and the demo
# run's recorded command is the one that would publish it.
SMALL_TRUTHS = """
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from benchhub.results.models import Submission

call_command("migrate", verbosity=0)
call_command("load_demo_data", stdout=open("/dev/null", "w"))
checks = Client().get("/healthz/ready").json()["checks"]
demo = Submission.objects.get(uuid="7b0f2d8e-5a41-4c3b-9e2f-81d6a4c9b3e7")
print(sorted(checks), checks["sqlite"]["ok"], demo.status, demo.command.split()[-3:])
"""


@pytest.mark.slow
def test_make_run_names_sqlite_in_health_and_records_the_demo_runs_publishing_command(tmp_path):
    done = run_embedded(tmp_path, SMALL_TRUTHS, DEBUG="true")

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == (
        "['migrations', 'redis', 'sqlite'] True approved ['1,2,4,8,16,20,40,80', '--repeat', '3']"
    ), done.stdout
