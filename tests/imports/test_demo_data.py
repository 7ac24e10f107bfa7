"""`manage.py load_demo_data`, what `make run` loads on a fresh machine."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from benchhub.imports.services import ARTICLES_DIR
from benchhub.results.models import Measurement, Submission

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def development_settings(settings):
    settings.DEBUG = True  # as `make run` runs it


def load() -> str:
    out = io.StringIO()
    call_command("load_demo_data", stdout=out)
    return out.getvalue()


def test_demo_data_holds_the_articles_and_the_measured_sweep_once(client):
    first = load()
    second = load()  # `make run` runs it on every start

    assert "stored as submission" in first
    assert "already stored as submission" in second
    measured = Submission.objects.get(submitter__username="demo")
    assert measured.status == Submission.Status.APPROVED
    articles = len(list(ARTICLES_DIR.glob("*.json")))
    assert Submission.objects.filter(source=Submission.Source.CURATED).count() == articles
    clients = sorted(
        set(
            Measurement.objects.filter(
                run__submission=measured, metric__name="throughput"
            ).values_list("parameters__clients", flat=True)
        )
    )
    assert clients == [1, 2, 4, 8, 16, 20, 40, 80]

    # what the home page's newcomer sees: a throughput-by-clients line over the sweep
    answer = client.get(
        "/api/v1/comparisons/",
        {"benchmark": "select-update", "metric": "throughput", "x": "param.clients"},
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["x_values"] == [1, 2, 4, 8, 16, 20, 40, 80]
    tokens = [re.search(r"API token for uploads: (\S+)", out).group(1) for out in (first, second)]
    assert tokens[0] != tokens[1]  # a fresh token each time, printed


def test_with_production_settings_it_refuses_and_says_why(settings):
    settings.DEBUG = False

    with pytest.raises(CommandError, match="DEBUG=true"):
        load()

    assert not User.objects.filter(username="demo").exists()
    assert not Submission.objects.exists()
