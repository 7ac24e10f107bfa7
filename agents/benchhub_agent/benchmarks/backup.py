"""A full backup with the engine's own tool, timed over each protocol (seeds 000, 001).

* Firebird: ``gbak -b -g`` (no garbage collection, as in seed 001) over
  ``local`` (the file path: on Linux Firebird 3 this is the embedded engine inside gbak's
  own process, the closest thing to the Windows local protocol of the seeds),
  ``tcp_loopback`` (``localhost:/path``) and ``services_api`` (``-se localhost:service_mgr``:
  the server itself reads the database and writes the backup file).
* PostgreSQL: ``pg_dump --format=custom --compress=0`` over ``unix_socket`` and
  ``tcp_loopback``; no compression, so the figure is the server and the protocol rather
  than zlib.
* MySQL/MariaDB: ``mysqldump --single-transaction --quick`` over ``unix_socket`` and
  ``tcp_loopback``.

The dataset is a table of ``--rows`` generated rows (about 150 bytes each), the same
for every engine, never sized from the machine's memory. The CLI's common
``--pin same_core|other_core`` pins the server to one core and the backup tool to
the same core or to the other ones.
Throughput is database bytes / seconds, in MB/s of 10^6 bytes.

Over 500 lines because it drives three tools (gbak, pg_dump, mysqldump) over up to
three protocols each, with their datasets and sizes; Firebird's own tooling is in
``_firebird``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import placement
from ..progress import working
from . import _connections as dbc
from . import _firebird as fb
from .base import BenchmarkResult, Measurement, Progress, Target

NAME = "backup"
VERSION = "1"
ENGINES = frozenset({"postgresql", "mysql", "mariadb", "firebird"})
# One backup tool at a time, timed whole.
LOAD_OPTIONS = frozenset({"pin"})

PROTOCOLS = {
    "firebird": ("local", "tcp_loopback", "services_api"),
    "postgresql": ("unix_socket", "tcp_loopback"),
    "mysql": ("unix_socket", "tcp_loopback"),
    "mariadb": ("unix_socket", "tcp_loopback"),
}
TOOLS = {"firebird": "gbak", "postgresql": "pg_dump", "mysql": "mysqldump", "mariadb": "mysqldump"}
# Recorded with the run: a different option set is a different benchmark.
TOOL_OPTIONS = {
    "firebird": "-b -g",
    "postgresql": "--format=custom --compress=0",
    "mysql": "--single-transaction --quick",
    "mariadb": "--single-transaction --quick",
}
TABLE = "backup_rows"
OWN_TABLES = (TABLE,)  # MySQL/MariaDB: dropped after the run unless --keep
MEGABYTE = 1_000_000
SOURCES = ("dataset", "existing")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rows",
        type=int,
        default=1_000_000,
        help="rows of the generated table (about 150 bytes each; default 1,000,000)",
    )
    parser.add_argument(
        "--protocols",
        default=None,
        help="comma-separated subset of the engine's protocols (firebird: local, tcp_loopback,"
        " services_api; others: unix_socket, tcp_loopback); default: all",
    )
    parser.add_argument(
        "--no-init",
        action="store_true",
        help="back up the table an earlier --keep run left, do not rebuild it",
    )
    parser.add_argument(
        "--source",
        choices=SOURCES,
        default="dataset",
        help="dataset: a generated table in the agent's own database (default); existing: the"
        " --dsn database itself, read-only (never created, written or dropped)",
    )


@dataclass
class Plan:
    """One protocol's backup command."""

    protocol: str
    tool: str
    argv: list[str]
    env: dict[str, str]
    output: Path


# --- datasets ------------------------------------------------------------------------------


def create_dataset(target: Target, rows: int) -> None:
    if target.engine == "firebird":
        _create_firebird_dataset(fb.FirebirdDatabase.from_target(target), rows)
        return
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
            cur.execute(
                f"CREATE TABLE {TABLE} (id int NOT NULL PRIMARY KEY, grp int NOT NULL,"
                " amount numeric(12, 2), label varchar(100), created timestamp NULL)"
            )
            if target.engine == "postgresql":
                numbers = f"generate_series(1, {int(rows)}) AS numbers(n)"
                created = "TIMESTAMP '2020-01-01' + n * INTERVAL '1 second'"
            else:
                numbers = dbc.mysql_numbers(rows)
                created = "TIMESTAMP '2020-01-01 00:00:00' + INTERVAL n SECOND"
            cur.execute(
                f"INSERT INTO {TABLE} SELECT n, MOD(n, 1000), n * 1.25,"  # noqa: S608 - constants
                f" CONCAT(MD5(CAST(n AS char(12))), MD5(CAST(n * 7 AS char(12)))), {created}"
                f" FROM {numbers}"
            )
            cur.execute(f"CREATE INDEX {TABLE}_grp ON {TABLE} (grp)")
            cur.execute(
                f"ANALYZE {TABLE}" if target.engine == "postgresql" else f"ANALYZE TABLE {TABLE}"
            )
            if target.engine != "postgresql":
                cur.fetchall()
    finally:
        conn.close()


def _create_firebird_dataset(db: fb.FirebirdDatabase, rows: int) -> None:
    fb.recreate(db, dbc.OWNER_MARK)
    # Firebird 3 has no MD5(); digits of several HASH() values make a label as long and as
    # incompressible (gbak compresses runs of one character) as the other engines' md5 pair.
    script = f"""CREATE TABLE {TABLE} (id integer NOT NULL PRIMARY KEY, grp integer NOT NULL,
    amount numeric(12, 2), label varchar(100), created timestamp);
COMMIT;
SET TERM ^ ;
EXECUTE BLOCK AS
DECLARE n integer = 1;
BEGIN
  WHILE (n <= {int(rows)}) DO
  BEGIN
    INSERT INTO {TABLE} VALUES (:n, MOD(:n, 1000), :n * 1.25,
      LEFT(HASH(:n) || HASH(:n * 3) || HASH(:n * 7) || HASH(:n * 11) || HASH(:n * 13)
        || HASH(:n * 17) || HASH(:n * 19) || HASH(:n * 23), 64),
      DATEADD(:n SECOND TO TIMESTAMP '2020-01-01 00:00:00'));
    n = n + 1;
  END
END^
SET TERM ; ^
COMMIT;
CREATE INDEX {TABLE}_grp ON {TABLE} (grp);
COMMIT;
"""  # noqa: S608 - constants only
    fb.isql(db, script)


def database_bytes(target: Target, *, existing: bool = False) -> int:
    """The size of what is backed up, as the server counts it: the benchmark's own data, or
    with ``existing`` the whole --dsn database."""
    if target.engine == "firebird":
        db = fb.FirebirdDatabase.from_target(target)
        size, pages = fb.query_values(db, "SELECT mon$page_size, mon$pages FROM mon$database")
        return int(size) * int(pages)
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql" and existing:
                cur.execute("SELECT pg_database_size(current_database())")
            elif target.engine == "postgresql":
                cur.execute(
                    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = %s AND c.relkind IN ('r', 'm', 'p')",
                    (dbc.schema_name(NAME),),
                )
            else:
                # InnoDB's figures are estimates from its statistics; ANALYZE refreshed them.
                cur.execute(
                    "SELECT SUM(data_length + index_length) FROM information_schema.tables"
                    " WHERE table_schema = DATABASE() AND (%s OR table_name = %s)",
                    (existing, TABLE),
                )
            return int(cur.fetchone()[0] or 0)
    finally:
        conn.close()


# --- commands ------------------------------------------------------------------------------


def plans(
    target: Target, protocols: list[str], out_dir: Path, *, existing: bool = False
) -> list[Plan]:
    builders = {
        "firebird": _firebird_plan,
        "postgresql": _postgresql_plan,
        "mysql": _mysql_plan,
        "mariadb": _mysql_plan,
    }
    build = builders[target.engine]
    return [
        build(target, protocol, out_dir / f"backup-{protocol}", existing) for protocol in protocols
    ]


def _firebird_plan(target: Target, protocol: str, output: Path, existing: bool) -> Plan:
    db = fb.FirebirdDatabase.from_target(target)
    gbak = fb.tool("gbak")
    if protocol == "local":
        argv = [gbak, *TOOL_OPTIONS["firebird"].split(), db.path, str(output)]
    elif protocol in ("tcp_loopback", "tcp_remote"):
        argv = [gbak, *TOOL_OPTIONS["firebird"].split(), db.tcp(), str(output)]
    else:
        # With -se the path is the server's, and the server writes the backup file itself.
        argv = [gbak, *TOOL_OPTIONS["firebird"].split(), "-se", db.service_manager()]
        argv += [db.path, str(output)]
    return Plan(protocol, "gbak", argv, db.environment(), output)


def _postgresql_plan(target: Target, protocol: str, output: Path, existing: bool) -> Plan:
    binary = _binary("pg_dump")
    host = _postgresql_socket_dir(target) if protocol == "unix_socket" else _tcp_host(target)
    argv = [binary, *TOOL_OPTIONS["postgresql"].split(), f"--file={output}", f"--host={host}"]
    if target.port:
        argv.append(f"--port={target.port}")
    if target.user:
        argv.append(f"--username={target.user}")
    # The benchmark's own schema only (whatever else the database holds is not measured),
    # or with --source existing the whole database.
    if not existing:
        argv.append(f"--schema={dbc.schema_name(NAME)}")
    argv.append(target.database)
    env = dict(os.environ)
    if target.password:
        env["PGPASSWORD"] = target.password
    return Plan(protocol, "pg_dump", argv, env, output)


def _postgresql_socket_dir(target: Target) -> str:
    if target.socket:
        return target.socket
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW unix_socket_directories")
            return cur.fetchone()[0].split(",")[0].strip()
    finally:
        conn.close()


def _tcp_host(target: Target) -> str:
    if target.host and target.host != "localhost":
        return target.host
    # "localhost" lets some clients pick a socket; an address forces TCP.
    return "127.0.0.1"


def _mysql_plan(target: Target, protocol: str, output: Path, existing: bool) -> Plan:
    binary = _binary("mysqldump", "mariadb-dump")
    argv = [binary, *TOOL_OPTIONS["mysql"].split(), f"--result-file={output}"]
    if protocol == "unix_socket":
        argv += ["--protocol=SOCKET", f"--socket={_mysql_socket(target)}"]
    else:
        argv += ["--protocol=TCP", f"--host={_tcp_host(target)}", f"--port={target.port or 3306}"]
    # The benchmark's own table only (whatever else the database holds is not measured),
    # or with --source existing the whole database.
    argv += [f"--user={target.user or 'root'}", target.database]
    if not existing:
        argv.append(TABLE)
    env = dict(os.environ)
    if target.password:
        env["MYSQL_PWD"] = target.password  # kept off the command line that ps shows
    return Plan(protocol, "mysqldump", argv, env, output)


def _mysql_socket(target: Target) -> str:
    if target.socket:
        return target.socket
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@socket")
            return str(cur.fetchone()[0])
    finally:
        conn.close()


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(f"backup: {' or '.join(names)} not found on PATH")


def timed_backup(plan: Plan, client_cpus: frozenset[int]) -> tuple[float, int]:
    """Seconds the tool took and bytes it wrote; the file is removed afterwards."""
    with contextlib.suppress(FileNotFoundError):
        plan.output.unlink()

    def pin_client() -> None:
        os.sched_setaffinity(0, client_cpus)

    started = time.perf_counter()
    completed = subprocess.run(  # noqa: S603 - the engine's own tool, arguments are ours
        plan.argv,
        env=plan.env,
        capture_output=True,
        text=True,
        preexec_fn=pin_client if client_cpus else None,  # the agent runs no threads now
    )
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(
            f"backup over {plan.protocol}: {plan.tool} exited with {completed.returncode}: "
            f"{(completed.stderr or completed.stdout).strip()[:2000]}"
        )
    size = plan.output.stat().st_size
    plan.output.unlink()
    return seconds, size


# --- the benchmark -------------------------------------------------------------------------


def chosen_protocols(engine: str, spec: str | None, local_server: bool) -> list[str]:
    available = list(PROTOCOLS[engine])
    if not local_server:
        # A remote server has no socket or file here; its TCP is not the loopback one.
        available = [
            "tcp_remote" if p == "tcp_loopback" else p
            for p in available
            if p in ("services_api", "tcp_loopback")
        ]
    if not spec:
        return available
    wanted = [p.strip() for p in spec.split(",") if p.strip()]
    unknown = sorted(set(wanted) - set(PROTOCOLS[engine]) - {"tcp_remote"})
    if unknown:
        raise ValueError(
            f"--protocols: {', '.join(unknown)} not available for {engine}; "
            f"choose from {', '.join(PROTOCOLS[engine])}"
        )
    if not local_server:
        wanted = ["tcp_remote" if p == "tcp_loopback" else p for p in wanted]
    return [p for p in available if p in wanted]


def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    """In the benchmark's own schema, database or file, removed afterwards unless --keep;
    with --source existing, the --dsn database itself, only read."""
    if dbc.option(options, "source", "dataset") == "existing":
        if dbc.option(options, "no_init", False) or dbc.option(options, "keep", False):
            raise ValueError(
                "backup --source existing makes nothing: --no-init and --keep do not apply"
            )
        return _run(target, options, progress, existing=True)
    with dbc.own_objects(target, options, NAME, OWN_TABLES) as workspace:
        return _run(workspace, options, progress)


def _run(
    target: Target, options: argparse.Namespace, progress: Progress, *, existing: bool = False
) -> BenchmarkResult:
    rows = int(dbc.option(options, "rows", 1_000_000))
    if dbc.option(options, "no_init", False) and not existing:
        rows = dbc.kept_rows(target, NAME, TABLE)  # what is measured, not what --rows says
    repeat = int(dbc.option(options, "repeat", 3))
    pin_mode = dbc.option(options, "pin", None)
    started_at = dt.datetime.now(dt.UTC)
    if not (existing or dbc.option(options, "no_init", False)):
        with working(progress, f"backup: building {rows:,} rows"):
            create_dataset(target, rows)
    environment = _environment(target)
    local_server = environment.pop("local_server")
    server_pid = environment.pop("server_pid")
    protocols = chosen_protocols(
        target.engine, dbc.option(options, "protocols", None), local_server
    )
    size = database_bytes(target, existing=existing)
    pin = placement.plan(pin_mode, server_pid)
    environment["client"]["cpu_placement"] = pin.mode
    if len(protocols) == 1:
        # With several, each measurement's 'protocol' parameter says which one it used.
        environment["client"]["protocol"] = protocols[0]

    progress.start(len(protocols) * (repeat + 1), "backup")
    checkpoints = dbc.Checkpoints(target)
    samples: dict[str, list[tuple[float, int]]] = {p: [] for p in protocols}
    with _work_dir() as out_dir, _pinned_server(target, server_pid, pin):
        for plan in plans(target, protocols, out_dir, existing=existing):
            timed_backup(plan, pin.client_cpus)  # warm-up: caches, first-connection costs
            progress.advance()
            for _ in range(repeat):
                checkpoints.before_point()
                samples[plan.protocol].append(timed_backup(plan, pin.client_cpus))
                progress.advance()
    progress.finish()

    return BenchmarkResult(
        benchmark=NAME,
        benchmark_version=VERSION,
        parameters={
            **({"source": "existing"} if existing else {"rows": rows}),
            "tool": TOOLS[target.engine],
            "tool_options": TOOL_OPTIONS[target.engine],
            "protocols": ",".join(protocols),
            "pin": pin.mode,
        },
        repetitions=repeat,
        started_at=started_at,
        ended_at=dt.datetime.now(dt.UTC),
        measurements=_measurements(TOOLS[target.engine], size, samples),
        notes=[*_notes(target, protocols), checkpoints.note()],
        **environment,
    )


def _measurements(
    tool: str, size: int, samples: dict[str, list[tuple[float, int]]]
) -> list[Measurement]:
    found = []
    for protocol, runs in samples.items():
        point = {"protocol": protocol, "tool": tool}
        seconds = [s for s, _ in runs]
        throughput = [size / MEGABYTE / s for s in seconds]
        written = [float(b) for _, b in runs]
        found += [
            Measurement("seconds", dbc.median(seconds), "s", point, seconds),
            Measurement("throughput", dbc.median(throughput), "MB/s", point, throughput),
            Measurement("database_bytes", float(size), "bytes", point, [float(size)] * len(runs)),
            Measurement("backup_bytes", dbc.median(written), "bytes", point, written),
        ]
    return found


def _notes(target: Target, protocols: list[str]) -> list[str]:
    notes = []
    if "local" in protocols:
        notes.append(
            "local: gbak opened the database file itself (Firebird 3's embedded engine on "
            "Linux), the server took no part."
        )
    if target.engine in dbc.MYSQL_FAMILY:
        notes.append(
            f"database_bytes: InnoDB's data_length + index_length of {TABLE} (an estimate), "
            "the one table mysqldump reads."
        )
    elif target.engine == "postgresql":
        notes.append(
            f"database_bytes: pg_total_relation_size of the tables of schema "
            f"{dbc.schema_name(NAME)}, the one pg_dump --schema reads."
        )
    else:
        notes.append("database_bytes: page size times allocated pages (MON$DATABASE).")
    return notes


@contextlib.contextmanager
def _work_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="benchhub-backup-"))
    try:
        # The Firebird services API writes the backup as the server's own user.
        path.chmod(0o777)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _pinned_server(
    target: Target, server_pid: int | None, pin: placement.Placement
) -> contextlib.AbstractContextManager[Any]:
    if pin.mode == "unpinned":
        return contextlib.nullcontext()
    # PostgreSQL forks a backend per connection: pinning the postmaster pins the backend
    # pg_dump will get. MySQL and Firebird start a thread, which inherits its creator's.
    return placement.PinnedServer(server_pid, pin)


def _environment(target: Target) -> dict[str, Any]:
    if target.engine == "firebird":
        return _firebird_environment(target)
    info = dbc.describe(target)
    found: dict[str, Any] = {
        "client": {
            "load_engine": TOOLS[target.engine],
            "driver": TOOLS[target.engine],
            "driver_version": _tool_version(target.engine),
        },
        "database": info.database_section(),
        "storage_path": info.data_directory.rstrip("/") if info.data_directory else None,
        "local_server": info.is_local,
        "server_pid": _server_pid(target, info),
    }
    return found


def _server_pid(target: Target, info: Any) -> int | None:
    if target.engine != "postgresql":
        return info.server_pid
    if not info.data_directory:
        return None
    try:
        first = (Path(info.data_directory) / "postmaster.pid").read_text().split("\n", 1)[0]
        return int(first)
    except (OSError, ValueError):
        return None


def _tool_version(engine: str) -> str:
    binary = _binary("pg_dump") if engine == "postgresql" else _binary("mysqldump", "mariadb-dump")
    completed = subprocess.run(  # noqa: S603 - the engine's own tool
        [binary, "--version"], capture_output=True, text=True
    )
    return completed.stdout.strip()[:500]


def _firebird_environment(target: Target) -> dict[str, Any]:
    db = fb.FirebirdDatabase.from_target(target)
    page_size, page_buffers = fb.query_values(
        db, "SELECT mon$page_size, mon$page_buffers FROM mon$database"
    )
    database: dict[str, Any] = {"version_string": fb.server_version(db), "engine": "firebird"}
    mode = fb.server_mode(database["version_string"]) if db.is_local_file else None
    if mode:
        database["architecture"] = mode
    settings = {"page_size": page_size, "page_buffers": page_buffers}
    database["settings"] = {k: v for k, v in settings.items() if v is not None}
    return {
        "client": {
            "load_engine": "gbak",
            "driver": "gbak",
            "driver_version": fb.tool_version("gbak"),
        },
        "database": database,
        "storage_path": str(Path(db.path).parent) if db.is_local_file else None,
        "local_server": db.is_local_file,
        "server_pid": fb.server_pid(db.port) if db.is_local_file else None,
    }
