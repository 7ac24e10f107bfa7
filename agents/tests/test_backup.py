"""backup with pg_dump, mysqldump and gbak against the real servers, over each protocol."""

from __future__ import annotations

import os
from pathlib import Path

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import backup
from benchhub_agent.benchmarks.base import SilentProgress, Target

ROWS = 20_000
# A generated row carries a 64-character label; any real backup holds at least that.
MIN_BYTES_PER_ROW = 64


def run_backup(target: Target, **values) -> backup.BenchmarkResult:
    options = dbs.options(rows=ROWS, protocols=None, repeat=2, no_init=False)
    for key, value in values.items():
        setattr(options, key, value)
    return backup.run(target, options, SilentProgress())


def assert_sensible(result: backup.BenchmarkResult, protocols: list[str], tool: str) -> None:
    units = dbs.catalog_units("backup")
    points = dbs.by_point(result)
    for protocol in protocols:
        at = tuple(sorted({"protocol": protocol, "tool": tool}.items()))
        seconds = points[("seconds", at)]
        throughput = points[("throughput", at)]
        size = points[("database_bytes", at)]
        written = points[("backup_bytes", at)]
        for m in (seconds, throughput, size, written):
            assert m.unit == units[m.metric]
            assert len(m.samples) == 2
        assert all(s > 0 for s in seconds.samples)
        assert size.value > ROWS * MIN_BYTES_PER_ROW
        assert written.value > ROWS * MIN_BYTES_PER_ROW
        for s, mbps in zip(seconds.samples, throughput.samples, strict=True):
            assert mbps == pytest.approx(size.value / 1e6 / s)
    assert {m.parameters["protocol"] for m in result.measurements} == set(protocols)
    assert result.parameters["rows"] == ROWS
    assert result.parameters["tool"] == tool
    assert result.database["version_string"]
    assert dbs.document_errors(result) == []


def test_pg_dump_over_the_socket_and_tcp():
    target = dbs.postgresql("backup_pg")

    result = run_backup(target)

    assert_sensible(result, ["unix_socket", "tcp_loopback"], "pg_dump")
    assert result.client["load_engine"] == "pg_dump"
    assert result.client["driver_version"].startswith("pg_dump (PostgreSQL)")
    assert result.client["cpu_placement"] == "unpinned"
    assert result.storage_path and Path(result.storage_path, "PG_VERSION").exists()


def test_mysqldump_over_the_socket_and_tcp():
    target = dbs.mariadb("backup_maria")

    result = run_backup(target)

    assert_sensible(result, ["unix_socket", "tcp_loopback"], "mysqldump")
    assert result.database["engine"] == "mariadb"


def test_gbak_over_local_tcp_and_the_services_api():
    target = dbs.firebird("backup_fb")

    result = run_backup(target)

    assert_sensible(result, ["local", "tcp_loopback", "services_api"], "gbak")
    assert result.database["engine"] == "firebird"
    assert "Firebird" in result.database["version_string"]
    assert result.database["architecture"] == "superserver"
    assert result.database["settings"]["page_size"] == "8192"
    assert result.client["driver"] == "gbak"
    assert result.storage_path == dbs.FIREBIRD_DIR
    assert any("embedded" in note for note in result.notes)


def test_one_protocol_is_recorded_as_the_client_protocol():
    target = dbs.firebird("backup_fb_one")

    result = run_backup(target, protocols="services_api", repeat=1, rows=2000)

    assert {m.parameters["protocol"] for m in result.measurements} == {"services_api"}
    assert result.client["protocol"] == "services_api"


def test_same_core_pins_the_server_and_restores_it():
    target = dbs.postgresql("backup_pg_pinned")
    postmaster = int(Path(_data_directory(target), "postmaster.pid").read_text().split()[0])
    before = os.sched_getaffinity(postmaster)

    result = run_backup(target, pin="same_core", protocols="unix_socket", repeat=1, rows=2000)

    assert result.client["cpu_placement"] == "same_core"
    assert result.parameters["pin"] == "same_core"
    assert os.sched_getaffinity(postmaster) == before


def test_a_remote_server_is_backed_up_over_its_network_protocols_only():
    assert backup.chosen_protocols("firebird", None, local_server=False) == [
        "tcp_remote",
        "services_api",
    ]
    assert backup.chosen_protocols("postgresql", None, local_server=False) == ["tcp_remote"]


def test_an_unknown_protocol_is_named():
    with pytest.raises(ValueError, match="services_api"):
        backup.chosen_protocols("postgresql", "services_api", local_server=True)


def _data_directory(target: Target) -> str:
    from benchhub_agent.benchmarks import _connections as dbc

    return dbc.describe(target).data_directory
