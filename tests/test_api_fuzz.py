"""Schemathesis against the project's own OpenAPI document.

Every operation is called with values generated from its schema (valid
ones, uploads included, built from the submission JSON Schema embedded in
the OpenAPI document) and with values that break it, with alice's API
token, through the WSGI application on the real PostgreSQL. Whatever is
sent: no 5xx, every answer as documented (status, content type, body
schema), every error in the one error shape, and every valid request
accepted (no 400 for what the document allows).

The budget (FUZZ_EXAMPLES per operation and mode) keeps it near a minute
on two cores, in four tests that each take a quarter of the operations;
``BENCHHUB_FUZZ_EXAMPLES`` raises it for a longer hunt.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter

import pytest
import schemathesis
from benchhub_contract.schema import metric_catalog, time_problem
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi import checks

from benchhub.accounts.services import api_token_create
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.factories import example_document, small_document

FUZZ_EXAMPLES = int(os.environ.get("BENCHHUB_FUZZ_EXAMPLES", "40"))
MINIMUM_CASES = 1000  # over all shards
# The operations, sorted by label, are dealt out to this many tests, which two workers share.
SHARDS = 4
UPLOAD = "POST /api/v1/submissions/"
CHECKS = [
    schemathesis.checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]
# Values the document allows are accepted (no 400), except where validity
# depends on more than any schema states: what the server refuses there
# says why, and those refusals are tested on their own.
ACCEPTS_WHAT_IT_ALLOWS = [checks.positive_data_acceptance]
BEYOND_THE_SCHEMA = {
    # output must be the named tool's real output (tests/imports)
    "POST /api/v1/imports/",
    # the submissions must be the caller's own, and the varied factor must vary among
    # their runs (tests/studies)
    "POST /api/v1/studies/",
    # a comparison that would pool runs differing in a run parameter is refused, naming
    # the parameter: whether a query pools depends on the runs (tests/comparisons)
    "GET /api/v1/comparisons/",
}


def in_the_error_shape(response) -> None:
    if response.status_code < 400:
        return
    assert response.headers["content-type"][0].startswith("application/json"), response.text[:200]
    error = response.json()["error"]
    assert isinstance(error["code"], str) and isinstance(error["message"], str), error
    for detail in error.get("details", []):
        assert set(detail) == {"path", "message"}, detail


@pytest.fixture
def published(bob) -> None:
    """Approved results to read back, so that answers have rows to conform."""
    for document in (example_document(), small_document(os={"family": "freebsd"})):
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)


def storable(case):
    """A generated upload made to pass what the schema cannot say (the
    catalog's pairs of benchmark and metric and its ranges, an engine the
    version string names, times in order, points given once), so that most
    are stored: every other value stays what Hypothesis drew."""
    document = case.body
    if not isinstance(document, dict) or not isinstance(document.get("runs"), list):
        return case
    catalog = metric_catalog()
    document["uuid"] = str(uuid.uuid4())  # Hypothesis repeats its favourites: 409s
    environment = document.setdefault("environment", {})
    database = environment.setdefault("database", {})
    database["version_string"] = "PostgreSQL 16.2"
    database.pop("engine", None)
    for r, run in enumerate(document["runs"]):
        run.get("environment", {}).pop("database", None)
        metrics = catalog.get(run["benchmark"]) or catalog["select-update"]
        run["benchmark"] = run["benchmark"] if run["benchmark"] in catalog else "select-update"
        for field in ("started_at", "ended_at"):
            if field in run and time_problem(run[field]):
                del run[field]
        if "started_at" in run and "ended_at" in run:
            run["ended_at"] = run["started_at"]
        names = sorted(metrics)
        for m, measurement in enumerate(run["measurements"]):
            measurement["metric"] = names[(r + m) % len(names)]
            measurement.pop("unit", None)
            measurement["value"] = abs(measurement["value"])
            measurement["samples"] = [abs(x) for x in measurement.get("samples", [])]
            parameters = measurement.setdefault("parameters", {})
            while len(parameters) >= 50:
                parameters.pop(next(iter(parameters)))
            parameters["fuzz_point"] = m
    return case


def coherent(case):
    """A metric filter beside a benchmark filter (or path) names one of its metrics
    (each is one of the catalog's, as the document says; the pair is
    beyond it); a comparison has no reference, which must be a value one of
    its series has: the data decides, not a schema."""
    query = case.query if isinstance(case.query, dict) else {}
    path = case.path_parameters if isinstance(case.path_parameters, dict) else {}
    # A history or leaderboard names its benchmark in the path.
    metrics = metric_catalog().get(query.get("benchmark") or path.get("name"), {})
    if metrics and "metric" in query and query["metric"] not in metrics:
        query["metric"] = sorted(metrics)[len(query) % len(metrics)]
    query.pop("reference", None)
    return case


def without_a_made_up_cursor(case):
    """A cursor is opaque: only the API writes one (a next or previous URL),
    and any other string is refused, as the document says. No schema can
    describe which strings the server wrote, so valid cases carry none."""
    if isinstance(case.query, dict):
        case.query.pop("cursor", None)
    return case


def fuzzer(operation, mode, headers, calls, statuses):
    """Hypothesis over one operation in one mode (valid or invalid values)."""

    strategy = operation.as_strategy(generation_mode=mode)
    if operation.label == UPLOAD and mode == GenerationMode.POSITIVE:
        strategy = strategy.map(storable)
    checked = CHECKS
    if mode == GenerationMode.POSITIVE:
        strategy = strategy.map(without_a_made_up_cursor).map(coherent)
        if operation.label not in BEYOND_THE_SCHEMA:
            checked = CHECKS + ACCEPTS_WHAT_IT_ALLOWS

    @given(case=strategy)
    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case) -> None:
        response = case.call(headers=headers)
        calls[(operation.label, mode.value)] += 1
        statuses[response.status_code] += 1
        case.validate_response(response, checks=checked)
        in_the_error_shape(response)

    return fuzz


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_request_the_openapi_document_allows_or_breaks_gets_a_5xx(
    alice, published, wsgi_in_the_test_transaction, shard
):
    from benchhub.wsgi import application

    _, token = api_token_create(user=alice, name="fuzz")
    headers = {"Authorization": f"Token {token}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
    operations = sorted(
        (result.ok() for result in schema.get_all_operations()), key=lambda op: op.label
    )[shard::SHARDS]
    calls: Counter[tuple[str, str]] = Counter()
    statuses: Counter[int] = Counter()
    started = time.monotonic()

    failures = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzz = fuzzer(operation, mode, headers, calls, statuses)
            try:
                fuzz()
            except Unsatisfiable:
                continue  # no parameter to break: nothing negative to send
            except BaseException as exc:  # every operation's failure, not the first only
                if not isinstance(exc, Exception | BaseExceptionGroup):
                    raise
                failures.append(f"{operation.label} ({mode.value}): {exc}")

    elapsed = time.monotonic() - started
    total = sum(calls.values())
    print(  # the cases and statuses (pytest -s shows them)
        f"\nfuzz, shard {shard}: {total} cases over {len({label for label, _ in calls})} "
        f"operations in {elapsed:.0f} s; statuses {dict(sorted(statuses.items()))}"
    )
    assert not failures, "\n\n".join(failures)
    assert total >= MINIMUM_CASES // SHARDS
    assert not any(status >= 500 for status in statuses)
    if UPLOAD in {operation.label for operation in operations}:
        uploads = calls[(UPLOAD, "positive")]
        assert uploads >= FUZZ_EXAMPLES // 2
        assert statuses[201] >= FUZZ_EXAMPLES // 4  # generated uploads were stored
