"""What an upload costs the database: a fixed number of queries however many
runs and measurements, the measurements in one statement, a common upload
its own transaction, and a refused one leaving no row behind."""

import pytest
from django.db import connection, connections

from benchhub.accounts.roles import role_grant
from benchhub.results.models import Hardware, Measurement, Submission
from benchhub.results.services import SubmissionConflict, submission_create
from tests.factories import example_document
from tests.results.uploads import post


def test_the_measurements_go_in_by_one_statement_text_whatever_their_count(alice):
    """On PostgreSQL the measurements travel as one JSON parameter (in the
    statement that stores the whole document), so the statement's text is
    the same for 3 measurements as for 54: psycopg parses it once, where a
    VALUES list of 54 rows (432 placeholders) was parsed again on every
    upload."""
    texts = []

    def record(execute, sql, params, many, context):
        if "results_measurement" in sql and sql.lstrip().upper().startswith(("INSERT", "WITH")):
            texts.append((sql, len(params)))
        return execute(sql, params, many, context)

    small = example_document()
    small["runs"][0]["measurements"] = small["runs"][0]["measurements"][:3]
    with connection.execute_wrapper(record):
        for document in (example_document(), small):
            submission_create(submitter=alice, document=document)

    assert len(texts) == 2
    assert texts[0] == texts[1]
    # Parameters are the document's, not one (or eight) per measurement.
    assert texts[0][1] < len(example_document()["runs"][0]["measurements"])


def three_runs(machines: tuple[str, ...] = ("a", "b", "c")) -> dict:
    """The example with three runs, each on its own machine."""
    document = example_document()
    run = document["runs"][0]
    document["runs"] = [{**run, "environment": {"hardware": {"cpu": cpu}}} for cpu in machines]
    return document


@pytest.mark.parametrize("make", [example_document, three_runs], ids=["one run", "three runs"])
def test_an_upload_costs_a_fixed_number_of_queries(alice_api, django_assert_max_num_queries, make):
    """However many runs and measurements it has: the submission, its runs,
    their measurements, the metrics' parameter names and the baseline marks
    go in one statement, the metrics and the dimensions of every run are
    found in one, and the answer is built from memory. (The token's lookup
    also reads the submitter's groups: a trusted one's upload is approved
    on arrival.)"""
    post(alice_api, make())  # the dimension rows exist from here on

    with django_assert_max_num_queries(5) as upload:
        response = post(alice_api, make())

    assert response.status_code == 201
    statements = [q["sql"] for q in upload.captured_queries]
    assert sum('INSERT INTO "results_measurement"' in s for s in statements) == 1
    # Lookups by unique keys (the token's digest) need no ORDER BY, nor does
    # a new uuid need a lookup before its INSERT.
    assert not any("ORDER BY" in s for s in statements if s.startswith("SELECT"))
    assert not any(s.startswith('SELECT "results_submission"') for s in statements)
    # The submitter's groups (is a trusted one's upload approved on arrival?)
    # come with the token.
    assert not any(s.startswith('SELECT "auth_group"') for s in statements)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("case", "transactions"),
    [("known machine", 0), ("new machine", 1), ("trusted submitter", 1)],
)
def test_a_common_upload_is_one_statement_that_commits_itself(
    alice, monkeypatch, case, transactions
):
    """A pending upload from a machine already described is stored by the
    document's one statement, its own transaction (autocommit): no BEGIN
    and COMMIT around it. A new dimension row or an approval on arrival
    writes more, in one transaction with the document."""
    submission_create(submitter=alice, document=example_document())  # the machine's rows
    if case == "trusted submitter":
        role_grant(user=alice, role="trusted")
    document = example_document()
    if case == "new machine":
        document["environment"]["hardware"] = {"cpu": "a machine never seen"}
    commits = []
    wrapper = type(connections["default"])
    commit = wrapper.commit
    monkeypatch.setattr(wrapper, "commit", lambda self: commits.append(1) or commit(self))

    outcome = submission_create(submitter=alice, document=document)

    assert len(commits) == transactions
    stored = Submission.objects.get(uuid=document["uuid"])
    assert stored.pk == outcome.submission.pk
    assert stored.status == ("approved" if case == "trusted submitter" else "pending")
    assert Measurement.objects.filter(run__submission=stored).count() == 54


@pytest.mark.django_db(transaction=True)
def test_a_refused_upload_leaves_no_new_machine_behind(alice, bob):
    """Rows of a new machine are created in the document's transaction: an
    upload refused (here a uuid taken by another submitter) stores none."""
    taken = example_document()
    submission_create(submitter=bob, document=taken)
    document = example_document()
    document["uuid"] = taken["uuid"]
    document["environment"]["hardware"] = {"cpu": "a machine never seen"}
    machines = Hardware.objects.count()

    with pytest.raises(SubmissionConflict):
        submission_create(submitter=alice, document=document)

    assert Hardware.objects.count() == machines
