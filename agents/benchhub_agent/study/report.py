"""What a study tells the site: its question, what was held fixed, and its runs."""

from __future__ import annotations

import argparse
from typing import Any

from .machine import StudyError
from .plan import Plan

# (label, section, field): compared across the runs of a study, to say what was held.
HELD = (
    ("CPU", "hardware", "cpu"),
    ("cores", "hardware", "cores"),
    ("memory (bytes)", "hardware", "ram_bytes"),
    ("operating system", "os", "distribution"),
    ("OS version", "os", "version"),
    ("kernel", "os", "kernel"),
    ("server", "database", "version_string"),
    ("server settings", "database", "settings"),
    ("protocol", "client", "protocol"),
    ("driver", "client", "driver"),
    ("CPU placement", "client", "cpu_placement"),
    ("filesystem", "storage", "filesystem"),
    ("mount options", "storage", "mount_options"),
    ("I/O scheduler", "storage", "io_scheduler"),
)
# What varies with each factor, so is not expected to be held.
VARIES_WITH = {
    "filesystem": {"filesystem", "mount_options"},
    "mount-options": {"mount_options"},
    "io-scheduler": {"io_scheduler"},
    "config": {"settings"},
    "dsn": {"version_string", "settings", "driver"},
    "protocol": {"protocol"},
    "pin": {"cpu_placement"},
}


def study_fields(args: argparse.Namespace, plan: Plan, catalog: dict[str, Any]) -> dict[str, Any]:
    """The study's own fields, checked before anything runs: a --metric the benchmark does
    not have is refused then, not after an hour of runs."""
    entry = next((b for b in catalog["benchmarks"] if b["name"] == args.benchmark), None)
    if entry is None:
        raise StudyError(f"study: {args.benchmark} is not in the benchmark catalog")
    headline = entry.get("headline") or {}
    metric = args.metric or headline.get("metric")
    names = [m["name"] for m in entry.get("metrics", [])]
    if metric not in names:
        raise StudyError(
            f"--metric: {args.benchmark} has no metric {metric!r}; it has " + ", ".join(names)
        )
    point = dict(args.point or [])
    if not point and metric == headline.get("metric") and isinstance(headline.get("at"), dict):
        point = dict(headline["at"])
    factors = plan.factors
    reference = args.reference
    if reference is None and factors[0] != "mount-options":
        reference = plan.cells[0].levels[0].value
    named = {"dsn": "server " + plan.axes[factors.index("dsn")] if "dsn" in factors else ""}
    named["pin"] = "CPU placement"
    words = [named.get(f) or f.replace("-", " ") for f in factors]
    question = args.question or (
        f"Which {words[0]} gives {args.benchmark} the best {metric}"
        + (f", for each {words[1]}?" if len(words) > 1 else "?")
    )
    fields: dict[str, Any] = {
        "title": args.title or f"{args.benchmark}: {' x '.join(words)}",
        "question": question,
        "benchmark": args.benchmark,
        "metric": metric,
        "vary": plan.axes,
        "point": point,
    }
    if reference:
        fields["reference"] = reference
    if getattr(args, "repeats", None):
        fields["repeats"] = args.repeats
    return fields


def _value(doc: dict[str, Any], section: str, name: str) -> Any:
    value = (doc.get("environment", {}).get(section) or {}).get(name)
    return ",".join(value) if isinstance(value, list) else value


def held_fixed(documents: list[dict[str, Any]], factors: list[str]) -> tuple[list[str], list[str]]:
    """What every run had alike, and what differed though no factor varies it."""
    varying = set().union(*(VARIES_WITH[f] for f in factors))
    held, differed = [], []
    for label, section, name in HELD:
        if name in varying:
            continue
        values = {repr(_value(doc, section, name)) for doc in documents}
        sample = _value(documents[0], section, name) if documents else None
        if len(values) == 1 and sample not in (None, "", {}):
            shown = sample if not isinstance(sample, dict) else f"{len(sample)} recorded, alike"
            held.append(f"{label}: {shown}")
        elif len(values) > 1:
            differed.append(label)
    return held, differed


def study_request(
    fields: dict[str, Any],
    args: argparse.Namespace,
    plan: Plan,
    documents: list[dict[str, Any]],
    submissions: list[str],
) -> dict[str, Any]:
    held, differed = held_fixed(documents, plan.factors)
    order = "".join(plan.letter(cell) for _, cell in plan.order)
    cells = "; ".join(f"{plan.letter(c)} = {c.label}" for c in plan.cells)
    parts = [args.write_up or ""]
    parts.append(
        f"Made by benchhub-agent study: {len(plan.cells)} cells ({cells}), each run "
        f"{plan.repeat} times in the interleaved order {order}."
    )
    if held:
        parts.append("Held fixed (alike in every run): " + "; ".join(held) + ".")
    if differed:
        parts.append(
            "Differed between runs though no factor varies it: " + ", ".join(differed) + "."
        )
    return {**fields, "submissions": submissions, "write_up": "\n\n".join(p for p in parts if p)}
