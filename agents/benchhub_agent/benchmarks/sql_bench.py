"""The named operations of MySQL's sql-bench, timed one by one (seed 002).

Seed 002 publishes a table of seconds per operation with the iteration count of each,
and a TOTALS row. The operations here keep sql-bench's names and what each one exercises
(single-row lookups, range scans, aggregates on a key, DDL in a loop, …) on tables of
the same shape, written in SQL that PostgreSQL and MySQL/MariaDB both accept, so the
two engines run the same statements. ``--counts seed`` uses the article's iteration
counts (about 900,000 statements); the default ``small`` profile runs in seconds.

Every repetition starts from freshly built tables (untimed) and runs the chosen
operations in catalog order; TOTALS is, per repetition, the sum of the operations'
seconds, and its value is the median of those sums.

Over 500 lines because it carries the 33 operations of the original suite, each a
small function; splitting them by kind would scatter one table of operations.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _connections as dbc
from ._engine_cpu import ThreadMeter, share
from .base import BenchmarkResult, Measurement, Progress, Target

NAME = "sql-bench"
VERSION = "1"
ENGINES = frozenset({"postgresql", "mysql", "mariadb"})
# One client; each operation runs its iteration count (--counts).
LOAD_OPTIONS: frozenset[str] = frozenset()

TOTALS = "TOTALS"
MANY_FIELDS = 50
# MySQL/MariaDB: dropped after the run even when it fails (the suite drops them itself,
# and its bench_many<N> tables, when it completes).
OWN_TABLES = (
    "bench1", "bench2", "bench_big", "bench_insert", "one_row", "two_rows", "bench_alter",
    "many_fields", "bench_cd",
)  # fmt: skip
BIG_STRING = 10_000


@dataclass
class Context:
    """What an operation works with: the open connection and the run's parameters."""

    target: Target
    conn: Any
    rows: int

    def execute(self, sql: str, params: tuple | None = None) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []

    @property
    def mysql(self) -> bool:
        return self.target.engine in dbc.MYSQL_FAMILY


@dataclass(frozen=True)
class Operation:
    name: str
    small: int  # iterations of the default profile
    seed: int  # iterations in seed 002's table
    body: Callable[[Context, int], None]
    prepare: Callable[[Context, int], None] | None = None  # untimed, before the body


# --- tables --------------------------------------------------------------------------------


def _table_suffix(ctx: Context) -> str:
    return " ENGINE=InnoDB" if ctx.mysql else ""


def build_tables(ctx: Context) -> None:
    """Drop what a previous run left (a run killed inside create+drop leaves bench_cd)
    and build the tables the operations read."""
    for table in OWN_TABLES:
        ctx.execute(f"DROP TABLE IF EXISTS {table}")
    _drop_many_tables(ctx)
    suffix = _table_suffix(ctx)
    for table in ("bench1", "bench_big", "bench_insert"):
        ctx.execute(
            f"CREATE TABLE {table} (id int NOT NULL, id2 int NOT NULL, id3 int NOT NULL,"
            f" dummy1 char(30), PRIMARY KEY (id, id2)){suffix}"
        )
        ctx.execute(f"CREATE INDEX {table}_id3 ON {table} (id3)")
    _fill_bench(ctx, "bench1", ctx.rows)
    _fill_bench(ctx, "bench_big", ctx.rows)
    ctx.execute(f"CREATE TABLE bench2 (id int NOT NULL PRIMARY KEY, name varchar(30)){suffix}")
    numbers = _numbers(ctx, 1000)
    ctx.execute(f"INSERT INTO bench2 SELECT n, CONCAT('name ', n) FROM {numbers}")  # noqa: S608
    for table, count in (("one_row", 1), ("two_rows", 2)):
        ctx.execute(
            f"CREATE TABLE {table} (a int NOT NULL, b int, c int, d char(10),"
            f" s varchar({BIG_STRING})){suffix}"
        )
        for a in range(1, count + 1):
            ctx.execute(
                f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s)",  # noqa: S608 - constant
                (a, a * 2, a * 3, f"row {a}", "x" * BIG_STRING),
            )
    ctx.execute(f"CREATE TABLE bench_alter (id int NOT NULL PRIMARY KEY){suffix}")
    columns = ", ".join(f"f{i} int" for i in range(1, MANY_FIELDS + 1))
    ctx.execute(f"CREATE TABLE many_fields (id int NOT NULL PRIMARY KEY, {columns}){suffix}")
    _analyze(ctx, ("bench1", "bench2", "bench_big"))


def _numbers(ctx: Context, count: int) -> str:
    if ctx.mysql:
        return dbc.mysql_numbers(count)
    return f"generate_series(1, {int(count)}) AS numbers(n)"


def _fill_bench(ctx: Context, table: str, rows: int) -> None:
    # id3 has 1,000 distinct values: the "key" that count_on_key and min_max_on_key hit.
    ctx.execute(
        f"INSERT INTO {table} SELECT n, MOD(n, 100), MOD(n, 1000),"  # noqa: S608 - constants
        f" CONCAT('ABCDEFGHIJ', n) FROM {_numbers(ctx, rows)}"
    )


def _analyze(ctx: Context, tables: tuple[str, ...]) -> None:
    if ctx.mysql:
        ctx.execute(f"ANALYZE TABLE {', '.join(tables)}")
    else:
        ctx.execute(f"ANALYZE {', '.join(tables)}")


def _drop_many_tables(ctx: Context) -> None:
    if ctx.mysql:
        names = ctx.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = DATABASE() AND table_name LIKE 'bench_many%%'"
        )
    else:
        names = ctx.execute(
            "SELECT tablename FROM pg_tables"
            " WHERE schemaname = current_schema() AND tablename LIKE 'bench_many%%'"
        )
    for (name,) in names:
        ctx.execute(f"DROP TABLE {name}")


# --- operations ----------------------------------------------------------------------------


def _repeat_query(sql: str, params: Callable[[Context, int], tuple] | None = None) -> Callable:
    def body(ctx: Context, iterations: int) -> None:
        with ctx.conn.cursor() as cur:
            for i in range(iterations):
                cur.execute(sql, params(ctx, i) if params else None)
                cur.fetchall()

    return body


def _key(ctx: Context, i: int) -> tuple:
    return ((i * 7919) % 1000,)


def _range(ctx: Context, i: int) -> tuple:
    width = max(ctx.rows // 10, 1)
    start = (i * 7919) % max(ctx.rows - width, 1) + 1
    return (start, start + width - 1)


def _join_range(ctx: Context, i: int) -> tuple:
    start = (i * 7919) % max(ctx.rows - 1000, 1) + 1
    return (start, start + 999)


def _insert(ctx: Context, iterations: int) -> None:
    with ctx.conn.cursor() as cur:
        for i in range(iterations):
            cur.execute(
                "INSERT INTO bench_insert VALUES (%s, %s, %s, %s)",
                (i // 100, i % 100, i % 1000, f"ABCDEFGHIJ{i}"),
            )


def _connect(then: str | None) -> Callable[[Context, int], None]:
    def body(ctx: Context, iterations: int) -> None:
        for _ in range(iterations):
            conn = dbc.connect(ctx.target)
            if then:
                with conn.cursor() as cur:
                    cur.execute(then)
                    cur.fetchall()
            conn.close()

    return body


def _create_drop(with_key: bool) -> Callable[[Context, int], None]:
    def body(ctx: Context, iterations: int) -> None:
        suffix = _table_suffix(ctx)
        key = ", PRIMARY KEY (i)" if with_key else ""
        for _ in range(iterations):
            ctx.execute(f"CREATE TABLE bench_cd (i int NOT NULL, s char(10){key}){suffix}")
            if with_key:
                ctx.execute("CREATE INDEX bench_cd_s ON bench_cd (s)")
            ctx.execute("DROP TABLE bench_cd")

    return body


def _create_many(ctx: Context, iterations: int) -> None:
    suffix = _table_suffix(ctx)
    for i in range(iterations):
        ctx.execute(f"CREATE TABLE bench_many{i} (i int NOT NULL, s char(10)){suffix}")


def _ensure_many(ctx: Context, iterations: int) -> None:
    schema = "DATABASE()" if ctx.mysql else "current_schema()"
    existing = ctx.execute(
        "SELECT count(*) FROM information_schema.tables"  # noqa: S608 - no user input
        f" WHERE table_schema = {schema} AND table_name LIKE 'bench_many%%'"
    )[0][0]
    if existing < iterations:
        _drop_many_tables(ctx)
        _create_many(ctx, iterations)


def _select_group_many(ctx: Context, iterations: int) -> None:
    for i in range(iterations):
        ctx.execute(f"SELECT i, count(*) FROM bench_many{i} GROUP BY i")  # noqa: S608


def _drop_many(ctx: Context, iterations: int) -> None:
    for i in range(iterations):
        ctx.execute(f"DROP TABLE bench_many{i}")


def _create_index(ctx: Context, iterations: int) -> None:
    for i in range(iterations):
        ctx.execute(f"CREATE INDEX bench1_ix{i} ON bench1 (id2, id3, id)")


def _ensure_indexes(ctx: Context, iterations: int) -> None:
    for i in range(iterations):
        _drop_index_if_exists(ctx, f"bench1_ix{i}")
    _create_index(ctx, iterations)


def _drop_index_if_exists(ctx: Context, name: str) -> None:
    if ctx.mysql:
        found = ctx.execute(
            "SELECT 1 FROM information_schema.statistics WHERE table_schema = DATABASE()"
            " AND table_name = 'bench1' AND index_name = %s",
            (name,),
        )
        if found:
            ctx.execute(f"DROP INDEX {name} ON bench1")
    else:
        ctx.execute(f"DROP INDEX IF EXISTS {name}")


def _drop_index(ctx: Context, iterations: int) -> None:
    for i in range(iterations):
        if ctx.mysql:
            ctx.execute(f"DROP INDEX bench1_ix{i} ON bench1")
        else:
            ctx.execute(f"DROP INDEX bench1_ix{i}")


def _alter_add(ctx: Context, iterations: int) -> None:
    for i in range(iterations):
        ctx.execute(f"ALTER TABLE bench_alter ADD COLUMN added{i} int")


def _ensure_added_columns(ctx: Context, iterations: int) -> None:
    ctx.execute("DROP TABLE bench_alter")
    ctx.execute(f"CREATE TABLE bench_alter (id int NOT NULL PRIMARY KEY){_table_suffix(ctx)}")
    _alter_add(ctx, iterations)


def _alter_drop(ctx: Context, iterations: int) -> None:
    for i in range(iterations):
        ctx.execute(f"ALTER TABLE bench_alter DROP COLUMN added{i}")


def _insert_many_fields(ctx: Context, iterations: int) -> None:
    placeholders = ", ".join(["%s"] * (MANY_FIELDS + 1))
    sql = f"INSERT INTO many_fields VALUES ({placeholders})"  # noqa: S608 - placeholders only
    with ctx.conn.cursor() as cur:
        for i in range(iterations):
            cur.execute(sql, (i, *range(i, i + MANY_FIELDS)))


def _ensure_many_fields(ctx: Context, iterations: int) -> None:
    ctx.execute("DELETE FROM many_fields")
    _insert_many_fields(ctx, iterations)


def _delete_big(ctx: Context, iterations: int) -> None:
    for _ in range(iterations):
        ctx.execute("DELETE FROM bench_big")


def _refill_big(ctx: Context, iterations: int) -> None:
    ctx.execute("DELETE FROM bench_big")
    _fill_bench(ctx, "bench_big", ctx.rows)


OPERATIONS: tuple[Operation, ...] = (
    Operation("alter_table_add", 10, 100, _alter_add),
    Operation("alter_table_drop", 9, 91, _alter_drop, _ensure_added_columns),
    Operation("connect", 20, 10000, _connect(None)),
    Operation("connect+select_1_row", 20, 10000, _connect("SELECT a, b, c, d FROM one_row")),
    Operation("connect+select_simple", 20, 10000, _connect("SELECT 1")),
    Operation("count_distinct", 20, 1000, _repeat_query("SELECT count(DISTINCT id3) FROM bench1")),
    Operation(
        "count_distinct_2",
        20,
        1000,
        _repeat_query("SELECT count(*) FROM (SELECT DISTINCT id2, id3 FROM bench1) AS d"),
    ),
    Operation(
        "count_distinct_big", 5, 100, _repeat_query("SELECT count(DISTINCT dummy1) FROM bench1")
    ),
    Operation(
        "count_distinct_group_on_key",
        20,
        1000,
        _repeat_query("SELECT id3, count(DISTINCT id2) FROM bench1 GROUP BY id3"),
    ),
    Operation(
        "count_group_on_key_parts",
        20,
        1000,
        _repeat_query("SELECT id2, count(*) FROM bench1 GROUP BY id2"),
    ),
    Operation(
        "count_on_key",
        200,
        50000,
        _repeat_query("SELECT count(*) FROM bench1 WHERE id3 = %s", _key),
    ),
    Operation("create+drop", 20, 10000, _create_drop(with_key=False)),
    Operation("create_MANY_tables", 20, 10000, _create_many),
    Operation("create_index", 4, 8, _create_index),
    Operation("create_key+drop", 20, 10000, _create_drop(with_key=True)),
    Operation("delete_big", 1, 1, _delete_big, _refill_big),
    Operation("drop_index", 4, 8, _drop_index, _ensure_indexes),
    Operation("select_group_when_MANY_tables", 20, 10000, _select_group_many, _ensure_many),
    Operation("drop_table_when_MANY_tables", 20, 10000, _drop_many, _ensure_many),
    Operation("insert", 1000, 50768, _insert),
    Operation("insert_many_fields", 100, 2000, _insert_many_fields),
    Operation(
        "min_max_on_key",
        200,
        70000,
        _repeat_query("SELECT min(id), max(id) FROM bench1 WHERE id3 = %s", _key),
    ),
    Operation("select_1_row", 1000, 100000, _repeat_query("SELECT a, b, c, d FROM one_row")),
    Operation("select_2_rows", 1000, 100000, _repeat_query("SELECT a, b, c, d FROM two_rows")),
    Operation("select_big_str", 100, 10000, _repeat_query("SELECT s FROM one_row")),
    Operation(
        "select_column+column", 1000, 100000, _repeat_query("SELECT a + b, c + a FROM one_row")
    ),
    Operation("select_distinct", 20, 800, _repeat_query("SELECT DISTINCT id3 FROM bench1")),
    Operation(
        "select_group", 20, 2800, _repeat_query("SELECT id3, count(*) FROM bench1 GROUP BY id3")
    ),
    Operation(
        "select_join",
        10,
        100,
        _repeat_query(
            "SELECT a.id, b.name FROM bench1 a JOIN bench2 b ON b.id = a.id3"
            " WHERE a.id BETWEEN %s AND %s",
            _join_range,
        ),
    ),
    Operation(
        "select_many_fields",
        100,
        2000,
        _repeat_query("SELECT * FROM many_fields WHERE id = %s", lambda ctx, i: (i,)),
        _ensure_many_fields,
    ),
    Operation(
        "select_range",
        20,
        410,
        _repeat_query("SELECT * FROM bench1 WHERE id BETWEEN %s AND %s ORDER BY id", _range),
    ),
    Operation("select_simple", 1000, 100000, _repeat_query("SELECT 1")),
    Operation(
        "select_simple_join",
        50,
        500,
        _repeat_query("SELECT a.a, b.b FROM one_row a JOIN two_rows b ON b.a = a.a"),
    ),
)
OPERATION_NAMES = tuple(op.name for op in OPERATIONS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--counts",
        choices=("small", "seed"),
        default="small",
        help="iteration counts: small (seconds) or seed 002's (sql-bench's own, ~900k statements)",
    )
    parser.add_argument(
        "--operations",
        default=None,
        help=f"comma-separated subset of: {', '.join(OPERATION_NAMES)} (default: all)",
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=10_000,
        help="rows of the table the select operations read (default 10,000)",
    )


def chosen_operations(spec: str | None) -> list[Operation]:
    if not spec:
        return list(OPERATIONS)
    wanted = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(OPERATION_NAMES))
    if unknown:
        raise ValueError(f"--operations: unknown {', '.join(unknown)}")
    return [op for op in OPERATIONS if op.name in wanted]


def run_suite(
    ctx: Context,
    operations: list[Operation],
    counts: dict[str, int],
    busy: dict[str, float] | None = None,
) -> list[float]:
    """Build fresh tables, then time each operation; its seconds, in ``operations`` order.
    ``busy`` gains each operation's CPU share of the agent (the client), the highest seen."""
    build_tables(ctx)
    seconds = []
    for op in operations:
        if op.prepare:
            op.prepare(ctx, counts[op.name])
        meter = ThreadMeter()
        started = time.perf_counter()
        op.body(ctx, counts[op.name])
        seconds.append(time.perf_counter() - started)
        if busy is not None:
            busy[op.name] = max(busy.get(op.name, 0.0), share(*meter.stop()))
    return seconds


def run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    """In the benchmark's own schema (PostgreSQL) or tables, removed afterwards unless --keep."""
    with dbc.own_objects(target, options, NAME, OWN_TABLES) as workspace:
        return _run(workspace, options, progress)


def _run(target: Target, options: argparse.Namespace, progress: Progress) -> BenchmarkResult:
    dbc.refuse_pin(options, NAME)
    profile = dbc.option(options, "counts", "small")
    operations = chosen_operations(dbc.option(options, "operations", None))
    rows = int(dbc.option(options, "rows", 10_000))
    repeat = int(dbc.option(options, "repeat", 3))
    counts = {op.name: op.seed if profile == "seed" else op.small for op in operations}
    started_at = dt.datetime.now(dt.UTC)

    checkpoints = dbc.Checkpoints(target)
    conn = dbc.connect(target)
    try:
        ctx = Context(target, conn, rows)
        progress.start(repeat + 1, "sql-bench")
        # Warm-up: a tenth of every count, so caches, catalogs and plans are primed.
        run_suite(ctx, operations, {name: max(1, n // 10) for name, n in counts.items()})
        progress.advance()
        per_repetition = []
        busy: dict[str, float] = {}
        for _ in range(repeat):
            checkpoints.before_point()
            per_repetition.append(run_suite(ctx, operations, counts, busy))
            progress.advance()
        _clean_up(ctx)
    finally:
        conn.close()
    progress.finish()

    return BenchmarkResult(
        benchmark=NAME,
        benchmark_version=VERSION,
        parameters={
            "counts": profile,
            "rows": rows,
            "operations": "all"
            if len(operations) == len(OPERATIONS)
            else ",".join(op.name for op in operations),
        },
        repetitions=repeat,
        started_at=started_at,
        ended_at=dt.datetime.now(dt.UTC),
        measurements=_measurements(operations, counts, per_repetition),
        notes=[
            "TOTALS: per repetition the sum of the operations' seconds; value = median.",
            checkpoints.note(),
            "load engine CPU (the agent's one client, on a CPU or waiting for one): "
            + "; ".join(f"{name} {cpu:.0f} %" for name, cpu in busy.items()),
        ],
        load_engine_cpu=max(busy.values()),
        **dbc.environment(target, ("default_storage_engine", "autocommit")),
    )


def _measurements(
    operations: list[Operation], counts: dict[str, int], per_repetition: list[list[float]]
) -> list[Measurement]:
    totals = [sum(seconds) for seconds in per_repetition]
    found = [_seconds(TOTALS, sum(counts.values()), totals)]
    for index, op in enumerate(operations):
        samples = [seconds[index] for seconds in per_repetition]
        found.append(_seconds(op.name, counts[op.name], samples))
    return found


def _seconds(operation: str, iterations: int, samples: list[float]) -> Measurement:
    return Measurement(
        metric="seconds",
        value=dbc.median(samples),
        unit="s",
        parameters={"operation": operation, "iterations": iterations},
        samples=samples,
    )


def _clean_up(ctx: Context) -> None:
    _drop_many_tables(ctx)
    for table in (
        "bench1",
        "bench2",
        "bench_big",
        "bench_insert",
        "one_row",
        "two_rows",
        "bench_alter",
        "many_fields",
    ):
        ctx.execute(f"DROP TABLE IF EXISTS {table}")
