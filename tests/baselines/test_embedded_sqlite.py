"""The embedded default (SQLite, no broker: the refresh runs in-process after
each upload's commit), in a process of its own, since the suite runs on
PostgreSQL. Marks written by raw SQL must compare equal to what Django reads
back there, or no run mark is ever cleared. The write lock's queue:
test_embedded_write_lock.py; the in-process rounds' waiter:
test_in_process_rounds.py."""

from __future__ import annotations

import pytest

from tests.baselines.embedded import run_embedded

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


PRAGMAS = """
import django
django.setup()
from django.db import connection

with connection.cursor() as cursor:
    print(cursor.execute("PRAGMA journal_mode").fetchone()[0],
          cursor.execute("PRAGMA synchronous").fetchone()[0])
"""


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
