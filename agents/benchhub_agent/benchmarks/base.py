"""What every benchmark module shares: where it connects, how it reports.

A benchmark lives in ``benchhub_agent/benchmarks/<name>.py`` (name with
underscores) and exposes:

    NAME: str                      # catalog name, e.g. "select-update"
    VERSION: str                   # benchmark_version, bump when the workload changes
    ENGINES: frozenset[str]        # engines it can run on
    def add_arguments(parser: argparse.ArgumentParser) -> None
    def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult

The CLI adds the common options (--dsn, --clients, --transactions, --duration,
--repeat, --dry-run, --upload, --server, --token) before calling
``add_arguments`` for the benchmark's own ones.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

ENGINE_SCHEMES = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mariadb",
    "firebird": "firebird",
}


@dataclass(frozen=True)
class Target:
    """A database to benchmark, parsed from ``--dsn``.

    postgresql://user:password@host:port/dbname
        (host omitted or ?host=/run/postgresql: unix socket)
    mysql://root@127.0.0.1:3306/test
        (mariadb:// is the same; ?unix_socket=/run/mysqld/mysqld.sock)
    firebird://SYSDBA:password@localhost:3050//var/lib/firebird/data/bench.fdb
        (no host: local/embedded)
    """

    engine: str
    dsn: str
    host: str | None
    port: int | None
    user: str | None
    password: str | None
    database: str
    socket: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, dsn: str) -> Target:
        parts = urlsplit(dsn)
        engine = ENGINE_SCHEMES.get(parts.scheme)
        if engine is None:
            known = ", ".join(sorted(ENGINE_SCHEMES))
            raise ValueError(f"--dsn: unknown scheme {parts.scheme!r}; expected one of {known}")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        socket = query.pop("host", None) or query.pop("unix_socket", None)
        database = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
        if not database:
            raise ValueError("--dsn: no database name after the host (…/dbname)")
        return cls(
            engine=engine,
            dsn=dsn,
            host=parts.hostname,
            port=parts.port,
            user=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            database=database,
            socket=socket,
            options=query,
        )

    def redacted(self) -> str:
        """The DSN without its password, fit to print or to record."""
        if not self.password:
            return self.dsn
        return self.dsn.replace(f":{self.password}@", ":***@", 1)


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
