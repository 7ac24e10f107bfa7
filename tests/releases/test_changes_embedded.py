"""The changes between releases on the embedded default (SQLite), whose uploads
write each run's summary per metric through the ORM: the same evidence as on
PostgreSQL, checked in a process of its own."""

from __future__ import annotations

import json

import pytest

from tests.baselines.embedded import run_embedded

CHANGES = """
import json
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from benchhub.releases.data import changes_as_data
from benchhub.releases.selectors import changes_build
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import sweep_document

call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user(username="embedded")
for version, peaks in (("15.4", (1000.0, 1012.5, 991.0)), ("16.2", (1201.0, 1190.0, 1215.5))):
    for peak in peaks:
        document = sweep_document(
            {1: round(peak * 0.21, 3), 8: peak, 32: round(peak * 0.97, 3)},
            database={"version_string": f"PostgreSQL {version}", "config_profile": "default"},
        )
        submission_create(submitter=user, document=document, status=Submission.Status.APPROVED)
changes = changes_build(user=AnonymousUser(), engine="postgresql", before="15", after="16")
print(json.dumps(changes_as_data(changes)))
"""


@pytest.mark.slow
def test_the_embedded_default_reads_each_runs_best_value_from_its_summary(tmp_path):
    done = run_embedded(tmp_path, CHANGES)

    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout.splitlines()[-1])
    by_metric = {change["metric"]: change for change in data["metrics"]}
    (evidence,) = by_metric["throughput"]["evidence"]
    assert (evidence["before"]["median"], evidence["before"]["n"]) == (1000.0, 3)
    assert (evidence["after"]["median"], evidence["after"]["n"]) == (1201.0, 3)
    assert evidence["verdict"]["ratio"] == pytest.approx(1201.0 / 1000.0)
