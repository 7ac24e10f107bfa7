"""An upload on the embedded default (SQLite, `make run`) stores the rows
the ORM would: its submission, runs and parameter names are written by
statements of fixed text there (results/storage.py), checked in a process
of its own, since the suite runs on PostgreSQL."""

from __future__ import annotations

from tests.baselines.test_embedded_sqlite import run_embedded

# The same document stored twice: once as an upload stores it, once with
# the rows saved by the ORM (Model.save, bulk_create); every column of the
# two must match, as SQLite holds it (the JSON text, the time's format),
# but for what differs by design (ids, the uuid and what depends on it).
SAME_ROWS = """
import uuid
from unittest import mock
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.db import connection
from benchhub.results import services, storage
from benchhub.results.models import MetricParameter
from tests.factories import example_document

call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user(username="embedded")


def orm_names(names):
    MetricParameter.objects.bulk_create(
        [MetricParameter(metric_id=m, scope=s, name=n) for m, s, n in names],
        ignore_conflicts=True,
    )


document = example_document()
document["runs"][0]["note"] = "ünïcode, 'quoted'"
services.submission_create(submitter=user, document=document)
names_after_one = MetricParameter.objects.count()
document["uuid"] = str(uuid.uuid4())
with (
    mock.patch.object(storage, "_insert_row", lambda row: row.save(force_insert=True)),
    mock.patch.object(storage, "_insert_parameter_names", orm_names),
):
    services.submission_create(submitter=user, document=document)


def rows(table, skip):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} ORDER BY id")
        names = [c[0] for c in cursor.description]
        found = cursor.fetchall()
        cursor.execute(f"SELECT typeof(created_at), length(created_at) FROM {table}"
                       if table == "results_submission" else "SELECT 1")
        shapes = cursor.fetchall()
    kept = [[v for n, v in zip(names, row) if n not in skip] for row in found]
    return kept, shapes


unique = {"id", "uuid", "content_digest", "document", "created_at"}
submissions, shapes = rows("results_submission", unique)
runs, _ = rows("results_run", {"id", "submission_id"})
measurements, _ = rows("results_measurement", {"id", "run_id"})
half = len(measurements) // 2
print(submissions[0] == submissions[1], shapes[0] == shapes[1], runs[0] == runs[1],
      measurements[:half] == measurements[half:], half,
      names_after_one == MetricParameter.objects.count() > 0)
"""


def test_an_upload_on_the_embedded_default_stores_the_rows_the_orm_would(tmp_path):
    done = run_embedded(tmp_path, SAME_ROWS)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True", "True", "True", "54", "True"], done.stdout


QUIET_UPLOAD = """
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from benchhub.results import services, storage
from tests.factories import example_document

call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user(username="embedded")
services.submission_create(submitter=user, document=example_document())
print("stored")
"""


def test_an_upload_on_the_embedded_default_logs_no_warning(tmp_path):
    # The in-process tasks of an upload take a producer from the memory
    # broker's pool; with no host in its URL, kombu warned on each upload.
    done = run_embedded(tmp_path, QUIET_UPLOAD)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["stored"], done.stdout
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
