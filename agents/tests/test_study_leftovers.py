"""A study killed by SIGKILL: what it changed is journaled, a new study refuses to start
over it, and ``study --undo-leftovers`` undoes it — on real loop-mounted filesystems and
a real PostgreSQL (tablespaces, databases, ALTER SYSTEM)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from _databases import postgresql
from _loops import loops_of, mounts_under, needs_loop_devices, reachable_folder
from benchhub_agent.study import leftovers, machine
from test_study import drop_tablespaces_under, postgresql_auto_conf, study_objects

AGENT = [sys.executable, "-m", "benchhub_agent.cli"]


def agent(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AGENT, *args], capture_output=True, text=True, timeout=300)


def dead_pid() -> int:
    """The pid of a process that has ended (and so a study that no longer runs)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def journal_of(pid: int, steps: list[leftovers.Step], folder: Path) -> leftovers.Journal:
    head = leftovers.Journal("benchhub-agent study select-update …", folder).head
    journal = leftovers.Journal.resumed(folder / f"{pid}.json", {**head, "pid": pid})
    journal.write(steps)
    return journal


# --- the journal, on its own ----------------------------------------------------------------


def test_a_failed_undo_stays_in_the_journal_and_is_undone_later(tmp_path, outbox_dir):
    made = [tmp_path / name for name in ("first", "second", "third")]
    for folder in made:
        folder.mkdir()
    (made[1] / "a user's file").write_text("kept")  # rmdir of it fails
    changes = machine.Changes(leftovers.Journal("study …", leftovers.folder()))
    for folder in made:
        with changes.made() as register:
            register(f"remove {folder}", "rmdir", path=str(folder))
    assert json.loads(changes.journal.path.read_text())["changes"][2]["args"] == {
        "path": str(made[2])
    }
    assert stat.S_IMODE(changes.journal.path.stat().st_mode) == 0o600  # it holds DSNs
    failures = changes.undo_all()
    assert len(failures) == 1 and failures[0].startswith(f"remove {made[1]}:")
    assert [p.exists() for p in made] == [False, True, False]
    assert changes.undone == 2
    kept = json.loads(changes.journal.path.read_text())["changes"]
    assert [c["args"]["path"] for c in kept] == [str(made[1])]
    # While its study runs, the journal is not a leftover; once it has ended, it is.
    assert leftovers.leftovers() == []
    record = json.loads(changes.journal.path.read_text())
    changes.journal.path.unlink()
    journal_of(dead_pid(), [leftovers.Step(**c) for c in record["changes"]], leftovers.folder())
    assert agent("study", "--undo-leftovers").returncode == 1  # the file is still there
    (made[1] / "a user's file").unlink()
    again = agent("study", "--undo-leftovers")
    assert again.returncode == 0, again.stderr
    assert "every change left behind is undone" in again.stderr
    assert not made[1].exists() and list(leftovers.folder().glob("*.json")) == []


def test_a_reused_pid_does_not_pass_for_the_study_that_wrote_the_journal(tmp_path):
    step = leftovers.Step("remove x", "rmdir", {"path": str(tmp_path / "x")})
    journal = journal_of(os.getpid(), [step], tmp_path)
    assert leftovers.leftovers(tmp_path) == []  # this process: the study still runs
    record = json.loads(journal.path.read_text())
    record["process_start"] = "1"  # the same pid, started at another time
    journal.path.write_text(json.dumps(record))
    assert [found.path for found in leftovers.leftovers(tmp_path)] == [journal.path]


def test_a_journal_that_is_not_one_is_named_and_nothing_runs(tmp_path, outbox_dir):
    leftovers.folder().mkdir(parents=True)
    (leftovers.folder() / "123.json").write_text('{"pid": 123}')
    done = agent("study", "--undo-leftovers")
    assert done.returncode == 2
    assert f"{leftovers.folder() / '123.json'} is not a study's journal" in done.stderr


# --- SIGKILL in the middle of a real study ---------------------------------------------------


@pytest.fixture
def folder(outbox_dir):
    """Undone before outbox_dir's environment goes: the journal is found through it."""
    with reachable_folder() as made:
        try:
            yield made
        finally:
            agent("study", "--undo-leftovers")  # whatever a failed test left
            drop_tablespaces_under(made)


SETTINGS = ("commit_delay", "commit_siblings")


@needs_loop_devices
def test_a_study_killed_with_sigkill_is_undone_by_undo_leftovers(folder, outbox_dir):
    dsn = postgresql("study_leftover").dsn
    conf, objects = postgresql_auto_conf(dsn), study_objects()
    images = folder / "images"
    process = subprocess.Popen(
        [*AGENT, "study", "select-update", "--dsn", dsn, "--clients", "2",
         "--transactions", "3000", "--repeat", "2", "--vary", "filesystem",
         "--format-scratch", str(images), "--fs", "ext4,xfs", "--scratch-size", "330",
         "--vary", "config", "stock;slow:commit_delay=9,commit_siblings=4", "--yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        seen = []
        for line in process.stderr:
            seen.append(line)
            if line.startswith("study run") and "slow" in line:  # its settings are set
                os.killpg(process.pid, signal.SIGKILL)
                break
        process.wait(timeout=60)
        assert process.returncode == -signal.SIGKILL, "".join(seen)[-3000:]
        assert len(mounts_under(images)) == 2 and len(loops_of(images)) == 2
        assert study_objects() != objects
        assert {name for name, _ in postgresql_auto_conf(dsn)} >= set(SETTINGS)

        refused = agent(
            "study", "select-update", "--dsn", dsn, "--clients", "1", "--transactions", "10",
            "--repeat", "1", "--vary", "protocol", "--yes", "--dry-run",
        )  # fmt: skip
        assert refused.returncode == 2
        assert "no longer running) left" in refused.stderr
        assert f"unmount {images}/xfs" in refused.stderr
        assert "benchhub-agent study --undo-leftovers" in refused.stderr

        done = agent("study", "--undo-leftovers")
        assert done.returncode == 0, done.stderr
        assert mounts_under(images) == [] and loops_of(images) == []
        assert not images.exists()
        assert study_objects() == objects
        assert postgresql_auto_conf(dsn) == conf
        assert list(leftovers.folder().glob("*.json")) == []
        assert "no study left" in agent("study", "--undo-leftovers").stderr
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name in SETTINGS:
                conn.execute(f"ALTER SYSTEM RESET {name}")
            conn.execute("SELECT pg_reload_conf()")
