"""select-update against the real PostgreSQL and MariaDB, at small scale."""

from __future__ import annotations

import argparse
import threading
import time

import pytest
from benchhub_agent import db
from benchhub_agent.benchmarks import select_update
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.placement import UNPINNED
from benchhub_agent.schema import metric_catalog


def options(**overrides) -> argparse.Namespace:
    values = dict(
        clients=[1, 4],
        transactions=200,
        duration=None,
        warmup=None,
        repeat=1,
        locking="for_update",
        processes=None,
        pin=None,
    )
    values.update(overrides)
    return argparse.Namespace(**values)


def by_point(result, metric: str) -> dict[int, float]:
    return {m.parameters["clients"]: m.value for m in result.measurements if m.metric == metric}


@pytest.fixture(params=["postgresql", "mariadb"])
def dsn(request, pg_dsn, mysql_dsn) -> str:
    return pg_dsn if request.param == "postgresql" else mysql_dsn


def test_every_committed_increment_is_in_the_table_under_for_update(dsn):
    target = Target.parse(dsn)
    result = select_update.run(target, options(), SilentProgress())

    assert by_point(result, "errors") == {1: 0, 4: 0}
    assert all(v > 0 for v in by_point(result, "throughput").values())
    # The last point's table is still there: 200 commits, so the sum is 200.
    assert select_update.table_total(target) == 200
    assert result.parameters == {"rows": 100, "locking": "for_update", "transactions": 200}


def test_latencies_are_ordered_and_use_catalog_units(dsn):
    result = select_update.run(Target.parse(dsn), options(clients=[2]), SilentProgress())
    values = {m.metric: m.value for m in result.measurements}
    assert 0 < values["latency_p50"] <= values["latency_p95"] <= values["latency_p99"]
    assert values["latency_p99"] <= values["latency_max"]
    catalog = metric_catalog()["select-update"]
    assert all(m.unit == catalog[m.metric]["unit"] for m in result.measurements)


def test_server_facts_are_recorded(dsn):
    result = select_update.run(Target.parse(dsn), options(clients=[1]), SilentProgress())
    assert result.client["protocol"] == "tcp_loopback"  # the DSNs name 127.0.0.1
    assert result.client["driver"] in ("psycopg", "PyMySQL")
    settings = result.database["settings"]
    if result.database["engine"] == "postgresql":
        assert result.database["version_string"].startswith("PostgreSQL ")
        assert {"shared_buffers", "fsync", "synchronous_commit", "wal_sync_method"} <= set(settings)
    else:
        assert "MariaDB" in result.database["version_string"]
        assert {"innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit"} <= set(settings)
    assert result.storage_path  # both servers let a superuser read their data directory


def test_unix_socket_is_reported_as_such(pg_dsn):
    socket_dsn = pg_dsn.replace("@127.0.0.1:5432/", "@/") + "?host=/var/run/postgresql"
    info = db.describe(Target.parse(socket_dsn))
    assert info.protocol == "unix_socket"


def test_without_locking_the_lost_updates_are_exactly_the_missing_increments(mysql_dsn):
    target = Target.parse(mysql_dsn)
    result = select_update.run(
        target, options(clients=[8], transactions=400, locking="none"), SilentProgress()
    )
    lost = by_point(result, "lost_updates")[8]
    assert lost == 400 - select_update.table_total(target)
    assert lost >= 0


def test_without_locking_postgresql_reports_lost_updates_too(pg_dsn):
    target = Target.parse(pg_dsn)
    result = select_update.run(
        target, options(clients=[4], transactions=400, locking="none"), SilentProgress()
    )
    assert by_point(result, "lost_updates")[4] == 400 - select_update.table_total(target)


def test_repetitions_keep_every_sample_and_report_their_median(pg_dsn):
    result = select_update.run(
        Target.parse(pg_dsn), options(clients=[2], repeat=3), SilentProgress()
    )
    throughput = next(m for m in result.measurements if m.metric == "throughput")
    assert len(throughput.samples) == 3
    assert throughput.value == sorted(throughput.samples)[1]
    assert result.repetitions == 3


def test_time_based_variant_measures_only_after_the_warmup(pg_dsn):
    result = select_update.run(
        Target.parse(pg_dsn),
        options(clients=[2], transactions=None, duration=1.0, warmup=0.5),
        SilentProgress(),
    )
    assert result.parameters == {
        "rows": 100,
        "locking": "for_update",
        "duration": 1.0,
        "warmup": 0.5,
    }
    assert by_point(result, "throughput")[2] > 0


def test_a_table_changed_behind_the_benchmark_fails_the_run_loudly(pg_dsn):
    """Someone else's update breaks sum(c2) == commits: the run must refuse to report."""
    target = Target.parse(pg_dsn)
    conn = db.connect(target)
    conn.execute(f"DROP TABLE IF EXISTS {select_update.TABLE}")
    stop = threading.Event()

    def tamper() -> None:
        while not stop.is_set():
            try:
                cursor = conn.execute(
                    f"UPDATE {select_update.TABLE} SET c2 = c2 + 1000 WHERE c1 = 1"
                )
                if cursor.rowcount == 1:
                    return
            except Exception:  # the table does not exist yet
                time.sleep(0.001)

    thread = threading.Thread(target=tamper)
    thread.start()
    try:
        with pytest.raises(RuntimeError, match="sum\\(c2\\)"):
            select_update.run_point(
                target,
                clients=2,
                transactions=3000,
                duration=None,
                warmup=0.0,
                locking="for_update",
                processes=None,
                pin=UNPINNED,
                progress=SilentProgress(),
                label="tampered",
            )
    finally:
        stop.set()
        thread.join()
        conn.close()


def test_clients_share_the_transactions_evenly():
    assert select_update.split(10_000, 3) == [3334, 3333, 3333]
    assert sum(select_update.split(200, 7)) == 200


class RecordingProgress(SilentProgress):
    def __init__(self) -> None:
        self.labels: list[str] = []

    def start(self, total: int, label: str) -> None:
        self.labels.append(label)


def test_a_sweep_the_server_cannot_connect_is_refused_before_it_starts(dsn):
    progress = RecordingProgress()

    with pytest.raises(ValueError, match="--clients needs 100001 connections") as refused:
        select_update.run(Target.parse(dsn), options(clients=[1, 100000]), progress)

    assert "raise max_connections" in str(refused.value)
    assert progress.labels == []  # not even the 1-client point ran
