"""A PostgreSQL primary and its streaming replica of the test's own, for the tests of
DATABASE_REPLICA_URL: the primary initdb'd in a temporary directory, the replica a
``pg_basebackup -R`` of it, each on a free loopback port, both removed at the end.

Not the shared server on 5432: a base backup of it would copy every database on it, and
it takes replication connections only after an edit of its pg_hba.conf."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.deploy.servers import PrivateCluster


def postgresql_missing() -> str | None:
    """Why these tests cannot run here, or None."""
    tools = ("initdb", "pg_ctl", "pg_basebackup")
    if not any(
        all(os.access(directory / tool, os.X_OK) for tool in tools)
        for directory in Path("/usr/lib/postgresql").glob("*/bin")
    ):
        return f"PostgreSQL's server programs ({', '.join(tools)}) are not installed"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root, and there is no postgres user to run the servers as"
    return None


class StandbyCluster(PrivateCluster):
    """A replica: a base backup of ``primary`` that streams from it (``-R`` writes
    primary_conninfo and standby.signal)."""

    def init_from(self, primary: PrivateCluster) -> None:
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.directory, owner.pw_uid, owner.pw_gid)
        self._as_owner(
            str(self.bin / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
            "-U", "postgres", "-D", str(self.data), "-R", "-X", "stream",
            "--checkpoint=fast", "--no-sync",
        )  # fmt: skip


@dataclass
class StreamingPair:
    primary: PrivateCluster
    replica: StandbyCluster
    database: str

    @property
    def primary_url(self) -> str:
        return f"{self.primary.url}/{self.database}"

    @property
    def replica_url(self) -> str:
        return f"{self.replica.url}/{self.database}"

    def on_replica(self, sql: str):
        with psycopg.connect(self.replica_url, autocommit=True) as conn:
            return conn.execute(sql).fetchone()

    def caught_up(self, limit: float = 60) -> None:
        """Waits until the replica has replayed all the primary has written so far."""
        with psycopg.connect(self.primary_url, autocommit=True) as conn:
            (target,) = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            (behind,) = self.on_replica(
                f"SELECT pg_wal_lsn_diff('{target}', pg_last_wal_replay_lsn())"
            )
            if behind <= 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"the replica did not replay up to {target} within {limit:.0f} s")

    @contextlib.contextmanager
    def replay_paused(self) -> Iterator[None]:
        """The replica receives the primary's changes but does not apply them: what it
        serves meanwhile lags behind the primary, as a busy replica's does for a moment."""
        self.caught_up()
        self.on_replica("SELECT pg_wal_replay_pause()")
        try:
            yield
        finally:
            self.on_replica("SELECT pg_wal_replay_resume()")


@contextlib.contextmanager
def streaming_pair(database: str = "benchhub") -> Iterator[StreamingPair]:
    primary = PrivateCluster()
    replica = StandbyCluster()
    try:
        primary.init()  # initdb's pg_hba.conf takes replication on loopback
        primary.pg_ctl("start")
        with psycopg.connect(f"{primary.url}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        replica.init_from(primary)
        replica.pg_ctl("start")
        pair = StreamingPair(primary, replica, database)
        pair.caught_up()
        yield pair
    finally:
        for cluster in (replica, primary):
            with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
                cluster.pg_ctl("stop", "-m", "immediate")
            shutil.rmtree(cluster.directory, ignore_errors=True)
