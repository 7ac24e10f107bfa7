"""``benchhub-agent study`` on real loop-mounted ext4, xfs and btrfs, real PostgreSQL
and MariaDB: where the data lands, what each run records, what is undone, what is
refused. The upload of a study to the site is proven in tests/agent/test_study_e2e.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from _databases import mariadb, postgresql
from _loops import (
    active_scheduler,
    findmnt,
    loop_mounts,
    loops_of,
    mounts_under,
    needs_loop_devices,
    reachable_folder,
)
from _upload_servers import dead_server
from benchhub_agent import db
from benchhub_agent.benchmarks import _select_update_clients as su
from benchhub_agent.benchmarks._connections import in_own_schema
from benchhub_agent.study import machine, placement
from contract_server import TOKEN, ContractServer

AGENT = [sys.executable, "-m", "benchhub_agent.cli"]
SMALL = ["--clients", "1,3", "--transactions", "120"]


def study(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*AGENT, "study", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )


def documents(done: subprocess.CompletedProcess) -> tuple[list[dict], dict]:
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout)
    return printed["submissions"], printed["study"]


def study_objects() -> tuple[set[str], set[str]]:
    """The PostgreSQL tablespaces and databases a study names as its own."""
    with psycopg.connect(postgresql("study_probe").dsn, autocommit=True) as conn:
        spaces = {r[0] for r in conn.execute("SELECT spcname FROM pg_tablespace")}
        names = {r[0] for r in conn.execute("SELECT datname FROM pg_database")}
    return {s for s in spaces if s.startswith("benchhub_study_")}, {
        n for n in names if n.startswith("benchhub_study_")
    }


@pytest.fixture
def tmp_path():
    """A folder the database servers' users can reach (pytest's own is root's alone)."""
    with reachable_folder() as folder:
        try:
            yield folder
        finally:
            drop_tablespaces_under(folder)


def drop_tablespaces_under(folder: Path) -> None:
    """What a failed study left in PostgreSQL under ``folder``: a tablespace whose
    directory goes with the folder would fail every CHECKPOINT of the shared server."""
    with psycopg.connect(postgresql("study_probe").dsn, autocommit=True) as conn:
        left = conn.execute(
            "SELECT oid, spcname FROM pg_tablespace WHERE pg_tablespace_location(oid) LIKE %s",
            (f"{folder}/%",),
        ).fetchall()
        for oid, name in left:
            for (database,) in conn.execute(
                "SELECT datname FROM pg_database WHERE dattablespace = %s", (oid,)
            ).fetchall():
                conn.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
            conn.execute(f'DROP TABLESPACE "{name}"')


@pytest.fixture
def mounts(tmp_path) -> dict[str, str]:
    with loop_mounts(tmp_path) as mounted:
        yield mounted


def assert_storage_is_the_directorys(doc: dict, directory: str) -> None:
    storage = doc["environment"]["storage"]
    shown = findmnt(directory)
    assert storage["filesystem"] == shown["fstype"]
    assert sorted(storage["mount_options"]) == sorted(set(shown["options"].split(",")))
    assert storage["io_scheduler"] == active_scheduler(shown["source"])


# --- the study over three real filesystems ------------------------------------------------


@needs_loop_devices
def test_postgresql_study_records_each_directorys_filesystem_interleaved(mounts, outbox_dir):
    before = study_objects()
    on = [mounts["xfs"], mounts["btrfs"], mounts["ext4"]]  # not in alphabetical order
    done = study(
        "select-update", "--dsn", postgresql("study_pg").dsn, *SMALL, "--repeat", "2",
        "--vary", "filesystem", "--on", ",".join(on), "--yes", "--dry-run",
    )  # fmt: skip
    runs, request = documents(done)
    kinds = [doc["environment"]["storage"]["filesystem"] for doc in runs]
    assert kinds == ["xfs", "btrfs", "ext4", "xfs", "btrfs", "ext4"]  # ABCABC
    for doc, directory in zip(runs, on * 2, strict=True):
        assert_storage_is_the_directorys(doc, directory)
        assert "study cell" in doc["runs"][0]["note"]
    # The server's own data directory is on none of them.
    server = db.describe(postgresql("study_pg"))
    assert os.path.realpath(server.data_directory) not in map(os.path.realpath, on)
    assert request["vary"] == ["filesystem"] and request["reference"] == "xfs"
    assert request["submissions"] == [doc["uuid"] for doc in runs]
    assert "ABCABC" in request["write_up"]
    assert study_objects() == before
    for directory in on:
        assert os.listdir(directory) in ([], ["lost+found"])


@needs_loop_devices
def test_mariadb_study_records_each_directorys_filesystem(mounts, outbox_dir):
    on = [mounts["btrfs"], mounts["ext4"], mounts["xfs"]]
    done = study(
        "select-update", "--dsn", mariadb("study_my").dsn, *SMALL, "--repeat", "1",
        "--vary", "filesystem", "--on", ",".join(on), "--yes", "--dry-run",
    )  # fmt: skip
    runs, _ = documents(done)
    assert [doc["environment"]["storage"]["filesystem"] for doc in runs] == ["btrfs", "ext4", "xfs"]
    for doc, directory in zip(runs, on, strict=True):
        assert_storage_is_the_directorys(doc, directory)
        assert doc["environment"]["database"]["engine"] == "mariadb"
    for directory in on:
        assert os.listdir(directory) in ([], ["lost+found"])


@needs_loop_devices
def test_postgresql_tables_of_a_cell_are_files_on_its_directory(mounts):
    target = postgresql("study_place")
    changes = machine.Changes()
    place = machine.place_of(mounts["btrfs"])
    owner = placement.server_owner(db.describe(target), target)
    try:
        cell = placement.place_postgresql(target, place, "t1x9", 4, owner, changes)
        workspace = in_own_schema(cell, "select-update")
        su.reset_table(workspace)
        with psycopg.connect(**db.postgresql_conninfo(workspace)) as conn:
            (relative,) = conn.execute("SELECT pg_relation_filepath(%s)", (su.TABLE,)).fetchone()
            (location,) = conn.execute(
                "SELECT pg_tablespace_location(dattablespace) FROM pg_database "
                "WHERE datname = current_database()"
            ).fetchone()
        assert location.startswith(mounts["btrfs"] + "/benchhub-study-t1x9")
        assert relative.startswith("pg_tblspc/")
        # The file itself, on the btrfs mount: the tablespace's link leads there.
        assert os.path.realpath(os.path.join(server_data(target), relative)).startswith(
            mounts["btrfs"] + "/"
        )
    finally:
        assert changes.undo_all() == []
    assert os.listdir(mounts["btrfs"]) == []


def server_data(target) -> str:
    return db.describe(target).data_directory


@needs_loop_devices
def test_mariadb_table_of_a_cell_is_a_file_on_its_directory(mounts):
    target = mariadb("study_place")
    changes = machine.Changes()
    place = machine.place_of(mounts["xfs"])
    owner = placement.server_owner(db.describe(target), target)
    try:
        cell = placement.place_mysql(target, place, "q7w2", owner, changes)
        workspace = in_own_schema(cell, "select-update")
        su.reset_table(workspace)
        files = list(Path(mounts["xfs"]).rglob("*.ibd"))
        assert [f.name for f in files] == [f"{su.TABLE}.ibd"]
        assert files[0].parent.parent.name == "benchhub-study-q7w2"
        conn = db.connect(workspace)
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE `{workspace.database}`")
        conn.close()
    finally:
        assert changes.undo_all() == []
    assert os.listdir(mounts["xfs"]) == []


# --- the machine restored ----------------------------------------------------------------


@needs_loop_devices
def test_format_scratch_makes_and_removes_everything_over_three_filesystems(tmp_path, outbox_dir):
    images = tmp_path / "images"
    before = study_objects()
    done = study(
        "select-update", "--dsn", postgresql("study_scratch").dsn, *SMALL, "--repeat", "1",
        "--vary", "filesystem", "--format-scratch", str(images), "--fs", "btrfs,ext4,xfs",
        "--scratch-size", "330", "--yes", "--dry-run",
    )  # fmt: skip
    runs, _ = documents(done)
    assert [d["environment"]["storage"]["filesystem"] for d in runs] == ["btrfs", "ext4", "xfs"]
    assert not images.exists()
    assert loops_of(tmp_path) == [] and mounts_under(tmp_path) == []
    assert study_objects() == before


def interrupted_at_second_run(args: list[str]) -> subprocess.CompletedProcess:
    """The study, stopped by SIGINT once its second run has begun."""
    process = subprocess.Popen(
        [*AGENT, "study", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith("study run 2/"):
            process.send_signal(signal.SIGINT)
            break
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, out, "".join(seen) + err)


@needs_loop_devices
def test_sigint_removes_the_scratch_filesystems_tablespaces_and_databases(tmp_path, outbox_dir):
    images = tmp_path / "scratch"
    before = study_objects()
    done = interrupted_at_second_run([
        "select-update", "--dsn", postgresql("study_sigint").dsn, "--clients", "2",
        "--transactions", "40000", "--repeat", "3", "--vary", "filesystem",
        "--format-scratch", str(images), "--fs", "xfs,ext4", "--scratch-size", "330", "--yes",
    ])  # fmt: skip
    assert done.returncode == 130, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("study interrupted:") and "undone" in last
    assert not images.exists()
    assert loops_of(tmp_path) == [] and mounts_under(tmp_path) == []
    assert study_objects() == before


@needs_loop_devices
def test_sigint_restores_mount_options_and_scheduler(tmp_path, outbox_dir):
    with loop_mounts(tmp_path, ("ext4",)) as mounted:
        directory = mounted["ext4"]
        options, source = findmnt(directory)["options"], findmnt(directory)["source"]
        scheduler = active_scheduler(source)
        other = "mq-deadline" if scheduler != "mq-deadline" else "none"
        done = interrupted_at_second_run([
            "select-update", "--dsn", mariadb("study_remount").dsn, "--clients", "2",
            "--transactions", "40000", "--repeat", "2", "--on", directory,
            "--vary", "mount-options", "noatime,sync;strictatime",
            "--vary", "io-scheduler", f"{other};{scheduler}", "--yes",
        ])  # fmt: skip
        assert done.returncode == 130, done.stderr[-3000:]
        assert findmnt(directory)["options"] == options
        assert active_scheduler(source) == scheduler
        assert os.listdir(directory) == ["lost+found"]


# --- refusals: nothing changed ------------------------------------------------------------


def test_a_directory_that_is_not_a_mount_point_is_refused_by_name(tmp_path, pg_dsn):
    plain = tmp_path / "plain-dir"
    plain.mkdir()
    done = study(
        "select-update",
        "--dsn",
        pg_dsn,
        *SMALL,
        "--repeat",
        "1",
        "--vary",
        "filesystem",
        "--on",
        f"/,{plain}",
        "--yes",
        "--dry-run",
    )
    assert done.returncode == 2
    assert f"{plain} is not a mount point" in done.stderr
    assert "study run" not in done.stderr


@needs_loop_devices
def test_remount_without_root_is_refused_before_anything_changes(tmp_path, mysql_dsn):
    with loop_mounts(tmp_path, ("xfs",)) as mounted:
        options = findmnt(mounted["xfs"])["options"]
        done = study(
            "select-update", "--dsn", mysql_dsn, *SMALL, "--repeat", "1", "--on", mounted["xfs"],
            "--vary", "mount-options", "defaults;noatime", "--yes", "--dry-run",
            env={"BENCHHUB_AS_NON_ROOT": "1"},
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr.strip() == (
            f"benchhub-agent: --vary mount-options remounts {mounted['xfs']}: it needs root"
        )
        assert findmnt(mounted["xfs"])["options"] == options
        assert os.listdir(mounted["xfs"]) == []


def test_format_scratch_without_root_is_refused(tmp_path, pg_dsn):
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "1", "--vary", "filesystem",
        "--format-scratch", str(tmp_path / "img"), "--fs", "ext4,xfs", "--yes", "--dry-run",
        env={"BENCHHUB_AS_NON_ROOT": "1"},
    )  # fmt: skip
    assert done.returncode == 2
    assert "--format-scratch attaches loop devices" in done.stderr and "needs root" in done.stderr
    assert not (tmp_path / "img").exists()


@needs_loop_devices
def test_a_missing_mkfs_is_refused_naming_its_package(tmp_path, pg_dsn):
    assert subprocess.run(["which", "mkfs.nilfs2"], capture_output=True).returncode != 0
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "1", "--vary", "filesystem",
        "--format-scratch", str(tmp_path / "img"), "--fs", "ext4,nilfs2", "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "mkfs.nilfs2 not found: install nilfs-tools" in done.stderr
    assert not (tmp_path / "img").exists() and loops_of(tmp_path) == []


@needs_loop_devices
def test_a_directory_the_server_cannot_reach_is_refused_naming_the_folder(
    tmp_path_factory, mysql_dsn
):
    closed = tmp_path_factory.mktemp("closed")
    closed.chmod(0o700)
    with loop_mounts(closed, ("btrfs",)) as mounted:
        done = study(
            "select-update", "--dsn", mysql_dsn, *SMALL, "--repeat", "1",
            "--on", mounted["btrfs"], "--vary", "io-scheduler", "--yes", "--dry-run",
        )  # fmt: skip
        assert os.listdir(mounted["btrfs"]) == []
    assert done.returncode == 2, done.stderr
    assert f"cannot reach {mounted['btrfs']}: {closed} does not let it through (mode 700)" in (
        done.stderr
    )


@needs_loop_devices
def test_two_directories_of_one_filesystem_are_refused(tmp_path, pg_dsn):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        loop_mounts(tmp_path / "a", ("ext4",)) as first,
        loop_mounts(tmp_path / "b", ("ext4",)) as second,
    ):
        done = study(
            "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "1", "--vary", "filesystem",
            "--on", f"{first['ext4']},{second['ext4']}", "--yes", "--dry-run",
        )  # fmt: skip
    assert done.returncode == 2
    assert "are both ext4: the filesystem would not vary between them" in done.stderr


def test_a_mount_option_that_a_remount_cannot_take_back_is_refused(pg_dsn):
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "1", "--on", "/",
        "--vary", "mount-options", "defaults;commit=60", "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "'commit=60' is not one the agent can set and take back" in done.stderr


@needs_loop_devices
def test_the_plan_is_shown_and_nothing_runs_unless_confirmed(mounts, pg_dsn):
    done = subprocess.run(
        [*AGENT, "study", "select-update", "--dsn", pg_dsn, "--clients", "1,2,4",
         "--transactions", "3000", "--repeat", "2", "--vary", "filesystem",
         "--on", f"{mounts['ext4']},{mounts['btrfs']}"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "2 cells x 2 = 4 runs" in done.stdout and "order: ABAB" in done.stdout
    # 4 runs x (3 points x 3000 transactions at the guessed 2000/s + 3 s).
    assert "estimated time: about 30 s" in done.stdout
    assert "A  filesystem=ext4" in done.stdout
    assert "create a tablespace and a database" in done.stdout
    assert "not confirmed, nothing changed" in done.stderr
    assert os.listdir(mounts["ext4"]) == ["lost+found"] and os.listdir(mounts["btrfs"]) == []


# --- --vary config: server settings applied per cell, restored afterwards -----------------


def postgresql_auto_conf(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT name, setting FROM pg_file_settings "
            "WHERE sourcefile LIKE '%postgresql.auto.conf' ORDER BY name"
        ).fetchall()


def test_postgresql_config_profiles_are_recorded_and_the_settings_restored(pg_dsn, outbox_dir):
    before = postgresql_auto_conf(pg_dsn)
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "2", "--vary", "config",
        "stock;few:commit_siblings=3,commit_delay=7", "--yes", "--dry-run",
    )  # fmt: skip
    runs, request = documents(done)
    profiles = [doc["environment"]["database"]["config_profile"] for doc in runs]
    assert profiles == ["stock", "few", "stock", "few"]
    few = runs[1]["environment"]["database"]["settings"]
    assert few["commit_siblings"] == "3" and few["commit_delay"] == "7"
    assert "commit_siblings" not in runs[0]["environment"]["database"]["settings"]
    assert request["vary"] == ["config_profile"] and request["reference"] == "stock"
    assert "Differed between runs" not in request["write_up"]
    assert postgresql_auto_conf(pg_dsn) == before


def test_mariadb_config_profiles_are_set_globally_and_restored(mysql_dsn, outbox_dir):
    conn = db.connect(db_target(mysql_dsn))
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.innodb_lock_wait_timeout")
        (original,) = cur.fetchone()
    done = study(
        "select-update", "--dsn", mysql_dsn, *SMALL, "--repeat", "1", "--vary", "config",
        "default;patient:innodb_lock_wait_timeout=97", "--yes", "--dry-run",
    )  # fmt: skip
    runs, _ = documents(done)
    # The last cell sets the value: only the restore afterwards takes it back.
    assert [d["environment"]["database"]["config_profile"] for d in runs] == ["default", "patient"]
    assert runs[1]["environment"]["database"]["settings"]["innodb_lock_wait_timeout"] == "97"
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.innodb_lock_wait_timeout")
        assert cur.fetchone()[0] == original
    conn.close()


def db_target(dsn: str):
    from benchhub_agent.target import Target

    return Target.parse(dsn)


def test_a_setting_that_needs_a_restart_is_refused(pg_dsn, mysql_dsn):
    before = postgresql_auto_conf(pg_dsn)
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "1", "--vary", "config",
        "default;big:shared_buffers=256MB", "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "benchhub-agent: --vary config: shared_buffers takes effect only when the server "
        "restarts; a study restarts it only with --restart-command CMD"
    )
    assert postgresql_auto_conf(pg_dsn) == before
    done = study(
        "select-update", "--dsn", mysql_dsn, *SMALL, "--repeat", "1", "--vary", "config",
        "default;big:innodb_page_size=32768", "--yes", "--dry-run",
    )  # fmt: skip
    assert done.returncode == 2
    assert "innodb_page_size is set only where the server starts" in done.stderr


# --- upload: the runs through the outbox, the study only when they are all stored --------


def kept_studies(outbox_dir) -> list[dict]:
    return [json.loads(p.read_text()) for p in (outbox_dir.parent / "studies").glob("*.json")]


def test_runs_that_cannot_be_sent_stay_in_the_outbox_and_the_study_is_kept(pg_dsn, outbox_dir):
    done = study(
        "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "1", "--vary", "config",
        "plain;slow:commit_delay=11", "--yes", "--upload", "--server", dead_server(),
        "--token", TOKEN, env={"BENCHHUB_BACKOFF": "0.05,0.05"},
    )  # fmt: skip
    assert done.returncode == 3, done.stderr[-2000:]
    kept = sorted(p.stem for p in outbox_dir.glob("*.json"))
    assert len(kept) == 2
    (request,) = kept_studies(outbox_dir)
    # Once 'push' has sent them, the study kept names exactly these runs.
    assert sorted(request["submissions"]) == kept and request["vary"] == ["config_profile"]
    assert "2 run(s) are still in the outbox, so the study is not posted" in done.stderr


def test_a_study_the_server_refuses_is_kept_and_its_runs_are_stored_once(pg_dsn, outbox_dir):
    with ContractServer() as server:
        done = study(
            "select-update", "--dsn", pg_dsn, *SMALL, "--repeat", "2", "--vary", "config",
            "plain;slow:commit_delay=11", "--yes", "--upload", "--server", server.url,
            "--token", TOKEN, env={"BENCHHUB_BACKOFF": "0.05,0.05"},
        )  # fmt: skip
        stored = sorted(server.stored)
    assert done.returncode == 4, done.stderr[-2000:]
    assert len(stored) == 4 and list(outbox_dir.glob("*.json")) == []
    (request,) = kept_studies(outbox_dir)
    assert sorted(request["submissions"]) == stored
    assert "the server did not store the study (400" in done.stderr
