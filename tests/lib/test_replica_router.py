"""Where the replica router sends what the live test (test_read_replica.py) does not
reach: requests that must read on the primary are decided without asking the replica
(no replica is configured here: asking it would raise), and DATABASE_REPLICA_URL's
settings. Reads on a real replica: tests/lib/test_read_replica.py."""

from __future__ import annotations

import logging
import runpy

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.test import RequestFactory

from benchhub.accounts.models import ApiToken
from benchhub.lib import replica
from benchhub.lib.replica import ReplicaAvailability, ReplicaRouter, RequestReads
from benchhub.results.models import Run, Submission
from tests.live import ROOT

router = ReplicaRouter()


@pytest.fixture
def in_request():
    """Runs the router as inside a request made by ``in_request(method, path)``."""
    tokens = []

    def enter(method: str, path: str) -> RequestReads:
        reads = RequestReads(RequestFactory().generic(method, path))
        tokens.append(replica._current.set(reads))
        return reads

    yield enter
    for token in reversed(tokens):
        replica._current.reset(token)


def test_outside_a_request_everything_reads_on_the_primary():
    # Tasks and commands read to write.
    assert router.db_for_read(Run) == "default"
    assert router.db_for_write(Run) == "default"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/runs/"),
        ("PUT", "/results/"),
        ("DELETE", "/runs/7/"),
        ("GET", "/api/v1/submissions/"),
        ("GET", "/api/v1/submissions/0f4e2a49-5d6e-4b8c-9f0a-3c2d1e0b9a87/"),
        ("GET", "/moderation/audit/"),
        ("GET", "/accounts/submissions/"),
        ("HEAD", "/imports/0f4e2a49-5d6e-4b8c-9f0a-3c2d1e0b9a87/"),
        ("GET", "/admin/results/run/"),
    ],
)
def test_writes_and_pages_of_ones_own_or_pending_data_read_on_the_primary(in_request, method, path):
    in_request(method, path)
    assert router.db_for_read(Run) == "default"


def test_sign_in_tables_read_on_the_primary_even_on_a_public_page(in_request):
    in_request("GET", "/results/")
    for model in (Session, User, ApiToken):
        assert router.db_for_read(model) == "default", model


def test_a_request_reads_on_the_primary_once_it_has_written(in_request):
    reads = in_request("GET", "/compare/")
    router.db_for_write(ApiToken)  # a token's last use: nothing the replica serves
    assert not reads.wrote
    router.db_for_write(Submission)
    assert reads.wrote
    assert router.db_for_read(Run) == "default"


@pytest.mark.django_db
def test_reads_inside_a_transaction_are_on_the_primary(in_request):
    in_request("GET", "/runs/3/")
    with transaction.atomic():
        assert router.db_for_read(Run) == "default"


def test_a_public_read_outside_all_that_asks_the_replica(in_request):
    # No replica here: that the router asks for it is what this shows.
    in_request("GET", "/runs/3/")
    with pytest.raises(Exception, match="replica"):
        router.db_for_read(Run)


def test_migrations_run_on_the_primary_only():
    assert router.allow_migrate("default", "results") is True
    assert router.allow_migrate("replica", "results") is False
    assert router.allow_migrate("replica", "auth") is False


def test_an_unreachable_replica_is_not_asked_again_within_the_retry_interval(
    settings, caplog, monkeypatch
):
    # A logging configuration applied by an earlier test (dictConfig disables the
    # loggers that existed before it) must not hide the warnings read here.
    for name in ("benchhub.replica", "benchhub"):
        monkeypatch.setattr(logging.getLogger(name), "disabled", False)
        monkeypatch.setattr(logging.getLogger(name), "propagate", True)
    caplog.set_level(logging.WARNING, logger="benchhub.replica")
    settings.DATABASE_REPLICA_RETRY_SECONDS = 7
    now = [100.0]
    availability = ReplicaAvailability(clock=lambda: now[0])
    availability.failed("OperationalError")
    availability.failed("OperationalError")
    now[0] = 106.5
    assert availability.usable() is False  # not asked: no replica to ask here
    now[0] = 107.5
    with pytest.raises(Exception, match="replica"):
        availability.usable()  # asked again
    availability.recovered()
    messages = [r.getMessage() for r in caplog.records if r.name == "benchhub.replica"]
    assert messages[0].startswith("replica: OperationalError; reads go to the primary")
    assert messages[-1].startswith("replica: answers again after 7 s")


def settings_read() -> dict:
    return runpy.run_path(str(ROOT / "benchhub/settings.py"))


def test_a_replica_url_adds_the_alias_the_router_and_the_middleware(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://bench@primary.internal:5433/bench")
    monkeypatch.setenv(
        "DATABASE_REPLICA_URL", "PostgreSQL://reader@replica.internal/bench?sslmode=require"
    )
    read = settings_read()

    primary, second = read["DATABASES"]["default"], read["DATABASES"]["replica"]
    where = (second["HOST"], second["USER"], second["NAME"])
    assert where == ("replica.internal", "reader", "bench")
    # the primary's connect timeout and prepared statements, and its own options
    assert second["OPTIONS"] == {**primary["OPTIONS"], "sslmode": "require"}
    assert second["TEST"] == {"MIRROR": "default"}
    assert read["DATABASE_ROUTERS"] == ["benchhub.lib.replica.ReplicaRouter"]
    middleware = read["MIDDLEWARE"]
    assert middleware.index("benchhub.lib.replica.ReplicaReadsMiddleware") < middleware.index(
        "django.contrib.sessions.middleware.SessionMiddleware"
    )


def test_without_a_replica_url_there_is_no_router(monkeypatch):
    monkeypatch.delenv("DATABASE_REPLICA_URL", raising=False)
    read = settings_read()
    assert "replica" not in read["DATABASES"]
    assert "DATABASE_ROUTERS" not in read
    assert "benchhub.lib.replica.ReplicaReadsMiddleware" not in read["MIDDLEWARE"]


@pytest.mark.parametrize(
    ("primary", "second", "message"),
    [
        (
            "postgres://bench@db/bench",
            "mysql://reader:hunter2@replica/bench",
            "DATABASE_REPLICA_URL has the scheme 'mysql': expected one of postgres://, "
            "postgresql://",
        ),
        (
            "sqlite:///tmp/bench.sqlite3",
            "postgres://reader@replica/bench",
            "DATABASE_REPLICA_URL is set, but DATABASE_URL is not PostgreSQL",
        ),
    ],
)
def test_a_replica_benchhub_cannot_use_stops_the_start_naming_it(
    monkeypatch, primary, second, message
):
    monkeypatch.setenv("DATABASE_URL", primary)
    monkeypatch.setenv("DATABASE_REPLICA_URL", second)
    with pytest.raises(ImproperlyConfigured) as refused:
        settings_read()
    assert str(refused.value).startswith(message)
    assert "hunter2" not in str(refused.value)
