"""The database a run drives, parsed from ``--dsn``.

Its own module, below both :mod:`benchhub_agent.db` and the benchmarks, so that
``db`` (connections) never imports the benchmarks package that imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    # MySQL/MariaDB: where a benchmark that declares DATA_DIRECTORY makes its InnoDB
    # tables' files (a study puts them on the filesystem under study); never from --dsn.
    data_directory: str | None = None

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
