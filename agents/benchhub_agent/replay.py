"""``run --like``: a published run's parameters as this agent's options, or why it cannot.

A replay is faithful or refused. Every parameter of the published run (and
the load engine, query mode and CPU placement it recorded) is either turned
into the option that reproduces it here, converted with its unit when the
engines differ (``external-sort``'s sort memory is PostgreSQL's ``work_mem``
with its units on one side and MySQL's ``sort_buffer_size`` in bytes on the
other), or the replay stops with :class:`CannotReplay` naming the parameter
and the reason. Nothing is dropped with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchhub_contract.importers import TOOLS as IMPORT_TOOLS

from .placement import PLACEMENTS

# What the agent records as its own load: the client section's "benchhub-agent",
# tpcb's parameter "agent". It names a load engine in every run it measures, so a
# run that names none came from elsewhere (see _no_load_engine).
AGENT_LOAD_ENGINES = ("benchhub-agent", "agent")
MYSQL_FAMILY = ("mysql", "mariadb")


class CannotReplay(ValueError):
    """The published run cannot be reproduced here; the message says which part and why."""


@dataclass
class Replay:
    options: list[str] = field(default_factory=list)  # argv, e.g. ["--clients", "1,2"]
    notes: list[str] = field(default_factory=list)  # conversions, shown to the user

    def add(self, option: str, value: Any) -> None:
        self.options += [option, _text(value)]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def replay(published: dict[str, Any], engine: str, given: set[str]) -> Replay:
    """Options that reproduce ``published`` on ``engine`` (the --dsn's); ``given`` are the
    options the user typed, which win over the published run's (and are not repeated)."""
    name = published.get("benchmark")
    plan = PLANS.get(str(name))
    if plan is None:
        raise CannotReplay(f"this agent cannot run benchmark {name!r}")
    parameters = dict(published.get("parameters") or {})
    found = Replay()
    plan(parameters, published, engine, found)
    if parameters:  # every parameter a plan understands is popped
        left = ", ".join(f"{k}={v!r}" for k, v in sorted(parameters.items()))
        raise CannotReplay(f"this agent's {name} has no option for that run's {left}")
    if published.get("repetitions"):
        found.add("--repeat", published["repetitions"])
    note = across_engines(_source_engine(published), engine)
    if note:
        found.notes.append(note)
    return _without_given(found, given)


def same_engine(one: str, other: str) -> bool:
    """Whether two engine names can be the same server. ``mysql://`` and
    ``mariadb://`` are one driver and one protocol: the scheme a user types
    (the README's is mysql://) does not say which server answers, so a
    MariaDB run repeated through mysql:// is not across engines here; the
    engine the server reports once connected decides (like.run_like)."""
    family = {"mariadb": "mysql"}
    return family.get(one, one) == family.get(other, other)


def across_engines(source: str, here: str) -> str | None:
    """The note for a comparison of two engines, or None for one engine."""
    if not source or not here or same_engine(source, here):
        return None
    return engines_differ(source, here)


def engines_differ(source: str, here: str) -> str:
    return (
        f"that run was on {source}, this one is on {here}: the comparison below is "
        "across engines, not of two machines"
    )


def _without_given(found: Replay, given: set[str]) -> Replay:
    kept = Replay(notes=found.notes)
    pairs = zip(found.options[::2], found.options[1::2], strict=True)
    for option, value in pairs:
        if option in given:
            kept.notes.append(f"your {option} replaces that run's {option} {value}")
        else:
            kept.options += [option, value]
    return kept


# --- what every benchmark shares ----------------------------------------------


def _client(published: dict[str, Any]) -> dict[str, Any]:
    return published.get("client") or {}


def _source_engine(published: dict[str, Any]) -> str:
    return str((published.get("server") or {}).get("engine") or "")


def _no_load_engine() -> CannotReplay:
    return CannotReplay(
        "that run records no load engine, and this agent names its own in every run it "
        "measures: its load came from a tool it does not name, which a replay here would "
        "not repeat"
    )


def _load_engine_is_the_agent(published: dict[str, Any]) -> None:
    load_engine = str(_client(published).get("load_engine") or "")
    if not load_engine:
        raise _no_load_engine()
    if load_engine in AGENT_LOAD_ENGINES:
        return
    if load_engine in IMPORT_TOOLS:
        then = "run that tool yourself and 'benchhub-agent import' its output"
    else:
        # The seed articles' tools (MySQL's sql-bench, an author's own Java
        # program): 'import' reads none of them, and said so only when tried.
        then = (
            "only that tool repeats it, and 'benchhub-agent import' does not read its output "
            f"(it reads {', '.join(IMPORT_TOOLS)})"
        )
    raise CannotReplay(
        f"that run's load came from {load_engine!r}, which this benchmark cannot drive here: "
        + then
    )


def _placement(published: dict[str, Any], found: Replay, *, supported: bool) -> None:
    placement = str(_client(published).get("cpu_placement") or "unpinned")
    if placement == "unpinned":
        return
    if not supported or placement not in PLACEMENTS:
        raise CannotReplay(
            f"that run pinned its load ({placement}); this agent's "
            f"{published.get('benchmark')} cannot reproduce that placement"
        )
    found.add("--pin", placement)


def _clients_of_points(published: dict[str, Any]) -> list[int]:
    found = set()
    for measurement in published.get("measurements") or []:
        clients = (measurement.get("parameters") or {}).get("clients")
        if clients is not None:
            found.add(int(clients))
    return sorted(found)


def _copy(parameters: dict[str, Any], found: Replay, *names: str) -> None:
    for name in names:
        if name in parameters:
            found.add("--" + name.replace("_", "-"), parameters.pop(name))


def _require(parameters: dict[str, Any], name: str, expected: Any, why: str) -> None:
    if name in parameters:
        value = parameters.pop(name)
        if value != expected:
            raise CannotReplay(f"that run's {name}={value!r}: {why}")


# --- per benchmark ----------------------------------------------------------------


def _select_update(p: dict[str, Any], published: dict[str, Any], engine: str, found: Replay):
    _load_engine_is_the_agent(published)
    _require(p, "rows", 100, "this agent's select-update table has 100 rows")
    _copy(p, found, "locking", "transactions", "duration", "warmup")
    clients = _clients_of_points(published)
    if clients:
        found.add("--clients", ",".join(map(str, clients)))
    _placement(published, found, supported=True)


def _tpcb(p: dict[str, Any], published: dict[str, Any], engine: str, found: Replay):
    load_engine = str(p.pop("load_engine", None) or _client(published).get("load_engine") or "")
    if not load_engine:
        raise _no_load_engine()
    if load_engine in AGENT_LOAD_ENGINES:
        found.add("--engine", "agent")
    elif load_engine == "pgbench":
        if engine != "postgresql":
            raise CannotReplay(
                "that run's load engine was pgbench, which drives PostgreSQL only: "
                "give a postgresql:// --dsn"
            )
        found.add("--engine", "pgbench")
    else:
        raise CannotReplay(f"that run's load engine {load_engine!r} is not one tpcb can drive")
    from .benchmarks.tpcb import query_mode

    here = query_mode(engine)
    if "query_mode" in p and p["query_mode"] != here:
        raise CannotReplay(
            f"that run's query_mode={p['query_mode']!r}, but tpcb on {engine} runs {here!r} "
            "statements (prepared on PostgreSQL and Firebird; on MySQL/MariaDB the agent "
            "sends text statements, as sysbench)"
        )
    p.pop("query_mode", None)
    _copy(p, found, "scale", "duration", "warmup", "clients")
    _placement(published, found, supported=False)


def _sql_bench(p: dict[str, Any], published: dict[str, Any], engine: str, found: Replay):
    _load_engine_is_the_agent(published)
    _copy(p, found, "counts", "rows")
    operations = p.pop("operations", "all")
    if operations != "all":  # "all" is the default: no option names it
        found.add("--operations", operations)
    _placement(published, found, supported=False)


def _backup(p: dict[str, Any], published: dict[str, Any], engine: str, found: Replay):
    from .benchmarks.backup import TOOL_OPTIONS, TOOLS

    if "rows" not in p:
        # A backup the agent timed records the rows of the table it built;
        # one without (seed 001's, of the author's 3.8 GB database) timed a
        # database this agent cannot build, and its defaults would time another.
        raise CannotReplay(
            "that run records no rows: it backed up a database this agent does not build, "
            "so a replay would time another one; run backup without --like to measure yours"
        )
    tool, options = p.pop("tool", TOOLS[engine]), p.pop("tool_options", TOOL_OPTIONS[engine])
    if tool != TOOLS[engine]:
        source = _source_engine(published) or "its engine"
        raise CannotReplay(
            f"that run timed {tool} on {source}; a {engine} --dsn would time {TOOLS[engine]}: "
            f"give a --dsn of the same engine"
        )
    if options != TOOL_OPTIONS[engine]:
        raise CannotReplay(
            f"that run gave {tool} the options {options!r}; "
            f"this agent gives {TOOL_OPTIONS[engine]!r}"
        )
    _copy(p, found, "rows", "protocols")
    pin = p.pop("pin", None) or _client(published).get("cpu_placement") or "unpinned"
    if pin != "unpinned":
        if pin not in PLACEMENTS:
            raise CannotReplay(f"that run's pin={pin!r} is not a placement this agent knows")
        found.add("--pin", pin)


def _external_sort(p: dict[str, Any], published: dict[str, Any], engine: str, found: Replay):
    _load_engine_is_the_agent(published)
    _require(p, "fetch", "all_rows", "this agent's external-sort fetches all rows")
    _copy(p, found, "rows")
    if "sort_memory" in p and "firebird" in (_source_engine(published) or engine, engine):
        _firebird_sort_memory(str(p.pop("sort_memory")), _source_engine(published), engine, found)
    if "sort_memory" in p:
        source = _source_engine(published) or engine
        value = p.pop("sort_memory")
        converted = convert_sort_memory(str(value), source, engine)
        found.add("--sort-memory", converted)
        if not same_engine(source, engine):
            found.notes.append(
                f"sort memory {value} ({_memory_setting(source)} on {source}) is "
                f"{converted} ({_memory_setting(engine)} on {engine})"
            )
    _placement(published, found, supported=False)


def _firebird_sort_memory(value: str, source: str, engine: str, found: Replay) -> None:
    """Firebird sorts in TempCacheLimit, a setting of the whole server, not of a session:
    a run records it but no run sets it, so it is kept only between two Firebirds."""
    source = source or engine
    if source == engine:
        found.notes.append(
            f"sort memory: that run's server had TempCacheLimit {value}; Firebird's is set "
            "in firebird.conf, not by a run: yours is recorded in the repeat's sort_memory"
        )
        return
    if engine == "firebird":
        raise CannotReplay(
            f"that run sorted with {_memory_setting(source)} {value} on {source}; Firebird "
            "cannot set a session's sort memory (TempCacheLimit is server-wide): replay it "
            f"on a {source} --dsn"
        )
    raise CannotReplay(
        f"that run's sort memory was Firebird's server-wide TempCacheLimit ({value}), which "
        f"no session setting of {engine} matches: replay it on a Firebird --dsn"
    )


def _tpcc(p: dict[str, Any], published: dict[str, Any], engine: str, found: Replay):
    _load_engine_is_the_agent(published)
    _require(p, "mix", "45/43/4/4/4", "this agent's tpcc runs the mix 45/43/4/4/4")
    _require(p, "think_time", "none", "this agent's tpcc runs without keying or think time")
    # The published run passed its consistency check, or it would not have been published;
    # the replay checks its own.
    _require(p, "consistency", "passed", "this agent publishes only runs that passed it")
    _copy(p, found, "warehouses", "seed", "duration", "warmup", "clients")
    _placement(published, found, supported=False)


PLANS: dict[str, Callable[[dict[str, Any], dict[str, Any], str, Replay], None]] = {
    "select-update": _select_update,
    "tpcb": _tpcb,
    "sql-bench": _sql_bench,
    "backup": _backup,
    "external-sort": _external_sort,
    "tpcc": _tpcc,
}


# --- sort memory between engines ------------------------------------------------

# PostgreSQL's memory units (1024-based); a bare number of work_mem is kB.
_PG_UNITS = {"kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
PG_WORK_MEM_MIN = 64 * 1024  # PostgreSQL refuses a smaller work_mem


def _memory_setting(engine: str) -> str:
    return "work_mem" if engine == "postgresql" else "sort_buffer_size"


def memory_bytes(value: str, engine: str) -> int:
    """Bytes of a sort memory setting as ``engine`` spells it."""
    text = value.strip()
    if engine in MYSQL_FAMILY:
        match = re.fullmatch(r"(\d+)\s*([kKmMgG]?)", text)  # MySQL also takes 32K, 1M, 1G
        if not match:
            raise CannotReplay(f"sort memory {value!r} is not a byte count")
        factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[match.group(2).lower()]
        return int(match.group(1)) * factor
    match = re.fullmatch(r"(\d+)\s*([kKmMgGtT][bB])?", text)
    if not match:
        raise CannotReplay(f"sort memory {value!r} is not a PostgreSQL memory size (e.g. 64kB)")
    return int(match.group(1)) * _PG_UNITS[(match.group(2) or "kB").lower()]


def postgresql_memory(size: int) -> str:
    """The largest exact PostgreSQL unit for ``size`` bytes."""
    for unit in ("TB", "GB", "MB", "kB"):
        factor = _PG_UNITS[unit.lower()]
        if size % factor == 0:
            return f"{size // factor}{unit}"
    raise CannotReplay(f"{size} bytes is not a whole number of kB: PostgreSQL cannot set it")


def convert_sort_memory(value: str, source: str, target: str) -> str:
    """``value`` as ``source`` spells it, spelled for ``target``; the same bytes or refused."""
    size = memory_bytes(value, source)
    if target == "postgresql":
        if size < PG_WORK_MEM_MIN:
            raise CannotReplay(
                f"that run sorted with {size} bytes of sort memory ({_memory_setting(source)} "
                f"on {source}); PostgreSQL's work_mem cannot be below 64kB, so the sort would "
                "spill differently: replay it on a MySQL/MariaDB --dsn"
            )
        return postgresql_memory(size)
    return str(size)
