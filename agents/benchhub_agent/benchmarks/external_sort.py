"""An ORDER BY that spills to temporary files (seed 001: 31 M varchar(20) rows, 4.28 GB).

A table of ``--rows`` generated varchar(20) values is sorted with ``SELECT s FROM
sort_rows ORDER BY s`` and every row is fetched by the client, as in the seed (the
server reads its temporary file back only while the client fetches). The session's
sort memory is set small (``--sort-memory``) so the sort spills at test scale too.

What each engine really tells about the temporary files:

* PostgreSQL: ``temp_bytes_written`` is the delta of ``pg_stat_database.temp_bytes``
  per repetition. That counter adds up the *size* of each temporary file when it is
  removed; the sort's tape files reuse their blocks during merge passes, so the blocks
  really written can be more (EXPLAIN's "Temp Written Blocks", kept in the note).
  PostgreSQL counts no temp *reads* there; ``temp_bytes_read`` comes from
  ``EXPLAIN (ANALYZE, BUFFERS)`` of the warm-up execution (temp blocks read times block size).
  Parallel sort is switched off so that one backend does the whole sort, as in the seed.
* MySQL/MariaDB: the server counts no temporary-file bytes anywhere a client can read
  (performance_schema's file instruments do not single out filesort's files), so no
  byte measurement is made; ``Sort_merge_passes``, ``Created_tmp_files`` and
  ``Sort_rows`` per query are recorded in the run's note, and the spill is proven by
  ``Sort_merge_passes`` > 0.
* Firebird: a sort keeps its runs in memory up to ``TempCacheLimit``, one setting of the
  whole server (firebird.conf), and writes the rest to ``fb_sort_*`` files in
  ``TempDirectories``, unlinked as soon as they are made. ``temp_bytes_written`` is the
  sum of their largest sizes, watched in the server's open files (/proc/<pid>/fd: the
  server on this machine, and root or the server's user). The server counts no reads
  of them, and Linux none per file: ``temp_bytes_read`` is the server process's
  ``rchar`` (/proc/<pid>/io) over the sort, less the database pages MON$IO_STATS says it
  read. The run cannot set its sort memory: it records the server's TempCacheLimit
  as ``sort_memory``, and ``--sort-memory`` is refused.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from dataclasses import dataclass, field
from typing import Any

from ..progress import working
from . import _connections as dbc
from .base import BenchmarkResult, Measurement, Progress, Target

NAME = "external-sort"
VERSION = "1"
ENGINES = frozenset({"postgresql", "mysql", "mariadb", "firebird"})
# One client and one statement, sized by --rows.
LOAD_OPTIONS: frozenset[str] = frozenset()

TABLE = "sort_rows"
OWN_TABLES = (TABLE,)  # MySQL/MariaDB: dropped after the run unless --keep
QUERY = f"SELECT s FROM {TABLE} ORDER BY s"  # noqa: S608 - constants
FETCH_BATCH = 10_000
# The smallest sort memory each engine accepts: spilling then starts at a few thousand rows.
DEFAULT_SORT_MEMORY = {"postgresql": "64kB", "mysql": "32768", "mariadb": "32768"}
FIREBIRD_SORT_MEMORY = "TempCacheLimit"
MYSQL_COUNTERS = ("Sort_merge_passes", "Created_tmp_files", "Sort_rows")
STATS_WAIT_S = 5.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rows",
        type=int,
        default=1_000_000,
        help="rows of varchar(20) to sort (default 1,000,000)",
    )
    parser.add_argument(
        "--sort-memory",
        default=None,
        help="session sort memory: PostgreSQL work_mem (default 64kB), MySQL/MariaDB "
        "sort_buffer_size in bytes (default 32768); Firebird has none per session "
        "(TempCacheLimit of firebird.conf, recorded)",
    )
    parser.add_argument(
        "--no-init",
        action="store_true",
        help="sort the table an earlier --keep run left, do not rebuild it",
    )


@dataclass
class SortRun:
    """One execution of the sorting query and what the server counted for it."""

    seconds: float
    rows: int
    temp_bytes_written: int | None = None
    temp_bytes_read: int | None = None  # Firebird: per repetition
    counters: dict[str, int] = field(default_factory=dict)


# --- dataset -------------------------------------------------------------------------------


def create_table(target: Target, rows: int) -> None:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
            if target.engine == "firebird":
                _create_firebird_table(cur, rows)
                return
            if target.engine == "postgresql":
                cur.execute(f"CREATE TABLE {TABLE} (s varchar(20) NOT NULL)")
                source = f"generate_series(1, {int(rows)}) AS numbers(n)"
                value = "substr(md5(n::text), 1, 20)"
            else:
                cur.execute(f"CREATE TABLE {TABLE} (s varchar(20) NOT NULL) ENGINE=InnoDB")
                source = dbc.mysql_numbers(rows)
                value = "SUBSTR(MD5(n), 1, 20)"
            # md5 of the row number: reproducible, evenly spread, no order to exploit.
            cur.execute(f"INSERT INTO {TABLE} SELECT {value} FROM {source}")  # noqa: S608
            cur.execute(
                f"ANALYZE {TABLE}" if target.engine == "postgresql" else f"ANALYZE TABLE {TABLE}"
            )
            if target.engine != "postgresql":
                cur.fetchall()
    finally:
        conn.close()


def _create_firebird_table(cur: Any, rows: int) -> None:
    from .. import firebird_db

    cur.execute(f"CREATE TABLE {TABLE} (s varchar(20) NOT NULL)")
    # Firebird 3 has no md5(): the digits of two HASH() values of the row number, as
    # reproducible and as evenly spread.
    insert = f"INSERT INTO {TABLE} VALUES (LEFT(HASH(:n) || HASH(:n * 7), 20))"  # noqa: S608
    cur.execute(
        "EXECUTE BLOCK AS DECLARE n int = 1; BEGIN"
        f" WHILE (n <= {int(rows)}) DO BEGIN {insert}; n = n + 1; END END"
    )
    firebird_db.set_statistics(cur)


# --- PostgreSQL ----------------------------------------------------------------------------


def _postgresql_session(conn: Any, sort_memory: str) -> None:
    with conn.cursor() as cur:
        cur.execute("SELECT set_config('work_mem', %s, false)", (sort_memory,))
        cur.execute("SET max_parallel_workers_per_gather = 0")
    conn.commit()


def _postgresql_temp_bytes(conn: Any) -> int:
    with conn.cursor() as cur:
        # Each statement sees fresh statistics only after the cached snapshot is dropped.
        cur.execute("SELECT pg_stat_clear_snapshot()")
        cur.execute("SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
        value = int(cur.fetchone()[0])
    conn.commit()
    return value


def _postgresql_flush(conn: Any) -> None:
    """Make this backend publish its pending statistics before the next statement.

    Since PostgreSQL 15 a backend flushes at most once a second; pg_stat_force_next_flush()
    makes it flush as it goes idle after this statement. Older servers send statistics to
    the collector, and the caller polls instead.
    """
    if conn.info.server_version >= 150000:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_stat_force_next_flush()")
        conn.commit()


def _postgresql_sort(conn: Any) -> SortRun:
    before = _postgresql_temp_bytes(conn)
    started = time.perf_counter()
    rows = 0
    # A server-side cursor: the client holds one batch at a time, never the whole result.
    with conn.cursor(name="benchhub_sort") as cur:
        cur.itersize = FETCH_BATCH
        cur.execute(QUERY)
        while batch := cur.fetchmany(FETCH_BATCH):
            rows += len(batch)
    conn.commit()  # closes the cursor: its temporary files are removed and counted now
    seconds = time.perf_counter() - started
    _postgresql_flush(conn)
    written = _postgresql_temp_bytes(conn) - before
    if conn.info.server_version < 150000:
        # Before 15 the stats collector lags by up to 0.5 s; a sort that spilled shows up.
        deadline = time.monotonic() + STATS_WAIT_S
        while written <= 0 and time.monotonic() < deadline:
            time.sleep(0.1)
            written = _postgresql_temp_bytes(conn) - before
    return SortRun(seconds, rows, temp_bytes_written=written)


def _postgresql_explain(conn: Any) -> dict[str, int]:
    """Temp blocks the sort read and wrote, from EXPLAIN (ANALYZE, BUFFERS), in bytes."""
    with conn.cursor() as cur:
        cur.execute("SELECT current_setting('block_size')::int")
        block_size = cur.fetchone()[0]
        cur.execute(f"EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) {QUERY}")
        plan = cur.fetchone()[0]
    conn.commit()
    if isinstance(plan, str):
        plan = json.loads(plan)
    top = plan[0]["Plan"]
    return {
        "read": int(top.get("Temp Read Blocks", 0)) * block_size,
        "written": int(top.get("Temp Written Blocks", 0)) * block_size,
    }


# --- MySQL / MariaDB -----------------------------------------------------------------------


def _mysql_session(conn: Any, sort_memory: str) -> None:
    with conn.cursor() as cur:
        cur.execute("SET SESSION sort_buffer_size = %s", (int(sort_memory),))


def _mysql_counters(conn: Any) -> dict[str, int]:
    placeholders = ", ".join(["%s"] * len(MYSQL_COUNTERS))
    with conn.cursor() as cur:
        cur.execute(
            f"SHOW SESSION STATUS WHERE Variable_name IN ({placeholders})",
            MYSQL_COUNTERS,
        )
        return {name: int(value) for name, value in cur.fetchall()}


def _mysql_sort(conn: Any) -> SortRun:
    import pymysql.cursors

    before = _mysql_counters(conn)
    started = time.perf_counter()
    rows = 0
    # Unbuffered: rows stream to the client in batches, as a server-side cursor would.
    with conn.cursor(pymysql.cursors.SSCursor) as cur:
        cur.execute(QUERY)
        while batch := cur.fetchmany(FETCH_BATCH):
            rows += len(batch)
    seconds = time.perf_counter() - started
    after = _mysql_counters(conn)
    counters = {name: after[name] - before.get(name, 0) for name in after}
    return SortRun(seconds, rows, counters=counters)


# --- Firebird ------------------------------------------------------------------------------


def _firebird_sort(conn: Any, sort_files: Any) -> SortRun:
    from .. import firebird_db

    pages_before, page_size = firebird_db.page_reads(conn)
    conn.commit()  # MON$ tables keep one snapshot per transaction
    started = time.perf_counter()
    rows = 0
    with sort_files, conn.cursor() as cur:
        cur.execute(QUERY)
        while batch := cur.fetchmany(FETCH_BATCH):
            rows += len(batch)
        conn.commit()  # closes the cursor: the server releases its sort files
    seconds = time.perf_counter() - started
    pages = firebird_db.page_reads(conn)[0] - pages_before
    conn.commit()
    if not sort_files.readable:
        return SortRun(seconds, rows)
    read = firebird_db.sort_files_read(sort_files.server_read, pages, page_size)
    return SortRun(seconds, rows, temp_bytes_written=sort_files.written, temp_bytes_read=read)


def _firebird_note(info: Any, sort_files: Any) -> str:
    limit = info.settings.get(FIREBIRD_SORT_MEMORY, "unknown")
    if not sort_files.readable:
        return (
            f"Firebird sorts in memory up to TempCacheLimit ({limit}, server-wide) and writes "
            "the rest to fb_sort_* files; their bytes are read from the server's open files "
            "(/proc/<pid>/fd), which this user may not read, or the server is not on this "
            "machine: no byte measurement."
        )
    return (
        f"temp_bytes_written: the largest sizes of the server's fb_sort_* files (unlinked "
        f"when made, watched in /proc/<pid>/fd) per repetition; temp_bytes_read: the bytes "
        f"the server process read meanwhile (rchar of /proc/<pid>/io; Firebird counts no "
        f"reads of its sort files) less the database pages it read (MON$IO_STATS), so "
        f"reads of other databases on the same server at that time count too; sort memory "
        f"is TempCacheLimit ({limit}), server-wide in firebird.conf."
    )


# --- the benchmark -------------------------------------------------------------------------


def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    """In the benchmark's own schema (PostgreSQL) or tables, removed afterwards unless --keep."""
    if target.engine == "firebird" and dbc.option(options, "sort_memory", None) is not None:
        raise ValueError(
            "external-sort --sort-memory: Firebird has no sort memory per session; it sorts "
            "in TempCacheLimit, one setting of the whole server (firebird.conf), which the "
            "run records as sort_memory: leave --sort-memory out"
        )
    with dbc.own_objects(target, options, NAME, OWN_TABLES) as workspace:
        return _run(workspace, options, progress)


def _run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    dbc.refuse_pin(options, NAME)
    if target.engine == "firebird":
        return _run_firebird(target, options, progress)
    rows = int(dbc.option(options, "rows", 1_000_000))
    if dbc.option(options, "no_init", False):
        rows = dbc.kept_rows(target, NAME, TABLE)  # what is measured, not what --rows says
    repeat = int(dbc.option(options, "repeat", 3))
    sort_memory = str(dbc.option(options, "sort_memory", DEFAULT_SORT_MEMORY[target.engine]))
    postgresql = target.engine == "postgresql"
    started_at = dt.datetime.now(dt.UTC)
    if not dbc.option(options, "no_init", False):
        with working(progress, f"external-sort: building {rows:,} rows"):
            create_table(target, rows)

    progress.start(repeat + 1, "external-sort")
    checkpoints = dbc.Checkpoints(target)
    conn = dbc.connect(target, autocommit=not postgresql)
    try:
        if postgresql:
            _postgresql_session(conn, sort_memory)
            warm_up = _postgresql_explain(conn)  # the warm-up is also the source of reads
            _postgresql_flush(conn)  # so its temp files do not count in the first repetition
        else:
            _mysql_session(conn, sort_memory)
            warm_up = {}
            _mysql_sort(conn)
        progress.advance()
        runs = []
        for _ in range(repeat):
            checkpoints.before_point()
            runs.append(_postgresql_sort(conn) if postgresql else _mysql_sort(conn))
            progress.advance()
    finally:
        conn.close()
    progress.finish()
    _check_rows(runs, rows)

    setting = "work_mem" if postgresql else "sort_buffer_size"
    # The server's default stays in settings; the session's value is the sort_memory parameter.
    environment = dbc.environment(target, (setting, "tmpdir", "temp_tablespaces"))
    return BenchmarkResult(
        benchmark=NAME,
        benchmark_version=VERSION,
        parameters={"rows": rows, "sort_memory": sort_memory, "fetch": "all_rows"},
        repetitions=repeat,
        started_at=started_at,
        ended_at=dt.datetime.now(dt.UTC),
        measurements=_measurements(runs, warm_up),
        notes=[*_notes(runs, warm_up), checkpoints.note()],
        **environment,
    )


def _run_firebird(
    target: Target, options: argparse.Namespace, progress: Progress
) -> BenchmarkResult:
    from .. import db, firebird_db

    rows = int(dbc.option(options, "rows", 1_000_000))
    if dbc.option(options, "no_init", False):
        rows = dbc.kept_rows(target, NAME, TABLE)
    repeat = int(dbc.option(options, "repeat", 3))
    started_at = dt.datetime.now(dt.UTC)
    if not dbc.option(options, "no_init", False):
        with working(progress, f"external-sort: building {rows:,} rows"):
            create_table(target, rows)
    info = db.describe(target)
    sort_files = firebird_db.SortFiles(info.server_pid, firebird_db.temp_directories(info.settings))
    progress.start(repeat + 1, "external-sort")
    conn = dbc.connect(target, autocommit=False)
    try:
        _firebird_sort(conn, sort_files)  # the warm-up
        progress.advance()
        runs = []
        for _ in range(repeat):
            runs.append(_firebird_sort(conn, sort_files))
            progress.advance()
    finally:
        conn.close()
    progress.finish()
    _check_rows(runs, rows)
    environment = dbc.environment(target)
    sort_memory = str(info.settings.get(FIREBIRD_SORT_MEMORY, "unknown"))
    checkpoints = dbc.Checkpoints(target)  # none in SQL: the note says so
    return BenchmarkResult(
        benchmark=NAME,
        benchmark_version=VERSION,
        parameters={"rows": rows, "sort_memory": sort_memory, "fetch": "all_rows"},
        repetitions=repeat,
        started_at=started_at,
        ended_at=dt.datetime.now(dt.UTC),
        measurements=_measurements(runs, {}),
        notes=[_firebird_note(info, sort_files), checkpoints.note()],
        **environment,
    )


def _check_rows(runs: list[SortRun], rows: int) -> None:
    for found in runs:
        if found.rows != rows:
            raise RuntimeError(f"external-sort: fetched {found.rows} rows, the table has {rows}")


def _measurements(runs: list[SortRun], warm_up: dict[str, int]) -> list[Measurement]:
    seconds = [r.seconds for r in runs]
    found = [Measurement("seconds", dbc.median(seconds), "s", {}, seconds)]
    written = [float(r.temp_bytes_written) for r in runs if r.temp_bytes_written is not None]
    if written:
        found.append(Measurement("temp_bytes_written", dbc.median(written), "bytes", {}, written))
    if "read" in warm_up:
        read = float(warm_up["read"])
        found.append(Measurement("temp_bytes_read", read, "bytes", {}, [read]))
    reads = [float(r.temp_bytes_read) for r in runs if r.temp_bytes_read is not None]
    if reads:
        found.append(Measurement("temp_bytes_read", dbc.median(reads), "bytes", {}, reads))
    return found


def _notes(runs: list[SortRun], warm_up: dict[str, int]) -> list[str]:
    if warm_up:
        return [
            "temp_bytes_written: pg_stat_database.temp_bytes delta per repetition (sizes of "
            "the temporary files); temp_bytes_read: EXPLAIN (ANALYZE, BUFFERS) temp blocks "
            f"read in the warm-up, which also wrote {warm_up['written']} bytes of temp blocks."
        ]
    per_run = "; ".join(
        ", ".join(f"{name}={value}" for name, value in r.counters.items()) for r in runs
    )
    return ["MySQL/MariaDB expose no temporary-file byte counts; per repetition: " + per_run]
