"""external-sort on the real Firebird 3: the sort files' bytes, and how they grow when the
sort memory shrinks.

Firebird's sort memory is TempCacheLimit, one setting of the whole server, so "smaller"
needs a server of its own: the module starts a second Firebird 3 from Debian's package,
as the firebird user, with its own firebird.conf (TempCacheLimit 1M, its own port, lock
and temp folders, a copy of the security database), and ends it by its process id.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import _databases as dbs
import pytest
from benchhub_agent.benchmarks import _firebird as fb
from benchhub_agent.benchmarks import external_sort
from benchhub_agent.benchmarks.base import SilentProgress, Target
from benchhub_agent.replay import CannotReplay, replay
from test_like import published_run

DEBIAN_ROOT = Path("/usr/lib/x86_64-linux-gnu/firebird/3.0")
SECURITY_DATABASE = Path("/var/lib/firebird/3.0/system/security3.fdb")
SHARED = ("UDF", "intl", "lib", "plugins", "firebird.msg", "fbtrace.conf", "plugins.conf")
ROWS = 60_000  # about 4 MB to sort: past 1M, well inside the shared server's 64M


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def small_cache_server():
    """A Firebird 3 whose TempCacheLimit is 1M: (its port, its data folder)."""
    with firebird_server("1M") as server:
        yield server


@pytest.fixture(scope="module")
def large_cache_server():
    """One with Debian's 64M: a server of its own too, since the bytes read are the server
    process's, and the shared server's serve other tests' databases meanwhile."""
    with firebird_server("64M") as server:
        yield server


@contextlib.contextmanager
def firebird_server(temp_cache_limit: str) -> Iterator[tuple[int, Path]]:
    """A Firebird 3 of the test's own with this TempCacheLimit: (its port, its data folder)."""
    root = Path(tempfile.mkdtemp(prefix=f"bh-firebird-{temp_cache_limit}-", dir="/tmp"))
    root.chmod(0o755)  # the server's user walks into it
    for folder in ("tmp", "lock", "data"):
        (root / folder).mkdir()
    for name in SHARED:
        (root / name).symlink_to(DEBIAN_ROOT / name)
    shutil.copy(SECURITY_DATABASE, root / "security3.fdb")  # the same SYSDBA password
    (root / "databases.conf").write_text(f"security.db = {root}/security3.fdb\n")
    port = free_port()
    config = Path("/etc/firebird/3.0/firebird.conf").read_text()
    temp = root / "tmp"
    (root / "firebird.conf").write_text(
        f"{config}\nRemoteServicePort = {port}\nTempCacheLimit = {temp_cache_limit}\n"
        f"TempDirectories = {temp}\nSecurityDatabase = {root}/security3.fdb\n"
    )
    shutil.chown(root, "firebird", "firebird")
    for path in root.rglob("*"):
        if not path.is_symlink():
            shutil.chown(path, "firebird", "firebird")
    server = subprocess.Popen(  # Debian's server, run as its own user
        ["/usr/sbin/firebird"],
        env={"PATH": os.environ["PATH"], "FIREBIRD": str(root), "FIREBIRD_LOCK": f"{root}/lock"},
        user="firebird",
        group="firebird",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "the test's Firebird server exited"
                assert time.monotonic() < deadline, "the test's Firebird server never answered"
                time.sleep(0.2)
        yield port, root / "data"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()  # SIGTERM waits for attachments; nothing of this server is kept
            server.wait(10)
        shutil.rmtree(root)


def sort(target: Target, **values) -> external_sort.BenchmarkResult:
    options = dbs.options(**{"repeat": 1, "rows": ROWS, "sort_memory": None, **values})
    return external_sort.run(target, options, SilentProgress())


def figure(result: external_sort.BenchmarkResult, metric: str) -> float:
    (found,) = [m for m in result.measurements if m.metric == metric]
    return found.value


def written(result: external_sort.BenchmarkResult) -> float:
    return figure(result, "temp_bytes_written")


def read(result: external_sort.BenchmarkResult) -> float:
    return figure(result, "temp_bytes_read")


def test_the_sort_files_grow_when_the_servers_sort_memory_is_smaller(
    small_cache_server, large_cache_server
):
    port, folder = small_cache_server
    small = Target.parse(f"firebird://SYSDBA@localhost:{port}/{folder}/sort.fdb")
    large_port, large_folder = large_cache_server
    large = Target.parse(f"firebird://SYSDBA@localhost:{large_port}/{large_folder}/sort.fdb")

    spilled = sort(small)
    in_memory = sort(large)

    assert spilled.parameters == {"rows": ROWS, "sort_memory": "1M", "fetch": "all_rows"}
    assert in_memory.parameters["sort_memory"] == "64M"  # Debian's default
    # The same rows, sorted with 1 MB of temp cache instead of 64 MB: the runs go to files.
    assert written(spilled) > 1_000_000
    assert written(spilled) > written(in_memory)
    # Read back while the client fetches: about the runs it wrote (the files' sizes are
    # whole allocation chunks), at most a few merge passes over them; the in-memory sort
    # reads next to nothing.
    assert written(spilled) / 2 < read(spilled) < 4 * written(spilled)
    assert read(in_memory) < read(spilled) / 4
    assert spilled.database["settings"]["TempDirectories"] == str(folder.parent / "tmp")
    assert "fb_sort_* files" in " ".join(spilled.notes)
    assert dbs.document_errors(spilled) == []
    assert not any(folder.glob("*_benchhub_external_sort.fdb"))  # removed after the run


def test_a_session_sort_memory_is_refused_on_firebird_before_anything_is_made():
    target = dbs.firebird("sort_memory_refused")
    with pytest.raises(ValueError, match="Firebird has no sort memory per session"):
        sort(target, sort_memory="64kB")
    assert not os.path.exists(
        f"{dbs.FIREBIRD_DIR}/{Path(target.database).stem}_benchhub_external_sort.fdb"
    )


def test_firebirds_server_wide_sort_memory_is_kept_only_between_firebirds():
    run = published_run(
        "external-sort",
        {"rows": 500, "sort_memory": "64M", "fetch": "all_rows"},
        server={"engine": "firebird"},
    )
    plan = replay(run, "firebird", set())
    assert plan.options == ["--rows", "500", "--repeat", "1"]
    assert any("TempCacheLimit 64M" in note for note in plan.notes)
    with pytest.raises(CannotReplay, match="Firebird's server-wide TempCacheLimit"):
        replay(run, "postgresql", set())
    postgresql = published_run("external-sort", {"rows": 500, "sort_memory": "64kB"})
    with pytest.raises(CannotReplay, match="Firebird cannot set a session's sort memory"):
        replay(postgresql, "firebird", set())


def test_the_server_process_is_the_one_listening_on_the_targets_port(small_cache_server):
    """Two Firebird servers run here: the shared one and this module's. Each target's
    server process (pinned, and watched for sort files) is the one on its own port."""
    port, folder = small_cache_server
    for target in (
        Target.parse(f"firebird://SYSDBA@localhost:{port}/{folder}/whose.fdb"),
        dbs.firebird("whose_server"),
    ):
        database = fb.FirebirdDatabase.from_target(target)
        fb.recreate(database, "whose server")
        try:
            (attached_to,) = fb.query_values(
                database,
                "SELECT mon$server_pid FROM mon$attachments"
                " WHERE mon$attachment_id = CURRENT_CONNECTION",
            )
            assert fb.server_pid(target.port) == int(attached_to)
        finally:
            fb.drop(database)
