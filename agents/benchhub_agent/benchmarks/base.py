"""What every benchmark module shares: where it connects, how it reports.

A benchmark lives in ``benchhub_agent/benchmarks/<name>.py`` (name with
underscores) and exposes:

    NAME: str                      # catalog name, e.g. "select-update"
    VERSION: str                   # benchmark_version, bump when the workload changes
    ENGINES: frozenset[str]        # engines it can run on
    LOAD_OPTIONS: frozenset[str]   # those it applies of clients, transactions, duration,
                                   # warmup, pin
    def add_arguments(parser: argparse.ArgumentParser) -> None
    def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult

The CLI adds the common options (--dsn, --repeat, --keep, --dry-run, --upload,
--server, --token, and the load options of LOAD_OPTIONS; any other load option
is refused naming it) before calling ``add_arguments`` for the benchmark's
own ones.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

from ..target import Target as Target  # re-exported: part of a benchmark's interface


@dataclass
class Measurement:
    metric: str
    value: float
    unit: str
    parameters: dict[str, Any] = field(default_factory=dict)
    samples: list[float] = field(default_factory=list)

    def as_document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"metric": self.metric, "unit": self.unit, "value": self.value}
        if self.parameters:
            doc["parameters"] = self.parameters
        if self.samples:
            doc["samples"] = self.samples
        return doc


@dataclass
class BenchmarkResult:
    """What one benchmark run produced, before it becomes a document.

    ``client`` and ``database`` are the document's environment sections that
    only the benchmark knows (protocol used, driver and version, version()
    string, settings); the CLI merges them with the machine description.
    """

    benchmark: str
    benchmark_version: str
    parameters: dict[str, Any]
    repetitions: int
    started_at: dt.datetime
    ended_at: dt.datetime
    measurements: list[Measurement]
    client: dict[str, Any] = field(default_factory=dict)
    database: dict[str, Any] = field(default_factory=dict)
    storage_path: str | None = None  # the server's data directory, for storage detection
    notes: list[str] = field(default_factory=list)
    # The load engine's busiest worker at its busiest point (%), when the agent drove the
    # load: the server flags the run client-bound at 95 or more.
    load_engine_cpu: float | None = None

    def run_document(self, command: str | None = None) -> dict[str, Any]:
        run: dict[str, Any] = {
            "benchmark": self.benchmark,
            "benchmark_version": self.benchmark_version,
            "parameters": self.parameters,
            "repetitions": self.repetitions,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat(),
            "measurements": [m.as_document() for m in self.measurements],
        }
        if self.load_engine_cpu is not None:
            run["load_engine_cpu"] = self.load_engine_cpu
        if self.notes:
            run["note"] = "\n".join(self.notes)
        return run


class Progress(Protocol):
    def start(self, total: int, label: str) -> None: ...
    def advance(self, amount: int = 1) -> None: ...
    def finish(self) -> None: ...


class SilentProgress:
    def start(self, total: int, label: str) -> None:
        pass

    def advance(self, amount: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass


def check_engine(module: ModuleType, target: Target) -> None:
    """The one check of the engines a benchmark module runs on (its ``ENGINES``)."""
    if target.engine not in module.ENGINES:
        engines = ", ".join(sorted(module.ENGINES))
        raise ValueError(f"{module.NAME} runs on {engines}, not on {target.engine}")


def run(module: ModuleType, target: Target, options: Any, progress: Progress) -> BenchmarkResult:
    """Run a benchmark module on ``target``, refusing an engine it does not run on."""
    check_engine(module, target)
    return module.run(target, options, progress)
