"""SQLite's one write lock in the embedded default: the writers of a process
wait their turn in the backend's queue (lib/sqlite) rather than fail with
"database is locked", a turn is passed on however a write ends, and an
in-process round takes one turn, its statements few. In a process of its
own, on SQLite (the suite runs on PostgreSQL)."""

from __future__ import annotations

import pytest

from tests.baselines.embedded import run_embedded

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
