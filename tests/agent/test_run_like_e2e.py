"""`benchhub-agent run --like RUN_URL` against the live Django server.

What every seed article asks of its readers: repeat a published run on
your machine. The published run here was itself measured by the agent on
the real PostgreSQL; the repeat is too, and it is uploaded, then compared
with that run and with the community baseline the server computed.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import urllib.request
from collections.abc import Iterator

import pytest

from benchhub.accounts.services import api_token_create
from benchhub.baselines.services import baselines_refresh
from benchhub.imports.services import articles_load
from benchhub.results.models import Run, Submission
from benchhub.results.services import submission_create
from tests.agent.databases import measured_database
from tests.agent.test_outbox_e2e import agent


@pytest.fixture
def bench_dsn(django_db_setup) -> Iterator[str]:
    with measured_database("like_e2e") as dsn:
        yield dsn


def measured_and_published(submitter, outbox, *argv: str) -> Submission:
    """The agent's dry run of ``argv``, once, stored approved as ``submitter``'s."""
    measured = agent(*argv, "--repeat", "1", "--dry-run", outbox=outbox)
    assert measured.returncode == 0, measured.stderr
    return submission_create(
        submitter=submitter, document=json.loads(measured.stdout), status=Submission.Status.APPROVED
    ).submission


@pytest.mark.django_db(transaction=True)
def test_run_like_repeats_a_published_run_and_ranks_it(
    live_server, bob, alice, bench_dsn, tmp_path
):
    outbox = tmp_path / "outbox"
    published = measured_and_published(
        bob, outbox,
        "run", "select-update", "--dsn", bench_dsn, "--clients", "1,2", "--transactions", "100",
    )  # fmt: skip
    run = published.runs.get()
    baselines_refresh()
    _, token = api_token_create(user=alice, name="agent")

    repeated = agent(
        "run", "--like", f"{live_server.url}/api/v1/runs/{run.pk}/",
        "--dsn", bench_dsn, "--token", token, "--repeat", "1", "--upload",
        outbox=outbox,
    )  # fmt: skip

    assert repeated.returncode == 0, repeated.stderr + repeated.stdout
    mine = Submission.objects.get(submitter=alice)
    (my_run,) = Run.objects.filter(submission=mine)
    # The same benchmark with the same parameters: the same comparability key.
    assert my_run.parameters == run.parameters
    assert my_run.fingerprint == run.fingerprint
    assert "compared with" in repeated.stdout
    table = repeated.stdout.split("compared with", 1)[1]
    throughput_rows = [line for line in table.splitlines() if line.startswith("throughput")]
    assert len(throughput_rows) == 2  # clients=1 and clients=2
    for line in throughput_rows:
        assert "(1)" in line  # the baseline median, over the one approved run
        # Among one other result a percentile means nothing: n, and no rank.
        assert "not ranked (n=1)" in line
        # One run of one repetition on each side: no verdict can be drawn from that.
        assert "insufficient data" in line


def offered_command(live_server, run: Run) -> list[str]:
    """The command the run page offers to copy, as the agent's argv."""
    page_url = f"{live_server.url}/runs/{run.pk}/"  # http, the live server's own
    with urllib.request.urlopen(page_url) as response:  # noqa: S310
        page = response.read().decode()
    found = re.search(r'<code id="reproduce-command">([^<]*)</code>', page)
    assert found, page[page.index('id="reproduce-title"') :][:600]
    program, *argv = shlex.split(html.unescape(found.group(1)))
    assert program == "benchhub-agent"
    return argv


@pytest.mark.django_db(transaction=True)
def test_the_run_like_a_run_page_offers_is_accepted_by_the_agent(
    live_server, bob, bench_dsn, tmp_path
):
    """An agent backup records pg_dump as its load engine: what the page goes by is
    that the agent measured it, and the agent agrees when handed the command."""
    outbox = tmp_path / "outbox"
    published = measured_and_published(
        bob, outbox, "run", "backup", "--dsn", bench_dsn, "--rows", "200"
    )

    argv = offered_command(live_server, published.runs.get())
    assert argv[:2] == ["run", "--like"]
    argv[argv.index("--dsn") + 1] = bench_dsn  # the page's example DSN, made this test's
    repeated = agent(*argv, "--dry-run", outbox=outbox)

    assert repeated.returncode == 0, repeated.stderr
    assert json.loads(repeated.stdout)["runs"][0]["benchmark"] == "backup"


@pytest.mark.django_db(transaction=True)
def test_what_a_seed_run_page_offers_instead_is_a_command_the_agent_knows(live_server, capsys):
    from benchhub_agent.cli import build_parser, discover_benchmarks

    # The agent's own parser, as `benchhub-agent ARGV` builds it (cli.dispatch), in this
    # process: a process of its own for each command took most of a minute.
    parser = build_parser(discover_benchmarks())
    articles_load()
    # Seed 001's pinned backups are offered the agent's backup with their --pin.
    offered = 0
    for run in Run.objects.filter(submission__source=Submission.Source.CURATED).distinct(
        "benchmark", "client__cpu_placement"
    ):
        if run.benchmark.name == "tpc-average":
            continue  # nothing offered: the agent has none
        argv = offered_command(live_server, run)
        assert "--like" not in argv, run
        # The whole command, not only up to a --help: an option the agent does not know,
        # a value its choices refuse or a missing required one exits 2 here.
        try:
            parser.parse_args(argv)
        except SystemExit as refused:
            pytest.fail(f"{argv}: exit {refused.code}: {capsys.readouterr().err}")
        offered += 1
    assert offered > 1
