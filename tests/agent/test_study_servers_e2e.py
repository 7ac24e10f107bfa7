"""`benchhub-agent study --vary dsn --vary protocol` against the live Django server: the
runs of PostgreSQL and MariaDB, each over its socket and over TCP, uploaded once, and
the study stored with the site's axes (engine, protocol) and the agent's reference."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest
from django.db import connection

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Run, Submission
from benchhub.studies.models import Study
from tests.agent.databases import measured_database
from tests.agent.test_study_e2e import agent

MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}


@contextlib.contextmanager
def mariadb_database(label: str) -> Iterator[str]:
    name = f"{connection.settings_dict['NAME']}_{label}"
    with contextlib.closing(pymysql.connect(**MARIADB, autocommit=True)) as admin:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.cursor().execute(f"CREATE DATABASE `{name}`")
    try:
        yield f"mysql://root@127.0.0.1:3306/{name}"
    finally:
        with contextlib.closing(pymysql.connect(**MARIADB, autocommit=True)) as admin:
            admin.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.mark.django_db(transaction=True)
def test_a_study_of_two_engines_over_two_protocols_is_stored_with_the_sites_axes(
    live_server, alice, django_db_setup, tmp_path: Path
):
    _, token = api_token_create(user=alice, name="agent")
    with measured_database("study_servers") as pg, mariadb_database("study_servers") as my:
        done = agent(
            "study", "select-update", "--clients", "2", "--transactions", "90", "--repeat",
            "1", "--vary", "dsn", f"{my};{pg}", "--vary", "protocol", "--yes", "--upload",
            "--server", live_server.url, "--token", token, outbox=tmp_path / "outbox",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^study: \S+/studies/[0-9a-f-]{36}/$", done.stdout, re.MULTILINE)
    study = Study.objects.get(owner=alice)
    assert study.varied == ["engine", "protocol"] and study.reference == "mariadb"
    assert Submission.objects.filter(submitter=alice).count() == 4
    seen = sorted((r.server.engine, r.client.protocol) for r in study.runs.all())
    assert seen == [
        ("mariadb", "tcp_loopback"), ("mariadb", "unix_socket"),
        ("postgresql", "tcp_loopback"), ("postgresql", "unix_socket"),
    ]  # fmt: skip
    assert Run.objects.filter(submission__submitter=alice).count() == 4
