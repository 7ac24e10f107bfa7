"""What a run's page offers to repeat it: the agent command (``run --like``
when the agent can repeat the run exactly, else its closest benchmark, and
why)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchhub_contract.schema import benchmark_catalog

from benchhub.results.labels import ENUM_LABELS
from benchhub.results.models import Submission

# What to put after --dsn: the agent's own examples (agents/README.md), so that
# a copied command names the database it needs instead of failing on a missing
# option.
_EXAMPLE_DSNS = {
    "postgresql": "postgresql://postgres@127.0.0.1:5432/bench",
    "mysql": "mysql://root@127.0.0.1:3306/bench",
    "mariadb": "mysql://root@127.0.0.1:3306/bench",
    "firebird": "firebird://SYSDBA:PASSWORD@localhost:3050//var/lib/firebird/3.0/data/bench.fdb",
}


def example_dsn(engine: str) -> str:
    return _EXAMPLE_DSNS.get(engine, "YOUR_DATABASE_URL")


def reproduce_command(run_api_url: str, engine: str) -> str:
    """The agent command that repeats a run; ``run --like`` needs a database."""
    return f"benchhub-agent run --like {run_api_url} --dsn {example_dsn(engine)}"


@dataclass(frozen=True)
class Reproduction:
    """What a page offers to repeat a run: ``run --like`` when the agent can
    repeat it, else why not and the agent's closest command (or none)."""

    command: str  # empty when the agent has nothing to offer
    exact: bool  # the command is ``run --like`` this run
    reason: str = ""  # why it is not, in a sentence
    pin: str = ""  # the run's CPU placement the command keeps with --pin


def agent_benchmark(name: str) -> dict[str, Any] | None:
    """The catalog's word on the agent's own ``name``: its version, engines and
    the common run options it honours (``load_options``)."""
    entry = next((b for b in benchmark_catalog()["benchmarks"] if b["name"] == name), None)
    return entry.get("agent") if entry else None


def reproduction(
    run_api_url: str,
    *,
    benchmark: str,
    version: str,
    engine: str,
    source: str,
    tool: str,
    placement: str = "unpinned",
) -> Reproduction:
    """The agent repeats with ``--like`` what it measured itself, with the
    workload of the same version, on an engine it drives: that is all the run
    records and the catalog shares. Anything else (an article's figures,
    another tool's output) leaves it guessing at a load it never drove, and
    it refuses: the page says so and offers the agent's own benchmark, pinned
    as the run was where the benchmark takes --pin (seed 001's backups time
    the same gbak on the server's core and on another: unpinned, the user
    would measure neither)."""
    agent = agent_benchmark(benchmark)
    if agent is None:
        return Reproduction("", False, f"The agent has no {benchmark} benchmark to run.")
    engines = agent["engines"]
    if source != Submission.Source.AGENT:
        why = (
            "Its figures come from a published article, not from the agent"
            if source == Submission.Source.CURATED
            else f"Its figures come from {tool or 'another tool'}, imported, not from the agent"
        )
    elif version != agent["version"]:
        why = (
            f"It ran version {version} of the agent's {benchmark}; the agent now runs "
            f"version {agent['version']}, another workload"
        )
    elif engine not in engines:
        why = f"The agent's {benchmark} does not drive its engine"
    else:
        return Reproduction(reproduce_command(run_api_url, engine), True)
    reason = f"{why}, so the agent cannot repeat it with --like."
    if engine not in engines:
        reason += (
            f" The agent's {benchmark} runs on {_listed(engines)}, not on {_engine_name(engine)}."
        )
    here = engine if engine in engines else engines[0]
    dsn = _EXAMPLE_DSNS.get(here, "YOUR_DATABASE_URL")
    command = f"benchhub-agent run {benchmark} --dsn {dsn}"
    if placement == "unpinned":
        return Reproduction(command, False, reason)
    if "pin" not in agent["load_options"]:
        reason += (
            f" It pinned its load ({placement}); the agent's {benchmark} cannot, "
            "so yours will be unpinned."
        )
        return Reproduction(command, False, reason)
    return Reproduction(f"{command} --pin {placement}", False, reason, pin=placement)


def _engine_name(engine: str) -> str:
    return ENUM_LABELS.get(engine, engine or "an unknown engine")


def _listed(engines: list[str]) -> str:
    names = [_engine_name(engine) for engine in engines]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
