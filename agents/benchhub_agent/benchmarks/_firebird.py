"""Firebird through its own command-line tools (isql-fb, gbak, fbsvcmgr), no Python driver.

The backup benchmark times gbak, so the agent needs nothing else: Debian's
firebird3.0-utils brings isql-fb for building the dataset and fbsvcmgr for asking the
server what it is. Credentials travel in ISC_USER/ISC_PASSWORD, never on a command line
that ``ps`` would show to other users.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .base import Target

DEBIAN_PASSWORD_FILE = Path("/etc/firebird/3.0/SYSDBA.password")
DEBIAN_CONFIG_FILE = Path("/etc/firebird/3.0/firebird.conf")
# Debian keeps each major version's files apart: /etc/firebird/<major>.<minor>/.
DEBIAN_ETC = Path("/etc/firebird")
_VERSION = re.compile(r"V(\d+)\.(\d+)")
DEFAULT_PORT = 3050
ISQL_NAMES = ("isql-fb", "isql")  # Debian renames isql to avoid unixODBC's


class FirebirdError(RuntimeError):
    pass


@dataclass(frozen=True)
class FirebirdDatabase:
    """Where a Firebird database is and who may open it."""

    path: str
    host: str | None
    port: int | None
    user: str
    password: str = field(repr=False)

    @classmethod
    def from_target(cls, target: Target) -> FirebirdDatabase:
        if target.engine != "firebird":
            raise ValueError(f"not a firebird:// target: {target.engine}")
        path = target.database if target.database.startswith("/") else f"/{target.database}"
        password = target.password or os.environ.get("ISC_PASSWORD") or debian_password()
        if not password:
            raise FirebirdError(
                "firebird: no password in --dsn, ISC_PASSWORD or "
                f"{DEBIAN_PASSWORD_FILE} (readable by root)"
            )
        return cls(path, target.host, target.port, target.user or "SYSDBA", password)

    @property
    def is_local_file(self) -> bool:
        """Whether gbak on this machine can open the file itself (the local protocol)."""
        return self.host in (None, "localhost", "127.0.0.1", "::1")

    def server(self) -> str:
        """host[/port] as Firebird's connection strings spell it."""
        host = self.host or "localhost"
        if self.port and self.port != DEFAULT_PORT:
            return f"{host}/{self.port}"
        return host

    def tcp(self) -> str:
        return f"{self.server()}:{self.path}"

    def service_manager(self) -> str:
        return f"{self.server()}:service_mgr"

    def environment(self) -> dict[str, str]:
        return {**os.environ, "ISC_USER": self.user, "ISC_PASSWORD": self.password}


def debian_password() -> str | None:
    """The SYSDBA password Debian's package generated, when this user may read it."""
    try:
        text = DEBIAN_PASSWORD_FILE.read_text()
    except OSError:
        return None
    match = re.search(r'^ISC_PASSWORD="?([^"\n]*)"?', text, re.MULTILINE)
    return match.group(1) if match else None


def tool(name: str) -> str:
    names = ISQL_NAMES if name == "isql" else (name,)
    for candidate in names:
        found = shutil.which(candidate)
        if found:
            return found
    raise FirebirdError(f"firebird: {name} not found on PATH (Debian: firebird3.0-utils)")


def isql(db: FirebirdDatabase, script: str, *, connect: bool = True) -> str:
    """Run an isql script; with ``connect``, against the database over TCP."""
    argv = [tool("isql"), "-q", "-b"]  # -b: stop at the first error, exit code says so
    if connect:
        argv.append(db.tcp())
    completed = subprocess.run(  # noqa: S603 - isql from PATH, arguments are ours
        argv, input=script, env=db.environment(), capture_output=True, text=True
    )
    if completed.returncode != 0:
        raise FirebirdError(f"isql failed: {completed.stderr.strip() or completed.stdout}")
    return completed.stdout


def query_values(db: FirebirdDatabase, select: str) -> list[str]:
    """The first row of a SELECT as text, one value per column."""
    out = isql(db, f"SET LIST ON;\n{select};\n")
    return [line.split(None, 1)[1] if " " in line.strip() else "" for line in _list_lines(out)]


def _list_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.strip()]


OWNER_TABLE = "BENCHHUB_OWNER"


def recreate(db: FirebirdDatabase, mark: str, page_size: int = 8192) -> None:
    """Drop the database if it carries ``mark`` (a database without it is someone else's:
    refused), then create it empty through the server, so that the file belongs to the
    server's user as any other database would, and mark it."""
    if exists(db):
        if not is_marked(db, mark):
            raise FirebirdError(f"firebird: {db.path} is not a database benchhub-agent made")
        drop(db)
    quoted = db.tcp().replace("'", "''")
    note = mark.replace("'", "''")
    # One script, so that no file is left unmarked between two commands.
    isql(
        db,
        f"CREATE DATABASE '{quoted}' PAGE_SIZE {int(page_size)} DEFAULT CHARACTER SET UTF8;\n"
        f"CREATE TABLE {OWNER_TABLE} (note varchar(200));\nCOMMIT;\n"
        f"INSERT INTO {OWNER_TABLE} VALUES ('{note}');\nCOMMIT;\n",
        connect=False,
    )


def drop(db: FirebirdDatabase) -> None:
    """Drop ``db``, a database of the agent's own. A client stopped in the middle of a call
    (Ctrl-C) keeps its attachment until its process exits, and Firebird drops no database
    in use: the file is then shut down to single-user mode, which ends every other
    attachment (all of them the agent's: the file is its own), and dropped."""
    try:
        isql(db, "DROP DATABASE;\n")
        return
    except FirebirdError as exc:
        if "in use" not in str(exc):
            raise
    completed = subprocess.run(  # noqa: S603 - fbsvcmgr from PATH, arguments are ours
        [tool("fbsvcmgr"), db.service_manager(), "action_properties", "dbname", db.path,
         "prp_shutdown_mode", "prp_sm_single", "prp_force_shutdown", "0"],
        env=db.environment(),
        capture_output=True,
        text=True,
    )  # fmt: skip
    if completed.returncode != 0:
        raise FirebirdError(f"fbsvcmgr shutdown: {completed.stderr.strip() or completed.stdout}")
    isql(db, "DROP DATABASE;\n")


def table_names(db: FirebirdDatabase) -> set[str]:
    """The user tables of ``db``, as Firebird names them (upper case)."""
    out = isql(
        db,
        "SET LIST ON;\nSELECT TRIM(rdb$relation_name) AS name FROM rdb$relations"
        " WHERE rdb$system_flag = 0;\n",
    )
    return {line.split(None, 1)[1].strip() for line in _list_lines(out) if " " in line.strip()}


def is_marked(db: FirebirdDatabase, mark: str | None = None) -> bool:
    """Whether ``db`` holds the agent's mark (``mark``, or the one _connections writes)."""
    if mark is None:
        from ._connections import OWNER_MARK as mark
    try:
        values = query_values(db, f"SELECT note FROM {OWNER_TABLE}")  # noqa: S608 - constant
    except FirebirdError:
        return False
    return values == [mark]


def exists(db: FirebirdDatabase) -> bool:
    try:
        isql(db, "SELECT 1 FROM rdb$database;\n")
    except FirebirdError:
        return False
    return True


def server_version(db: FirebirdDatabase) -> str:
    """The server's own version text as the services API reports it."""
    completed = subprocess.run(  # noqa: S603 - fbsvcmgr from PATH, arguments are ours
        [tool("fbsvcmgr"), db.service_manager(), "info_server_version"],
        env=db.environment(),
        capture_output=True,
        text=True,
    )
    match = re.search(r"Server version:\s*(.+)", completed.stdout)
    if completed.returncode != 0 or not match:
        raise FirebirdError(f"fbsvcmgr: {completed.stderr.strip() or completed.stdout}")
    return match.group(1).strip()


def tool_version(name: str) -> str:
    completed = subprocess.run(  # noqa: S603 - a Firebird tool from PATH
        [tool(name), "-z"], capture_output=True, text=True
    )
    first = (completed.stdout or completed.stderr).splitlines()
    return first[0].split("version", 1)[-1].strip() if first else "unknown"


def debian_config_file(version: str | None) -> Path:
    """Debian's firebird.conf of the server whose version text (``LI-V4.0.5.3140 ...``)
    is given; Firebird 3's when the version is not known."""
    match = _VERSION.search(version or "")
    if not match:
        return DEBIAN_CONFIG_FILE
    return DEBIAN_ETC / f"{match.group(1)}.{match.group(2)}" / "firebird.conf"


def server_mode(version: str | None = None) -> str | None:
    """SuperServer, Classic or SuperClassic, from the local firebird.conf (Firebird 3
    reports it nowhere else); None when the file is not readable."""
    try:
        text = debian_config_file(version).read_text()
    except OSError:
        return None
    match = re.search(r"^\s*ServerMode\s*=\s*(\w+)", text, re.MULTILINE)
    mode = (match.group(1) if match else "Super").lower()
    return {"super": "superserver", "classic": "classic", "superclassic": "superclassic"}.get(mode)


_SERVER_NAMES = ("firebird", "fbserver", "fb_smp_server")


def server_pid(port: int | None = None) -> int | None:
    """The Firebird server process on this machine that listens on `port` (for --pin and
    the sort-file watch), if any: with two servers running, the first one found would be
    the wrong one half the time."""
    sockets = _listening_sockets(port or DEFAULT_PORT)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.path.basename(os.readlink(entry / "exe")) not in _SERVER_NAMES:
                continue
            descriptors = os.listdir(entry / "fd")
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(entry / "fd" / descriptor) in sockets:
                    return int(entry.name)
            except OSError:
                continue
    return None


def _listening_sockets(port: int) -> set[str]:
    """The `socket:[inode]` links of the TCP sockets listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if fields[3] == "0A" and local_port == port:  # 0A: LISTEN
                found.add(f"socket:[{fields[9]}]")
    return found
