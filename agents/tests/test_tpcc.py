"""tpcc against the real PostgreSQL and MariaDB: the run, its consistency check, its objects.

Each run loads one warehouse (about 30 s on a busy 2-core machine), so the tests that
need data share it where they can: a run with --keep, then the checks of the kept data,
then a --no-init run that removes it.
"""

from __future__ import annotations

import json
import random

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _tpcc_load as load
from benchhub_agent.benchmarks import tpcc
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.replay import CannotReplay, replay
from contract_server import ContractServer
from test_cli import agent
from test_like import published_run, serve

TOTALS = {
    "nopm",
    "tpm",
    "throughput",
    "latency_mean",
    "latency_p95",
    "latency_p99",
    "aborts",
    "retries",
    "rollbacks",
}
TYPES = {"new_order", "payment", "order_status", "delivery", "stock_level"}


def run_tpcc(target: Target, **values) -> tpcc.BenchmarkResult:
    options = dbs.options(
        clients=[1, 2], duration=1.5, warmup=0.3, repeat=1, warehouses=1, seed=7, keep=False
    )
    for key, value in values.items():
        setattr(options, key, value)
    return tpcc.run(target, options, SilentProgress())


def own_objects_left(target: Target) -> list[str]:
    """The schema (PostgreSQL) or database (MariaDB) the run works in, if still there."""
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            if target.engine == "postgresql":
                cur.execute("SELECT nspname FROM pg_namespace WHERE nspname = 'benchhub_tpcc'")
            else:
                name = dbc.own_database_name(target.database, "tpcc")
                cur.execute("SHOW DATABASES LIKE %s", (name,))
            return [row[0] for row in cur.fetchall()]
    finally:
        conn.close()


def assert_sensible(result: tpcc.BenchmarkResult, clients: list[int]) -> None:
    points = dbs.by_point(result)
    units = dbs.catalog_units("tpcc")
    for n in clients:
        totals = {metric for metric, params in points if params == (("clients", n),)}
        assert totals == TOTALS
        per_type = {
            dict(params)["transaction"]
            for metric, params in points
            if metric == "latency_p95" and dict(params).get("clients") == n and len(params) == 2
        }
        assert per_type == TYPES
        get = {metric: points[(metric, (("clients", n),))] for metric in TOTALS}
        for metric, measurement in get.items():
            assert measurement.unit == units[metric]
        assert get["nopm"].value > 0
        # New-Orders are 45 % of the mix: NOPM is a share of TPM, and TPM is 60 x tx/s.
        assert get["nopm"].value < get["tpm"].value
        assert get["tpm"].value == pytest.approx(get["throughput"].value * 60)
        assert 0 < get["latency_mean"].value <= get["latency_p99"].value * 1.02
        assert get["aborts"].value == 0
        new_order = points[("latency_p95", (("clients", n), ("transaction", "new_order")))]
        assert new_order.value > 0
    assert result.parameters["consistency"] == "passed"
    assert "conditions 1-4" in "\n".join(result.notes)
    assert "deviations from TPC-C" in "\n".join(result.notes)
    assert result.load_engine_cpu is not None and result.load_engine_cpu > 0
    assert dbs.document_errors(result) == []


# --- a run per engine, its kept data, and --no-init ---------------------------------------


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_a_run_passes_the_consistency_check_and_no_init_reuses_the_kept_data(engine):
    target = getattr(dbs, engine)(f"tpcc_run_{engine}")
    result = run_tpcc(target, keep=True)
    assert_sensible(result, [1, 2])
    # The terminals' driver: MariaDB's through its C client library, which is installed.
    assert result.client["driver"] == {"postgresql": "psycopg", "mariadb": "mysqlclient"}[engine]
    assert "one call of a" in "\n".join(result.notes)
    assert result.parameters["warehouses"] == 1 and result.parameters["seed"] == 7
    workspace = dbc.in_own_schema(target, tpcc.NAME)
    assert load.kept_state(workspace)[0] == 1
    assert own_objects_left(target)

    with pytest.raises(dbc.NotKept, match="the kept data has 1 warehouse;"):
        run_tpcc(target, no_init=True, warehouses=3)
    with pytest.raises(dbc.NotKept, match="the kept data was loaded from seed 7;"):
        run_tpcc(target, no_init=True, warehouses=None, seed=8)
    assert own_objects_left(target)  # a refused --no-init leaves the kept data alone

    again = run_tpcc(target, no_init=True, warehouses=None, seed=None, clients=[2], keep=False)
    assert_sensible(again, [2])
    assert again.parameters["warehouses"] == 1 and again.parameters["seed"] == 7
    assert "kept by an earlier run" in "\n".join(again.notes)
    # --no-init keeps what it found (it was kept for it); removing is a plain run's job.
    assert own_objects_left(target)
    dbc.remove_own_objects(target, tpcc.NAME, tpcc.OWN_TABLES)
    assert own_objects_left(target) == []


def test_a_plain_run_leaves_nothing_behind_and_the_users_orders_table_alone_on_mariadb():
    target = dbs.mariadb("tpcc_clean")
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            # A user's own table with a TPC-C name, in the database --dsn names.
            cur.execute("CREATE TABLE orders (o_id int, customer varchar(20))")
            cur.execute("INSERT INTO orders VALUES (2903, 'ada'), (17, 'grace')")
        run_tpcc(target, clients=[1], duration=1.0)
        assert own_objects_left(target) == []
        with conn.cursor() as cur:
            cur.execute("SHOW TABLES")
            assert [row[0] for row in cur.fetchall()] == ["orders"]
            cur.execute("SELECT o_id, customer FROM orders ORDER BY o_id")
            assert cur.fetchall() == ((17, "grace"), (2903, "ada"))
    finally:
        conn.close()


# --- the consistency check sees a sabotaged transaction -----------------------------------


@pytest.mark.parametrize(
    ("engine", "sabotage", "condition"),
    [
        ("postgresql", "payment_skips_district", "1: warehouse 1: W_YTD"),
        ("mariadb", "new_order_skips_an_id", "2: warehouse 1 district"),
        ("postgresql", "new_order_miscounts_lines", "4: warehouse 1 district"),
    ],
)
def test_a_sabotaged_transaction_fails_the_run_loudly(engine, sabotage, condition):
    target = getattr(dbs, engine)(f"tpcc_{sabotage}")
    with pytest.raises(tpcc.ConsistencyFailed, match=condition):
        run_tpcc(target, clients=[2], test_sabotage=sabotage)
    assert own_objects_left(target) == []  # a failed run removes what it made, too


# --- what belongs to the user is refused and left alone -----------------------------------


def test_a_users_benchhub_tpcc_schema_on_postgresql_is_refused_and_survives():
    target = dbs.postgresql("tpcc_users_schema")
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute("DROP SCHEMA IF EXISTS benchhub_tpcc CASCADE")
            cur.execute("CREATE SCHEMA benchhub_tpcc")
            cur.execute("CREATE TABLE benchhub_tpcc.warehouse (w_id int, note text)")
            cur.execute("INSERT INTO benchhub_tpcc.warehouse VALUES (41, 'mine')")
        with pytest.raises(dbc.NotOurs, match="schema benchhub_tpcc that benchhub-agent did not"):
            run_tpcc(target)
        with conn.cursor() as cur:
            cur.execute("SELECT w_id, note FROM benchhub_tpcc.warehouse")
            assert cur.fetchall() == [(41, "mine")]
    finally:
        conn.close()


def test_a_users_tpcc_database_on_mariadb_is_refused_and_survives():
    target = dbs.mariadb("tpcc_users_db")
    own = dbc.own_database_name(target.database, "tpcc")
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{own}`")
            cur.execute(f"CREATE TABLE IF NOT EXISTS `{own}`.orders (o_id int)")
            cur.execute(f"INSERT INTO `{own}`.orders VALUES (2903)")
        with pytest.raises(dbc.NotOurs, match=f"database {own} that benchhub-agent did not"):
            run_tpcc(target)
        with pytest.raises(dbc.NotKept):
            run_tpcc(target, no_init=True)
        with conn.cursor() as cur:
            cur.execute(f"SELECT o_id FROM `{own}`.orders")
            assert cur.fetchall() == ((2903,),)
            cur.execute(f"DROP DATABASE `{own}`")
    finally:
        conn.close()


def test_no_init_without_kept_data_is_one_line_and_makes_nothing():
    target = dbs.postgresql("tpcc_nothing_kept")
    with pytest.raises(dbc.NotKept, match="tpcc --no-init: no data kept by an earlier run"):
        run_tpcc(target, no_init=True)
    assert own_objects_left(target) == []


# --- the data generation -------------------------------------------------------------------


def test_the_load_is_the_same_from_the_same_seed_and_another_from_another():
    def sample(seed: int, w_id: int) -> list[tuple]:
        rows = load.warehouse_rows(seed, w_id)
        return list(rows["district"]) + [next(iter(rows["customer"])) for _ in range(50)]

    assert sample(11, 2) == sample(11, 2)
    assert sample(11, 2) != sample(12, 2)
    assert sample(11, 2) != sample(11, 3)  # each warehouse draws its own rows


def test_the_generated_data_follows_the_specification():
    rows = load.warehouse_rows(5, 1)
    customers = [row for row in rows["customer"] if row[1] == 3]  # district 3
    assert len(customers) == load.CUSTOMERS
    # The first 1,000 customers' last names are the syllables of c_id - 1, in order.
    assert customers[0][5] == "BARBARBAR" and customers[371][5] == "PRICALLYOUGHT"
    assert all(row[5].isupper() and len(row[5]) <= 16 for row in customers)
    bad_credit = sum(row[13] == "BC" for row in customers) / len(customers)
    assert 0.07 < bad_credit < 0.13
    items = list(load.item_rows(5))
    original = sum("ORIGINAL" in row[4] for row in items) / len(items)
    assert 0.09 < original < 0.11
    assert all(26 <= len(row[4]) <= 50 for row in items)
    orders = list(rows["orders"])
    lines = list(rows["order_line"])
    assert sum(row[6] for row in orders) == len(lines)  # condition 4 at load time
    new_orders = list(rows["new_order"])
    assert len(new_orders) == 900 * load.DISTRICTS


def test_nurand_stays_in_range_and_the_run_constant_keeps_its_distance():
    rng = random.Random(3)
    drawn = [load.nurand(rng, 255, 0, 999, 123) for _ in range(5000)]
    assert min(drawn) >= 0 and max(drawn) <= 999 and len(set(drawn)) > 500
    for seed in (1, 2, 77):
        loaded = load.constants(seed)
        delta = abs(load.run_constants(loaded, seed)[0] - loaded[0])
        assert 65 <= delta <= 119 and delta not in (96, 112)


# --- run --like -------------------------------------------------------------------------

TPCC_RUN = {
    "warehouses": 1,
    "seed": 29,
    "duration": 1.5,
    "warmup": 0.3,
    "clients": "1,2",
    "mix": "45/43/4/4/4",
    "think_time": "none",
    "consistency": "passed",
}


def test_like_turns_a_tpcc_run_into_its_options_and_refuses_another_mix():
    run = published_run(
        "tpcc", TPCC_RUN, server={"engine": "mariadb"}, benchmark_version=tpcc.VERSION
    )
    assert replay(run, "mariadb", set()).options == [
        "--warehouses", "1", "--seed", "29", "--duration", "1.5", "--warmup", "0.3",
        "--clients", "1,2", "--repeat", "1",
    ]  # fmt: skip
    other = published_run("tpcc", {**TPCC_RUN, "mix": "50/50/0/0/0"})
    with pytest.raises(CannotReplay, match="mix='50/50/0/0/0'"):
        replay(other, "postgresql", set())


def test_like_repeats_a_tpcc_run_with_its_parameters(mysql_dsn, outbox_dir):
    run = published_run(
        "tpcc", TPCC_RUN, server={"engine": "mariadb"}, benchmark_version=tpcc.VERSION
    )
    with ContractServer() as server:
        url = serve(server, run)
        done = agent("run", "--like", url, "--dsn", mysql_dsn, "--dry-run")
    assert done.returncode == 0, done.stderr
    repeated = json.loads(done.stdout)["runs"][0]
    assert repeated["benchmark"] == "tpcc"
    assert repeated["parameters"] == TPCC_RUN
