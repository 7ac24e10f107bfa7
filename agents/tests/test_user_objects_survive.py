"""The agent never destroys what it did not make.

Every benchmark works in objects of its own — a schema on PostgreSQL, a database
beside the DSN's on MariaDB, a database file next to the DSN's on Firebird — each
carrying the agent's mark. A user's tables with the names the benchmarks use, and the
DSN's own Firebird database, survive a run (and a run stopped by Ctrl-C or killed with
SIGKILL: test_interrupts.py); an object with the agent's name but not its mark is
refused, untouched.
"""

from __future__ import annotations

import os

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _firebird as fb
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
# Every name a benchmark made in the DSN's own database before it had objects of its own.
OLD_NAMES = sorted({name for module in MODULES.values() for name in module.OWN_TABLES})


def run(name: str, target: Target, **extra):
    options = dbs.options(repeat=1, **{**SMALL[name], **extra})
    return MODULES[name].run(target, options, SilentProgress())


def execute(target: Target, *statements: str) -> list[tuple]:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            rows: list[tuple] = []
            for statement in statements:
                cur.execute(statement)
                if cur.description:
                    rows = list(cur.fetchall())
            return rows
    finally:
        conn.close()


def users_tables(target: Target) -> dict[str, int]:
    """A table of the user's under each old name, with a different number of rows each."""
    made = {}
    for count, name in enumerate(OLD_NAMES, start=3):
        execute(
            target,
            f"DROP TABLE IF EXISTS {name}",
            f"CREATE TABLE {name} (id int PRIMARY KEY, owner varchar(20))",
            *(f"INSERT INTO {name} VALUES ({i}, 'the user')" for i in range(count)),
        )
        made[name] = count
    return made


def counts(target: Target, names) -> dict[str, int]:
    return {name: execute(target, f"SELECT count(*) FROM {name}")[0][0] for name in names}


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_the_users_tables_with_the_benchmarks_names_survive_a_run(engine, name):
    target = getattr(dbs, engine)(f"survive_{name}")
    made = users_tables(target)

    result = run(name, target)

    assert result.measurements
    assert counts(target, made) == made


def test_the_dsns_firebird_database_survives_a_backup_and_is_not_what_was_backed_up():
    target = dbs.firebird("survive_backup")
    users = fb.FirebirdDatabase.from_target(target)
    fb.recreate(users, "the user's own")  # a database the user made, with their data
    fb.isql(
        users,
        "CREATE TABLE customer_orders (id integer, total numeric(10, 2));\nCOMMIT;\n"
        + "".join(f"INSERT INTO customer_orders VALUES ({i}, {i}.5);\n" for i in range(7))
        + "COMMIT;\n",
    )

    result = run("backup", target)

    assert fb.query_values(users, "SELECT count(*) FROM customer_orders") == ["7"]
    own = dbc.own_firebird_path(users.path, "backup")
    assert own != users.path and own.endswith("_benchhub_backup.fdb")
    assert not os.path.exists(own)  # removed after the run
    sizes = [m.value for m in result.measurements if m.metric == "database_bytes"]
    assert sizes  # the agent's dataset was measured, in its own file


@pytest.mark.parametrize("engine", ["postgresql", "mariadb", "firebird"])
def test_an_object_with_the_agents_name_but_not_its_mark_is_refused_and_left_alone(engine):
    target = getattr(dbs, engine)(f"foreign_{engine}")
    if engine == "postgresql":
        execute(target, "DROP SCHEMA IF EXISTS benchhub_external_sort CASCADE")
        execute(target, "CREATE SCHEMA benchhub_external_sort")
        execute(target, "CREATE TABLE benchhub_external_sort.mine (id int)")
        probe = "SELECT count(*) FROM benchhub_external_sort.mine"
    elif engine == "mariadb":
        own = dbc.own_database_name(target.database, "external-sort")
        execute(target, f"DROP DATABASE IF EXISTS `{own}`", f"CREATE DATABASE `{own}`")
        execute(target, f"CREATE TABLE `{own}`.mine (id int)")
        probe = f"SELECT count(*) FROM `{own}`.mine"
    else:
        own = fb.FirebirdDatabase.from_target(
            Target.parse(
                f"firebird://SYSDBA@localhost/"
                f"{dbc.own_firebird_path(fb.FirebirdDatabase.from_target(target).path, 'backup')}"
            )
        )
        fb.recreate(own, "someone else's")
    name = "backup" if engine == "firebird" else "external-sort"

    with pytest.raises(dbc.NotOurs, match="did not make"):
        run(name, target)

    if engine == "firebird":
        assert fb.exists(own) and fb.is_marked(own, "someone else's")
        fb.isql(own, "DROP DATABASE;\n")
    else:
        assert execute(target, probe) == [(0,)]


def own_database_exists(target: Target, benchmark: str) -> bool:
    own = dbc.own_database_name(target.database, benchmark)
    return bool(execute(target, f"SHOW DATABASES LIKE '{own}'"))


@pytest.mark.parametrize("engine", ["postgresql", "mariadb", "firebird"])
def test_backup_of_an_existing_database_only_reads_it(engine):
    target = getattr(dbs, engine)(f"existing_{engine}")
    if engine == "firebird":
        users = fb.FirebirdDatabase.from_target(target)
        fb.recreate(users, "the user's own")
        fb.isql(
            users,
            "CREATE TABLE customer_orders (id integer, note varchar(100));\nCOMMIT;\n"
            + "".join(
                f"INSERT INTO customer_orders VALUES ({i}, '{'x' * 90}');\n" for i in range(400)
            )
            + "COMMIT;\n",
        )
    else:
        made = users_tables(target)

    result = MODULES["backup"].run(
        target,
        dbs.options(repeat=1, protocols="tcp_loopback", source="existing", rows=None),
        SilentProgress(),
    )

    assert result.parameters["source"] == "existing" and "rows" not in result.parameters
    dumped = [m.value for m in result.measurements if m.metric == "backup_bytes"]
    assert dumped and dumped[0] > 0
    if engine == "firebird":
        assert fb.query_values(users, "SELECT count(*) FROM customer_orders") == ["400"]
        assert not fb.exists(
            fb.FirebirdDatabase.from_target(
                Target.parse(
                    f"firebird://SYSDBA@localhost/{dbc.own_firebird_path(users.path, 'backup')}"
                )
            )
        )
    else:
        assert counts(target, made) == made
        if engine == "postgresql":
            assert (
                execute(target, "SELECT 1 FROM pg_namespace WHERE nspname = 'benchhub_backup'")
                == []
            )
        else:
            assert not own_database_exists(target, "backup")


@pytest.mark.parametrize(
    ("engine", "name"),
    [
        ("postgresql", "tpcb"),
        ("mariadb", "external-sort"),
        ("mariadb", "backup"),
        ("firebird", "backup"),
    ],
)
def test_no_init_without_kept_data_is_refused_and_makes_nothing(engine, name):
    target = getattr(dbs, engine)(f"no_init_{engine}_{name}")
    dbc.remove_own_objects(target, name, MODULES[name].OWN_TABLES)

    with pytest.raises(dbc.NotKept, match=f"{name} --no-init: no data kept by an earlier run"):
        run(name, target, no_init=True)

    assert dbc._kept_tables_missing(target, name, MODULES[name].OWN_TABLES)
    if engine == "mariadb":
        assert not own_database_exists(target, name)
    elif engine == "postgresql":
        assert (
            execute(target, f"SELECT 1 FROM pg_namespace WHERE nspname = '{dbc.schema_name(name)}'")
            == []
        )
    run(name, target, keep=True)  # kept now: the next --no-init reuses it
    assert run(name, target, no_init=True).measurements
    dbc.remove_own_objects(target, name, MODULES[name].OWN_TABLES)
