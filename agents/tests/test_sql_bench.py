"""sql-bench against the real PostgreSQL and MariaDB."""

from __future__ import annotations

import math

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import sql_bench
from benchhub_agent.benchmarks.base import SilentProgress, Target


def run_sql_bench(target: Target, **values) -> sql_bench.BenchmarkResult:
    options = dbs.options(counts="small", operations=None, rows=2000, repeat=2)
    for key, value in values.items():
        setattr(options, key, value)
    return sql_bench.run(target, options, SilentProgress())


def seconds_by_operation(result: sql_bench.BenchmarkResult) -> dict[str, sql_bench.Measurement]:
    assert {m.metric for m in result.measurements} == {"seconds"}
    assert {m.unit for m in result.measurements} == {"s"}
    return {m.parameters["operation"]: m for m in result.measurements}


def assert_totals_add_up(found: dict[str, sql_bench.Measurement], repetitions: int) -> None:
    totals = found.pop("TOTALS")
    assert totals.parameters["iterations"] == sum(
        m.parameters["iterations"] for m in found.values()
    )
    for repetition in range(repetitions):
        each = sum(m.samples[repetition] for m in found.values())
        assert math.isclose(totals.samples[repetition], each, rel_tol=1e-9)
    assert min(totals.samples) <= totals.value <= max(totals.samples)


def table_exists(target: Target, table: str) -> bool:
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = %s"
                " AND table_schema = "
                + ("current_schema()" if target.engine == "postgresql" else "DATABASE()"),
                (table,),
            )
            return cur.fetchone()[0] > 0
    finally:
        conn.close()


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_every_operation_is_timed_and_totals_add_up(engine):
    target = getattr(dbs, engine)(f"sqlbench_{engine}")

    result = run_sql_bench(target)

    found = seconds_by_operation(result)
    assert set(found) == {*sql_bench.OPERATION_NAMES, "TOTALS"}
    for op in sql_bench.OPERATIONS:
        measurement = found[op.name]
        assert measurement.parameters == {"operation": op.name, "iterations": op.small}
        assert len(measurement.samples) == 2
        assert all(s > 0 for s in measurement.samples)
    assert_totals_add_up(found, 2)
    assert result.parameters == {"counts": "small", "rows": 2000, "operations": "all"}
    assert result.client["protocol"] == "tcp_loopback"
    assert result.database["version_string"]
    assert dbs.document_errors(result) == []
    # The agent is the client: each operation's share of it noted, the busiest on the run.
    (note,) = [n for n in result.notes if n.startswith("load engine CPU")]
    listed = note.split(": ", 1)[1].split("; ")
    shares = dict(item.removesuffix(" %").rsplit(" ", 1) for item in listed)
    assert set(shares) == set(sql_bench.OPERATION_NAMES)
    assert 0 < result.load_engine_cpu <= 100
    assert round(result.load_engine_cpu) == max(int(v) for v in shares.values())
    # The suite leaves nothing behind in the user's database.
    assert not table_exists(target, "bench1")
    assert not table_exists(target, "bench_many0")


def test_seed_counts_are_the_articles():
    target = dbs.postgresql("sqlbench_seed_counts")

    result = run_sql_bench(target, counts="seed", operations="create_index,drop_index,delete_big")

    found = seconds_by_operation(result)
    assert {name: m.parameters["iterations"] for name, m in found.items()} == {
        "TOTALS": 17,
        "create_index": 8,
        "drop_index": 8,
        "delete_big": 1,
    }
    assert result.parameters["operations"] == "create_index,delete_big,drop_index"


def test_an_operation_runs_alone_with_what_it_needs():
    target = dbs.mariadb("sqlbench_alone")

    result = run_sql_bench(target, operations="drop_table_when_MANY_tables", repeat=1)

    found = seconds_by_operation(result)
    assert found["drop_table_when_MANY_tables"].value > 0


def test_an_unknown_operation_is_named():
    with pytest.raises(ValueError, match="select_everything"):
        sql_bench.chosen_operations("select_1_row,select_everything")


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_a_run_killed_inside_create_and_drop_leaves_nothing_the_next_run_trips_on(engine):
    # kill -9 between the CREATE and the DROP of create+drop leaves bench_cd in the
    # agent's own place, which the next run reuses.
    target = getattr(dbs, engine)(f"sqlbench_cd_{engine}")
    own = dbc.in_own_schema(target, sql_bench.NAME)
    conn = dbc.connect(own)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE bench_cd (i int NOT NULL, s char(10))")
        conn.commit()
    finally:
        conn.close()

    result = run_sql_bench(target, operations="create+drop", repeat=1)

    assert seconds_by_operation(result)["create+drop"].value >= 0
    assert not table_exists(target, "bench_cd")
