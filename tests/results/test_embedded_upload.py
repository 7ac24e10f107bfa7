"""An upload on the embedded default (SQLite, `make run`), checked in a process of its
own, since the suite runs on PostgreSQL."""

from __future__ import annotations

import pytest

from tests.baselines.embedded import run_embedded

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


@pytest.mark.slow
def test_an_upload_on_the_embedded_default_logs_no_warning(tmp_path):
    # The in-process tasks of an upload take a producer from the memory
    # broker's pool; with no host in its URL, kombu warned on each upload.
    done = run_embedded(tmp_path, QUIET_UPLOAD)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["stored"], done.stdout
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
