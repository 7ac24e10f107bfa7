"""The run page's "reproduce" section: run --like for a run the agent
measured, and for the others (imported, seed articles, pinned runs, a
benchmark the agent does not run) why not and what the agent can run instead."""

from __future__ import annotations

import html
import re

from benchhub.imports.services import articles_load
from benchhub.results.models import Run, Submission
from tests.factories import example_document, sql_bench_document
from tests.results.run_pages import run_of, store


def reproduce_section(page: str) -> str:
    return page[page.index('id="reproduce-title"') :].split("</section>")[0]


def seed_run(benchmark: str, engine: str = "firebird") -> Run:
    return Run.objects.filter(
        benchmark__name=benchmark,
        submission__source=Submission.Source.CURATED,
        server__engine=engine,
    ).first()


def test_only_a_run_the_agent_measured_is_offered_run_like(client, bob):
    measured = run_of(store(bob, example_document()))
    imported = example_document()
    imported["source"] = {"kind": "import", "tool": "pgbench"}
    older = example_document()
    older["runs"][0]["benchmark_version"] = "0"

    offered = reproduce_section(client.get(f"/runs/{measured.pk}/").content.decode())
    assert "benchhub-agent run --like" in offered
    for document, why in [
        (imported, "come from pgbench, imported, not from the agent"),
        (older, "It ran version 0 of the agent&#x27;s select-update"),
    ]:
        run = run_of(store(bob, document))
        section = reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())
        assert "benchhub-agent run --like" not in section
        assert why in section
        assert "benchhub-agent run select-update --dsn postgresql://" in section


def test_a_seed_run_says_why_the_agent_cannot_repeat_it_and_offers_what_it_can(client, db):
    articles_load()
    sql_bench, tpcb, tpcc = seed_run("sql-bench", "mysql"), seed_run("tpcb"), seed_run("tpcc")

    sections = {
        run.benchmark.name: reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())
        for run in (sql_bench, tpcb, tpcc)
    }

    for section in sections.values():
        assert "benchhub-agent run --like" not in section
    assert "from a published article, not from the agent" in sections["sql-bench"]
    assert (
        "benchhub-agent run sql-bench --dsn mysql://root@127.0.0.1:3306/bench"
        in (sections["sql-bench"])
    )
    # Seed 003's TPC-B and TPC-C ran on Firebird, which the agent's tpcb and tpcc drive:
    # its own, on the run's engine.
    for name in ("tpcb", "tpcc"):
        assert "from a published article, not from the agent" in sections[name]
        assert "not on Firebird" not in sections[name]
        assert f"benchhub-agent run {name} --dsn firebird://SYSDBA:" in sections[name]


def test_a_pinned_seed_backup_offers_the_agents_backup_pinned_alike(client, db):
    """Seed 001 timed gbak with the server's core and another's: the agent's
    backup on the user's database measures the same only with that --pin."""
    articles_load()
    backups = Run.objects.filter(
        benchmark__name="backup", submission__source=Submission.Source.CURATED
    ).select_related("client")
    offered = {
        run.client.cpu_placement: reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())
        for run in backups
    }

    assert {"same_core", "other_core", "unpinned"} <= set(offered)
    for placement in ("same_core", "other_core"):
        command = re.search(r'<code id="reproduce-command">([^<]*)</code>', offered[placement])
        assert command, offered[placement]
        assert html.unescape(command.group(1)).endswith(f" --pin {placement}")
        assert f"pinned as this run was (<code>--pin {placement}</code>)" in offered[placement]
    assert "--pin" not in offered["unpinned"]


def test_a_pinned_run_of_a_benchmark_that_cannot_pin_says_yours_will_be_unpinned(client, bob):
    document = sql_bench_document({"insert": 2.0}, "ext4")
    document["source"] = {"kind": "import", "tool": "sql-bench"}
    document["environment"]["client"]["cpu_placement"] = "same_core"
    run = run_of(store(bob, document))

    section = reproduce_section(client.get(f"/runs/{run.pk}/").content.decode())

    assert "benchhub-agent run sql-bench --dsn postgresql://" in section
    assert "--pin" not in section
    assert "the agent&#x27;s sql-bench cannot, so yours will be unpinned" in section


def test_a_benchmark_the_agent_does_not_run_offers_no_agent_command(client, db):
    articles_load()

    average = client.get("/benchmarks/tpc-average/").content.decode()
    tpcb = client.get("/benchmarks/tpcb/").content.decode()
    tpcc = client.get("/benchmarks/tpcc/").content.decode()

    assert "benchhub-agent run" not in average and 'id="no-agent-benchmark"' in average
    # tpcb's and tpcc's only runs are seed 003's: how to run each, but no --like of an article
    assert "benchhub-agent run tpcb --help" in tpcb and "run --like" not in tpcb
    assert "benchhub-agent run tpcc --help" in tpcc and "run --like" not in tpcc
