"""tpcb against the real PostgreSQL and MariaDB, with the agent's engine and with pgbench."""

from __future__ import annotations

import os
import random
import re
import time
from importlib import metadata

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _connections as dbc
from benchhub_agent.benchmarks import _tpcb_event_loop as event_loop
from benchhub_agent.benchmarks import tpcb
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.histogram import Histogram

METRICS = {
    "tps",
    "latency_mean",
    "latency_stddev",
    "latency_p95",
    "latency_p99",
    "failed_transactions",
}


def run_tpcb(target: Target, **values) -> tpcb.BenchmarkResult:
    options = dbs.options(
        clients=[1, 2],
        duration=1.0,
        warmup=0.2,
        repeat=2,
        scale=1,
        load_engine="agent",
        keep=True,  # the tests read the tables afterwards
    )
    for key, value in values.items():
        setattr(options, key, value)
    return tpcb.run(target, options, SilentProgress())


def balances(target: Target) -> tuple[int, int, int, int]:
    """Sums of the three balances, and the history rows of the last repetition."""
    conn = dbc.connect(target)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT (SELECT sum(abalance) FROM pgbench_accounts),"
                " (SELECT sum(tbalance) FROM pgbench_tellers),"
                " (SELECT sum(bbalance) FROM pgbench_branches),"
                " (SELECT count(*) FROM pgbench_history)"
            )
            return tuple(int(v or 0) for v in cur.fetchone())
    finally:
        conn.close()


def assert_sensible(result: tpcb.BenchmarkResult, target: Target, clients: list[int]) -> None:
    points = dbs.by_point(result)
    units = dbs.catalog_units("tpcb")
    for n in clients:
        found = {metric for metric, params in points if params == (("clients", n),)}
        assert found == METRICS
        point = {metric: points[(metric, (("clients", n),))] for metric in METRICS}
        for metric, measurement in point.items():
            assert measurement.unit == units[metric]
            assert len(measurement.samples) == result.repetitions
        assert all(s > 0 for s in point["tps"].samples)
        assert 0 < point["latency_mean"].value <= point["latency_p99"].value * 1.02
        assert point["latency_p95"].value <= point["latency_p99"].value
        assert point["failed_transactions"].value == 0
    # Every committed transaction adds the same delta to an account, a teller and a branch.
    accounts, tellers, branches, history = balances(dbc.in_own_schema(target, tpcb.NAME))
    assert accounts == tellers == branches
    # The last repetition's history holds its transactions (pgbench's tps leaves out the
    # connection time, so its count can fall a little short of tps x duration).
    last_tps = points[("tps", (("clients", clients[-1]),))].samples[-1]
    assert history >= 0.9 * last_tps * result.parameters["duration"]
    assert dbs.document_errors(result) == []


def test_agent_engine_on_postgresql_keeps_the_tpcb_invariant():
    target = dbs.postgresql("tpcb_pg_agent")

    result = run_tpcb(target)

    assert_sensible(result, target, [1, 2])
    assert result.parameters == {
        "scale": 1,
        "duration": 1.0,
        "warmup": 0.2,
        "clients": "1,2",
        "load_engine": "agent",
        "query_mode": "prepared",
    }
    assert result.client["load_engine"] == "benchhub-agent"
    assert result.client["driver"] == "psycopg"
    assert_engine_cpu_recorded(result, [1, 2])
    assert result.client["protocol"] == "tcp_loopback"
    assert result.database["version_string"].startswith("PostgreSQL")
    assert result.storage_path and result.storage_path.startswith("/")


def assert_engine_cpu_recorded(result: tpcb.BenchmarkResult, clients: list[int]) -> None:
    """Each point's busiest worker in the note, the busiest point in the run's field."""
    (note,) = [n for n in result.notes if n.startswith("load engine CPU")]
    per_point = dict(re.findall(r"clients=(\d+): (\d+) %", note))
    assert sorted(int(n) for n in per_point) == sorted(clients)
    assert 0 < result.load_engine_cpu <= 100
    assert round(result.load_engine_cpu) == max(int(v) for v in per_point.values())
    assert result.run_document()["load_engine_cpu"] == result.load_engine_cpu


@pytest.mark.parametrize(
    ("driver", "recorded"), [("mysqlclient", "mysqlclient"), ("pymysql", "PyMySQL")]
)
def test_agent_engine_on_mariadb_keeps_the_tpcb_invariant(driver, recorded):
    target = dbs.mariadb(f"tpcb_maria_agent_{driver}")

    result = run_tpcb(target, clients=[1, 3], mysql_driver=driver)

    assert_sensible(result, target, [1, 3])
    # The driver that carried the load, not the one that built the tables.
    assert result.client["driver"] == recorded
    assert result.client["driver_version"] == metadata.version(recorded)
    assert result.parameters["query_mode"] == "simple"
    assert result.database["engine"] == "mariadb"
    assert "innodb_flush_log_at_trx_commit" in result.database["settings"]
    assert_engine_cpu_recorded(result, [1, 3])


def test_mysqlclient_is_the_default_driver_when_installed():
    assert tpcb.mysql_driver(None) == "mysqlclient"
    assert tpcb.mysql_driver("pymysql") == "pymysql"


def test_pgbench_engine_drives_the_installed_pgbench():
    target = dbs.postgresql("tpcb_pg_pgbench")

    result = run_tpcb(target, load_engine="pgbench", clients=[2])

    assert_sensible(result, target, [2])
    assert result.client["load_engine"] == "pgbench"
    assert result.client["driver_version"].startswith("pgbench (PostgreSQL)")
    assert any("-M prepared -c 2 -j 2 -T 1" in note for note in result.notes)
    assert_engine_cpu_recorded(result, [2])


def test_the_scale_sets_the_accounts():
    target = dbs.postgresql("tpcb_pg_scale")

    tpcb.initialize(target, 2)

    assert tpcb.measured_scale(target) == 2
    conn = dbc.connect(target)
    with conn.cursor() as cur:
        cur.execute("SELECT count(*), max(bid) FROM pgbench_accounts")
        assert cur.fetchone() == (200_000, 2)
    conn.close()


def test_pgbench_engine_refuses_mariadb():
    with pytest.raises(ValueError, match="postgresql"):
        run_tpcb(Target.parse(f"{dbs.MYSQL_SERVER}/test"), load_engine="pgbench")


class FakeResult:
    def __init__(self, status: int) -> None:
        self.status = status

    def get_error_message(self) -> str:
        return "ERROR: failed on purpose"


def flow_on_a_fake_connection(draws: list[float], fail_at: bytes | None = None):
    """A TpcbFlow without a server: each statement sent is recorded and answered at once,
    with its expected status, or an error for the statement named ``fail_at``; the answer
    is taken only after it was read (consume_input, not a poll in get_result)."""
    flow = object.__new__(event_loop.TpcbFlow)
    drawn = iter(draws)
    flow.draw = lambda: next(drawn)
    flow.accounts, flow.tellers, flow.scale = 10, 20, 2
    flow.teller_ids, flow.branch_ids = event_loop.numbered(20), event_loop.numbered(2)
    flow.deadline, flow.measure_from, flow.began, flow.failed = float("inf"), 0.0, 0.0, 0
    flow.latencies, flow.fd = {}, None  # libpq's calls (the protocol on a socket: test_pg_wire)
    flow.expected = tuple(2 if name == b"tb_select" else 1 for name in event_loop.NAMES)
    flow.sent, answers = [], []

    def send(name, parameters):
        flow.sent.append((name, parameters))
        step = event_loop.NAMES.index(name) if name in event_loop.NAMES else 0
        answers[:] = [FakeResult(7 if name == fail_at else flow.expected[step]), None]
        read.clear()

    def get_result():
        assert read, "get_result before consume_input: libpq polls the socket first"
        return answers.pop(0)

    read: list[bool] = []
    flow.send, flow.get_result = send, get_result
    flow.pgconn = type("Conn", (), {"status": 0, "consume_input": lambda _: read.append(True)})()
    flow.bad_connection = 1
    return flow


def test_the_event_loop_runs_the_script_in_order_with_its_parameters():
    # aid, bid, tid, delta, in the order they are drawn: each a uniform fraction scaled to
    # its range (aid 1..10, bid 1..2, tid 1..20, delta -5000..5000), then the next BEGIN's.
    flow = flow_on_a_fake_connection([0.65, 0.99, 0.6, 0.496, 0.0, 0.0, 0.0, 0.0])
    steps = flow.steps()
    for _ in event_loop.SCRIPT:
        next(steps)  # each statement sent, then its answer taken on the next resumption
    named = {"aid": b"7", "bid": b"2", "tid": b"13", "delta": b"-40"}
    expected = [
        (name, tuple(named[k] for k in takes) or None) for name, _, takes in event_loop.SCRIPT
    ]
    assert flow.sent == expected
    next(steps)  # END's answer: the transaction is counted, the next one begins
    assert flow.sent[-1] == (b"tb_begin", None)
    assert sum(flow.latencies.values()) == 1 and flow.failed == 0


def test_the_lone_client_chooses_what_the_loop_sends_from_the_same_draws():
    # The loop draws inline (no method call per transaction), the lone client through
    # _choose: both are pgbench's choices only if they agree draw for draw.
    draws = [0.0, 0.0, 0.0, 0.0, 0.999, 0.999, 0.999, 0.999, 0.123, 0.5, 0.77, 0.31]
    for first in range(0, len(draws), 4):
        looping = flow_on_a_fake_connection([*draws[first : first + 4], 0.0, 0.0, 0.0, 0.0])
        steps = looping.steps()
        for _ in event_loop.SCRIPT:
            next(steps)
        lone = flow_on_a_fake_connection(draws[first : first + 4])
        assert [parameters for _, parameters in looping.sent] == list(lone._choose())


def test_the_event_loop_rolls_a_failed_statement_back_and_counts_it():
    flow = flow_on_a_fake_connection([0.5] * 8, fail_at=b"tb_tellers")
    steps = flow.steps()
    for _ in range(4):  # BEGIN, the accounts' UPDATE, the SELECT, the tellers' UPDATE
        next(steps)
    next(steps)  # the error: ROLLBACK, nothing after the failed statement
    assert [name for name, _ in flow.sent[-2:]] == [b"tb_tellers", b"tb_rollback"]
    next(steps)  # the rollback done: the next transaction begins
    assert flow.sent[-1] == (b"tb_begin", None)
    assert flow.failed == 1 and not flow.latencies


@pytest.mark.parametrize("clients", [1, 2])  # the lone client's blocking path, the loop
def test_a_failing_statement_is_rolled_back_and_counted_on_either_path(clients):
    target = dbc.in_own_schema(dbs.postgresql("tpcb_pg_failing"), tpcb.NAME)
    tpcb.initialize(target, 1)
    conn = dbc.connect(target)
    try:
        # The INSERT, sixth of the seven statements, fails for about half the transactions
        # (delta is drawn from -5000..5000).
        conn.execute("ALTER TABLE pgbench_history ADD CONSTRAINT half CHECK (delta > 0)")
    finally:
        conn.close()

    # In this process (run_load would give each client a process of its own on a machine
    # with as many CPUs): one client runs alone, two share the loop.
    flows = [event_loop.TpcbFlow(target, 1, random.Random(i), (0.0, 0.0)) for i in range(clients)]
    for flow in flows:
        flow.deadline = time.perf_counter() + 1.0
    try:
        if clients == 1:
            flows[0].run_alone()
        else:
            assert all(flow.fd is not None for flow in flows) or os.name != "posix"  # the socket
            event_loop.drive(flows)
    finally:  # a connection left in a transaction would hold its locks for the next test
        for flow in flows:
            flow.close()
    histogram = Histogram.merged([flow.histogram for flow in flows])
    failed = sum(flow.failed for flow in flows)

    conn = dbc.connect(target)
    try:
        accounts, tellers, branches, history, deltas = conn.execute(
            "SELECT (SELECT sum(abalance) FROM pgbench_accounts),"
            " (SELECT sum(tbalance) FROM pgbench_tellers),"
            " (SELECT sum(bbalance) FROM pgbench_branches),"
            " (SELECT count(*) FROM pgbench_history), (SELECT sum(delta) FROM pgbench_history)"
        ).fetchone()
    finally:
        conn.close()
    assert failed > 0
    # Nothing of a failed transaction stayed, and every committed one was measured ...
    assert accounts == tellers == branches == deltas
    assert history == histogram.count > 0
    # ... and a failure did not end its client: it rolled back and went on (about as many
    # commits as failures; without the ROLLBACK one failure would fail all that follow).
    assert failed < 10 * histogram.count
