"""``benchhub-agent study`` varying what the runs connect to: several servers (``--vary
dsn``), the protocol, the CPU placement; Firebird's database file on the filesystems
under study; settings that need a restart (``--restart-command``, on a PostgreSQL
cluster of the test's own, so that the shared server is never restarted); ``--like``
for config and mount-option studies. All on the real servers of the machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from _databases import FIREBIRD_DIR, firebird, mariadb, postgresql
from _loops import findmnt, loop_mounts, needs_loop_devices
from benchhub_agent import db
from benchhub_agent.benchmarks import _select_update_clients as su
from benchhub_agent.benchmarks._connections import in_own_schema
from benchhub_agent.study import machine, placement, servers
from contract_server import ContractServer
from test_like import SELECT_UPDATE
from test_study import (
    SMALL,
    assert_storage_is_the_directorys,
    documents,
    interrupted_at_second_run,
    study,
    study_objects,
    tmp_path,  # noqa: F401 - the fixture: a folder the servers' users can reach
)

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def recorded(runs: list[dict], *fields: tuple[str, str]) -> list[tuple]:
    return [tuple(doc["environment"][s].get(f) for s, f in fields) for doc in runs]


# --- --vary dsn: several servers ------------------------------------------------------------


@needs_loop_devices
def test_dsn_study_puts_each_servers_data_on_each_filesystem(tmp_path, outbox_dir):  # noqa: F811
    pg, my = postgresql("study_dsn"), mariadb("study_dsn")
    before = study_objects()
    with loop_mounts(tmp_path, ("xfs", "ext4")) as mounted:
        on = [mounted["xfs"], mounted["ext4"]]
        done = study(
            "select-update", *SMALL, "--repeat", "1", "--vary", "dsn", f"{my.dsn};{pg.dsn}",
            "--vary", "filesystem", "--on", ",".join(on), "--yes", "--dry-run",
        )  # fmt: skip
        runs, request = documents(done)
        # MariaDB first, as given; the filesystems inside each server.
        assert recorded(runs, ("database", "engine"), ("storage", "filesystem")) == [
            ("mariadb", "xfs"), ("mariadb", "ext4"), ("postgresql", "xfs"), ("postgresql", "ext4")
        ]  # fmt: skip
        for doc, directory in zip(runs, on * 2, strict=True):
            assert_storage_is_the_directorys(doc, directory)
        for directory in on:
            assert os.listdir(directory) in ([], ["lost+found"])
    assert request["vary"] == ["engine", "filesystem"] and request["reference"] == "mariadb"
    # The servers' DSNs are recorded as --dsn is: no user, host or password.
    command = runs[0]["source"]["command"]
    assert "--vary dsn 'mysql://USER@HOST:3306/" in command and "root@" not in command
    assert study_objects() == before


def test_two_databases_of_one_server_are_refused_as_nothing_varying(outbox_dir):
    one, other = postgresql("study_same_a"), postgresql("study_same_b")
    done = study(
        "select-update", *SMALL, "--vary", "dsn", f"{one.dsn};{other.dsn}", "--yes", "--dry-run"
    )
    assert done.returncode == 2
    version = servers.version_of(db.describe(one).version_string)
    assert f"are both postgresql {version}: neither the engine nor the version" in done.stderr
    assert "study run" not in done.stderr


def test_dsn_and_vary_dsn_together_are_refused(pg_dsn, mysql_dsn):
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--vary", "dsn", f"{pg_dsn};{mysql_dsn}",
        "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--dsn and --vary dsn: the servers are --vary dsn's; drop --dsn" in done.stderr


# --- --vary protocol ---------------------------------------------------------------------------


def test_protocol_study_reaches_each_server_over_its_socket_and_tcp(outbox_dir):
    pg, my = postgresql("study_protocol"), mariadb("study_protocol")
    done = study(
        "select-update", *SMALL, "--repeat", "1", "--vary", "dsn", f"{pg.dsn};{my.dsn}",
        "--vary", "protocol", "tcp-loopback;unix_socket", "--yes", "--dry-run",
    )  # fmt: skip
    runs, request = documents(done)
    assert recorded(runs, ("database", "engine"), ("client", "protocol")) == [
        ("postgresql", "tcp_loopback"), ("postgresql", "unix_socket"),
        ("mariadb", "tcp_loopback"), ("mariadb", "unix_socket"),
    ]  # fmt: skip
    assert request["vary"] == ["engine", "protocol"]
    assert "over unix_socket: /" in done.stderr  # the plan names the socket it found


def test_protocol_is_refused_on_firebird():
    done = study(
        "select-update", "--dsn", firebird("study_fb_protocol").dsn, *SMALL, "--vary",
        "protocol", "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--vary protocol: the agent reaches Firebird over TCP only" in done.stderr


# --- --vary pin ----------------------------------------------------------------------------------


def thread_affinities(pid: int) -> dict[int, set[int]]:
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            found[int(tid)] = os.sched_getaffinity(int(tid))
    return found


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="other_core needs two CPUs")
def test_pin_study_records_each_placement_and_leaves_the_server_as_it_was(outbox_dir):
    target = mariadb("study_pin")
    pid = db.describe(target).server_pid
    before = thread_affinities(pid)
    done = study(
        "select-update", "--dsn", target.dsn, *SMALL, "--repeat", "2", "--vary", "pin",
        "other-core;unpinned;same_core", "--yes", "--dry-run",
    )  # fmt: skip
    runs, request = documents(done)
    placements = [doc["environment"]["client"]["cpu_placement"] for doc in runs]
    assert placements == ["other_core", "unpinned", "same_core"] * 2
    assert request["vary"] == ["cpu_placement"] and request["reference"] == "other_core"
    after = thread_affinities(pid)
    alive = set(before) & set(after)  # threads that lived through the study
    assert alive and {t: after[t] for t in alive} == {t: before[t] for t in alive}


def test_pin_with_pin_given_is_refused(pg_dsn):
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--pin", "same_core", "--vary", "pin",
        "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--pin and --vary pin: the placement is what varies; drop --pin" in done.stderr


# --- Firebird: the database file on the filesystem under study --------------------------------


@needs_loop_devices
def test_firebird_study_puts_the_database_file_on_each_filesystem(tmp_path, outbox_dir):  # noqa: F811
    target = firebird("study_fb")
    with loop_mounts(tmp_path, ("btrfs", "xfs")) as mounted:
        on = [mounted["btrfs"], mounted["xfs"]]
        done = study(
            "select-update", "--dsn", target.dsn, *SMALL, "--repeat", "2", "--vary",
            "filesystem", "--on", ",".join(on), "--yes", "--dry-run",
        )  # fmt: skip
        runs, _ = documents(done)
        assert [d["environment"]["storage"]["filesystem"] for d in runs] == ["btrfs", "xfs"] * 2
        for doc, directory in zip(runs, on * 2, strict=True):
            assert doc["environment"]["database"]["engine"] == "firebird"
            assert_storage_is_the_directorys(doc, directory)
        assert "have the Firebird server make the benchmark's database file" in done.stderr
        for directory in on:
            assert os.listdir(directory) == []
    # Nothing made in the folder of the DSN's file: neither it nor the benchmark's own.
    stem = Path(target.database).stem
    assert [name for name in os.listdir(FIREBIRD_DIR) if name.startswith(stem)] == []


@needs_loop_devices
def test_firebird_database_file_of_a_cell_is_on_its_directory(tmp_path):  # noqa: F811
    target = firebird("study_fb_place")
    changes = machine.Changes()
    with loop_mounts(tmp_path, ("xfs",)) as mounted:
        place = machine.place_of(mounted["xfs"])
        owner = placement.owner_of(target)
        try:
            cell = placement.place_firebird(target, place, "f4k2", owner, changes)
            workspace = in_own_schema(cell, "select-update")
            su.reset_table(workspace)
            files = list(Path(mounted["xfs"]).rglob("*.fdb"))
            assert [f.name for f in files] == ["study_benchhub_select_update.fdb"]
            assert files[0].parent.name == "benchhub-study-f4k2"
            # The server made it, as its own user, not the agent as root.
            assert (files[0].stat().st_uid, files[0].stat().st_gid) == owner != (0, 0)
        finally:
            assert changes.undo_all() == []
        assert os.listdir(mounted["xfs"]) == []


@needs_loop_devices
def test_sigint_drops_firebirds_files_and_leaves_the_directories_empty(tmp_path, outbox_dir):  # noqa: F811
    with loop_mounts(tmp_path, ("ext4", "btrfs")) as mounted:
        done = interrupted_at_second_run([
            "select-update", "--dsn", firebird("study_fb_sigint").dsn, "--clients", "2",
            "--transactions", "3000", "--repeat", "2", "--vary", "filesystem",
            "--on", f"{mounted['ext4']},{mounted['btrfs']}", "--yes",
        ])  # fmt: skip
        assert done.returncode == 130, done.stderr[-3000:]
        assert done.stderr.strip().splitlines()[-1].startswith("study interrupted:")
        assert "NOT undone" not in done.stderr
        assert os.listdir(mounted["ext4"]) == ["lost+found"] and os.listdir(mounted["btrfs"]) == []


# --- --restart-command: a setting that needs a restart, on a cluster of the test's own ------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def as_postgres(*argv: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True)


@pytest.fixture
def own_cluster() -> Iterator[tuple[str, str, Path]]:
    """(DSN, restart command, folder) of a PostgreSQL cluster made for the test."""
    if os.geteuid() != 0 or not (PG_BIN / "initdb").exists():
        pytest.skip("an own cluster needs root and PostgreSQL 15's initdb")
    folder = Path(tempfile.mkdtemp(prefix="benchhub-cluster-", dir="/var/tmp"))
    shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", free_port()
    as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    control = f"{PG_BIN / 'pg_ctl'} -D {data} -l {folder}/log -w -o '{options}'"
    as_postgres("sh", "-c", f"{control} start")
    restarts = folder / "restarts"
    restart = f'runuser -u postgres -- sh -c "{control} restart" >/dev/null && echo x >> {restarts}'

    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", restart, restarts
    finally:
        stop = ["runuser", "-u", "postgres", "--", "sh", "-c", f"{control} -m immediate stop"]
        subprocess.run(stop, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def setting(dsn: str, name: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT current_setting(%s)", (name,)).fetchone()[0]


def test_restart_command_applies_a_setting_that_needs_it_and_restores_it(own_cluster, outbox_dir):
    dsn, restart, restarts = own_cluster
    before = setting(dsn, "shared_buffers")
    done = study(
        "select-update", "--dsn", dsn, *SMALL, "--repeat", "2", "--vary", "config",
        "stock;big:shared_buffers=24MB,max_wal_senders=7", "--restart-command", restart,
        "--yes", "--dry-run",
    )  # fmt: skip
    runs, _ = documents(done)
    profiles = [d["environment"]["database"]["config_profile"] for d in runs]
    assert profiles == ["stock", "big", "stock", "big"]
    # stock is the server as it was: a restart for each change to big and back, and after.
    assert (restarts.read_text().count("x") if restarts.exists() else 0) == 4
    assert f"restart the server with {restart!r} whenever a profile changes" in done.stderr
    assert setting(dsn, "shared_buffers") == before
    assert setting(dsn, "max_wal_senders") == "10"
    assert "--restart-command" not in runs[0]["source"]["command"]  # this machine's own


def test_restart_command_that_restarts_nothing_is_caught_and_undone(own_cluster, outbox_dir):
    dsn, _, _ = own_cluster
    done = study(
        "select-update", "--dsn", dsn, *SMALL, "--repeat", "1", "--vary", "config",
        "stock;big:shared_buffers=24MB", "--restart-command", "true", "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 1
    assert "the command did not restart this server" in done.stderr
    with psycopg.connect(dsn, autocommit=True) as conn:
        left = conn.execute(
            "SELECT name FROM pg_file_settings WHERE sourcefile LIKE '%%postgresql.auto.conf'"
        ).fetchall()
    assert left == []


def test_restart_command_without_vary_config_is_refused(pg_dsn):
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--vary", "pin", "--restart-command", "true",
        "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "--restart-command is for --vary config: nothing else restarts" in done.stderr


# --- --like for config and mount-option studies ---------------------------------------------


STUDY_UUID = "4b1f0c2e-93aa-4d0e-8a51-0c7d2e9f6a13"


def published_study(
    server: ContractServer, varied: list[str], xs: list[str], command: str, **run_fields
):
    run = {**SELECT_UPDATE, "id": 31, "command": command, **run_fields}
    server.runs["/api/v1/runs/31/"] = run
    study = {
        "uuid": STUDY_UUID, "title": "a study", "question": "which?", "benchmark":
        "select-update", "metric": "throughput", "varied": varied, "reference": xs[-1],
        "point": {}, "runs": [f"{server.url}/api/v1/runs/31/"],
        "cells": [{"x": x, "series": None} for x in xs],
    }  # fmt: skip
    server.runs[f"/api/v1/studies/{STUDY_UUID}/"] = study
    return f"{server.url}/studies/{STUDY_UUID}/"


def test_like_repeats_a_config_study_with_the_profiles_its_runs_recorded(pg_dsn, outbox_dir):
    command = (
        "benchhub-agent study select-update --dsn postgresql://USER@HOST:5432/x --vary config "
        "'lazy:commit_delay=13,commit_siblings=6;plain' --yes"
    )
    with ContractServer() as server:
        url = published_study(server, ["config_profile"], ["lazy", "plain"], command)
        done = study(
            "--like", url, "--dsn", pg_dsn, "--clients", "1,2", "--repeat", "1", "--yes",
            "--dry-run",
        )  # fmt: skip
    runs, request = documents(done)
    assert [d["environment"]["database"]["config_profile"] for d in runs] == ["lazy", "plain"]
    assert runs[0]["environment"]["database"]["settings"]["commit_delay"] == "13"
    assert request["repeats"] == STUDY_UUID and request["reference"] == "plain"


@needs_loop_devices
def test_like_repeats_a_mount_option_study_on_the_directory_given(tmp_path, outbox_dir):  # noqa: F811
    command = (
        "benchhub-agent study select-update --dsn mysql://USER@HOST:3306/x --on /mnt/d "
        "--vary mount-options 'lazytime;noatime,sync' --yes"
    )
    xs = ["rw,noatime,sync", "rw,relatime,lazytime"]  # what the cells show: a mount's every option
    with loop_mounts(tmp_path, ("ext4",)) as mounted, ContractServer() as server:
        options = findmnt(mounted["ext4"])["options"]
        url = published_study(server, ["mount_options"], xs, command)
        done = study(
            "--like", url, "--dsn", mariadb("study_like_mount").dsn, "--on", mounted["ext4"],
            "--clients", "1", "--repeat", "1", "--yes", "--dry-run",
        )  # fmt: skip
        runs, _ = documents(done)
        seen = [set(d["environment"]["storage"]["mount_options"]) for d in runs]
        assert "lazytime" in seen[0] and {"noatime", "sync"} <= seen[1]
        assert findmnt(mounted["ext4"])["options"] == options
    assert [d["environment"]["storage"]["filesystem"] for d in runs] == ["ext4", "ext4"]


def test_like_repeats_a_placement_study_with_the_placements_its_cells_show(pg_dsn, outbox_dir):
    # The run read for the parameters was pinned: its --pin is not repeated, it varies.
    client = {"load_engine": "benchhub-agent", "cpu_placement": "same_core"}
    with ContractServer() as server:
        url = published_study(
            server, ["cpu_placement"], ["unpinned", "same_core"], "", client=client
        )
        done = study(
            "--like", url, "--dsn", pg_dsn, "--clients", "2", "--repeat", "1", "--yes",
            "--dry-run",
        )  # fmt: skip
    runs, request = documents(done)
    assert [d["environment"]["client"]["cpu_placement"] for d in runs] == ["same_core", "unpinned"]
    assert request["vary"] == ["cpu_placement"] and request["reference"] == "same_core"


def test_like_repeats_a_protocol_study_over_the_protocols_its_cells_show(mysql_dsn, outbox_dir):
    with ContractServer() as server:
        url = published_study(server, ["protocol"], ["unix_socket", "tcp_loopback"], "")
        done = study(
            "--like", url, "--dsn", mysql_dsn, "--clients", "2", "--repeat", "1", "--yes",
            "--dry-run",
        )  # fmt: skip
    runs, request = documents(done)
    assert [d["environment"]["client"]["protocol"] for d in runs] == ["tcp_loopback", "unix_socket"]
    assert request["vary"] == ["protocol"] and request["repeats"] == STUDY_UUID


def test_config_is_refused_on_firebird_whose_settings_are_its_files():
    done = study(
        "select-update", "--dsn", firebird("study_fb_config").dsn, *SMALL, "--vary", "config",
        "plain;big:DefaultDbCachePages=4096", "--restart-command", "true", "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "Firebird 3 reads its settings from firebird.conf when it starts" in done.stderr


# --- MySQL's way of telling a read-only setting, on MariaDB ---------------------------------


def test_read_only_settings_are_found_the_mysql_way_too(mysql_dsn):
    """MySQL has no information_schema.SYSTEM_VARIABLES: a setting is set to its own value
    and the server's refusal says it is read-only. MariaDB answers with the same errors."""
    from benchhub_agent.study import config
    from benchhub_agent.target import Target

    conn = db.connect(Target.parse(mysql_dsn))
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.innodb_lock_wait_timeout, @@GLOBAL.max_connections")
            before = cur.fetchone()
            found = config.probe_by_setting
            assert found(cur, "innodb_page_size") == (("innodb_page_size",), True)
            assert found(cur, "innodb_lock_wait_timeout") == (("innodb_lock_wait_timeout",), False)
            assert found(cur, "max_connections") == (("max_connections",), False)
            assert found(cur, "no_such_setting_here") == (None, False)
            cur.execute("SELECT @@GLOBAL.innodb_lock_wait_timeout, @@GLOBAL.max_connections")
            assert cur.fetchone() == before  # set to what it was
            assert config._mysql_value(conn, None) == "NULL"
            assert config._mysql_value(conn, 97) == "97"
    finally:
        conn.close()
