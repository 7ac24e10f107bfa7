"""Each benchmark works in its own schema or tables, leaves nothing behind unless --keep,
and checkpoints before each measured point when the role may."""

from __future__ import annotations

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import backup, external_sort, select_update, sql_bench, tpcb
from benchhub_agent.benchmarks.base import SilentProgress, Target

SMALL = {
    "select-update": dict(clients=[1], transactions=50, locking="for_update", processes=None),
    "tpcb": dict(clients=[1], duration=0.3, warmup=0.0, scale=1, load_engine="agent"),
    "sql-bench": dict(counts="small", operations="insert,select_range,create+drop", rows=100),
    "backup": dict(rows=500, protocols="tcp_loopback"),
    "external-sort": dict(rows=500, sort_memory=None),
}
MODULES = {m.NAME: m for m in (select_update, tpcb, sql_bench, backup, external_sort)}


def run(name: str, target: Target, **extra):
    options = dbs.options(repeat=2, **{**SMALL[name], **extra})
    return MODULES[name].run(target, options, SilentProgress())


def postgresql_schemas(target: Target) -> set[str]:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'benchhub%%'")
            return {row[0] for row in cur.fetchall()}
    finally:
        conn.close()


def tables(target: Target) -> set[str]:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                cur.execute(
                    "SELECT schemaname || '.' || tablename FROM pg_tables"
                    " WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
                )
            else:
                cur.execute(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = DATABASE()"
                )
            return {row[0] for row in cur.fetchall()}
    finally:
        conn.close()  # fmt: skip


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_postgresql_run_leaves_no_schema_and_no_table_behind(name):
    target = dbs.postgresql(f"clean_{name}")
    dbc.remove_own_objects(target, name, MODULES[name].OWN_TABLES)  # an earlier run's --keep
    before = tables(target)
    result = run(name, target)
    assert result.measurements
    assert postgresql_schemas(target) == set()
    assert tables(target) == before


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_mariadb_run_leaves_no_table_behind(name):
    target = dbs.mariadb(f"clean_{name}")
    dbc.remove_own_objects(target, name, MODULES[name].OWN_TABLES)  # an earlier run's --keep
    before = tables(target)
    run(name, target)
    assert tables(target) == before


def test_keep_leaves_the_benchmarks_own_schema_for_a_later_no_init():
    target = dbs.postgresql("clean_keep")
    dbc.remove_own_objects(target, "external-sort", ())
    run("external-sort", target, keep=True)
    assert postgresql_schemas(target) == {"benchhub_external_sort"}
    assert "benchhub_external_sort.sort_rows" in tables(target)
    again = run("external-sort", target, no_init=True)  # reuses it, and keeps it
    assert again.parameters["rows"] == 500
    assert postgresql_schemas(target) == {"benchhub_external_sort"}
    run("external-sort", target)  # neither: removed
    assert postgresql_schemas(target) == set()


def foreign_table(target: Target, rows: int) -> None:
    """Someone else's table in the same database, much bigger than the benchmark's."""
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS not_ours")
            cur.execute("CREATE TABLE not_ours (id int PRIMARY KEY, pad char(200))")
            if target.engine == "postgresql":
                cur.execute(
                    "INSERT INTO not_ours SELECT g, 'x' FROM generate_series(1, %s) g", (rows,)
                )
            else:
                numbers = dbc.mysql_numbers(rows)
                cur.execute(f"INSERT INTO not_ours SELECT n, 'x' FROM {numbers}")
    finally:
        conn.close()


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_backup_measures_only_its_own_data(engine):
    target = getattr(dbs, engine)(f"backup_own_{engine}")
    foreign_table(target, 20_000)  # ~4.5 MB, against the benchmark's 500 rows (~100 kB)
    result = run("backup", target)
    points = dbs.by_point(result)
    size = next(m for (metric, _), m in points.items() if metric == "database_bytes")
    dumped = next(m for (metric, _), m in points.items() if metric == "backup_bytes")
    assert size.value < 1_000_000
    assert dumped.value < 500_000  # the foreign table alone would dump to ~4 MB
    assert "not_ours" in {t.split(".")[-1] for t in tables(target)}  # left as it was


def test_a_superuser_checkpoints_before_every_measured_point():
    result = run("select-update", dbs.postgresql("checkpoint_su"), clients=[1, 2])
    assert "checkpoint: CHECKPOINT before each of the 4 measured points." in result.notes


def test_mariadb_flushes_tables_before_every_measured_point():
    result = run("external-sort", dbs.mariadb("checkpoint_maria"))
    assert "checkpoint: FLUSH TABLES before each of the 2 measured points." in result.notes


def test_a_role_that_may_not_checkpoint_runs_and_says_so():
    import psycopg

    role = "bh_agent_no_checkpoint"
    database = dbs.database_name("checkpoint_role")
    with psycopg.connect(f"{dbs.PG_SERVER}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            conn.execute(f"CREATE ROLE {role} LOGIN")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{database}" OWNER {role}')
    target = Target.parse(f"postgresql://{role}@127.0.0.1:5432/{database}")
    result = run("external-sort", target)
    (note,) = [n for n in result.notes if n.startswith("checkpoint:")]
    assert note.startswith("checkpoint: none before the measured points (CHECKPOINT: ")
    assert "pg_checkpoint" in note  # what the role lacks


def test_firebird_has_no_checkpoint_statement_and_the_note_says_so():
    checkpoints = dbc.Checkpoints(dbs.firebird("checkpoint_fb"))
    checkpoints.before_point()
    assert checkpoints.note() == "checkpoint: not applicable (firebird has no statement for it)."
