"""A wrong --dsn or a missing privilege is one line naming what to fix, exit 2, no traceback.

Every case is the real server's real refusal: a port nothing listens on, a role
or database that does not exist, a wrong password, a user without the
privilege. ``--debug`` brings the traceback back.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _databases import FIREBIRD_DIR, MYSQL_SERVER, PG_SERVER, database_name
from benchhub_agent.benchmarks import _connections
from benchhub_agent.benchmarks.base import Target

AGENT = [sys.executable, "-m", "benchhub_agent.cli"]
ROOT = Path(__file__).resolve().parents[2]
FIXTURE = "agents/tests/importers/fixtures/pgbench15-tpcb.txt"
SQL_BENCHMARKS = ("tpcb", "select-update", "sql-bench", "backup", "external-sort")
NO_PRIVILEGES = "bh_agent_noprivs"  # may log in, may not create anything


def agent(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AGENT, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def one_line_usage_error(done: subprocess.CompletedProcess) -> str:
    """The single line the agent printed, after checking status, stdout and no traceback."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("benchhub-agent: ")
    return lines[0]


def run(benchmark: str, dsn: str) -> subprocess.CompletedProcess:
    return agent("run", benchmark, "--dsn", dsn, "--repeat", "1", "--dry-run")


@pytest.fixture(scope="module")
def unprivileged() -> Iterator[dict[str, str]]:
    """DSNs of a user that may connect to a database of ours but create nothing there."""
    import psycopg

    pg_database = database_name("privileges")
    _connections.ensure_database(Target.parse(f"{PG_SERVER}/{pg_database}"))
    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (NO_PRIVILEGES,))
        # Another xdist worker may create it between the look and the CREATE.
        with contextlib.suppress(psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
            if exists.fetchone() is None:
                conn.execute(f"CREATE ROLE {NO_PRIVILEGES} LOGIN")
    maria_database = database_name("privileges")
    _connections.ensure_database(Target.parse(f"{MYSQL_SERVER}/{maria_database}"))
    as_mariadb_root(
        f"CREATE USER IF NOT EXISTS '{NO_PRIVILEGES}'@'%' IDENTIFIED BY 'pw'",
        f"GRANT SELECT ON `{maria_database}`.* TO '{NO_PRIVILEGES}'@'%'",
    )
    try:
        yield {
            "postgresql": f"postgresql://{NO_PRIVILEGES}@127.0.0.1:5432/{pg_database}",
            "mariadb": f"mysql://{NO_PRIVILEGES}:pw@127.0.0.1:3306/{maria_database}",
        }
    finally:
        # The user and the role serve every run; the grant is this run's, and MariaDB
        # keeps it after the database is dropped (conftest.py drops the databases).
        as_mariadb_root(f"REVOKE ALL PRIVILEGES ON `{maria_database}`.* FROM '{NO_PRIVILEGES}'@'%'")


def as_mariadb_root(*statements: str) -> None:
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


# --- PostgreSQL ----------------------------------------------------------------


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_a_postgresql_port_nobody_listens_on_names_host_and_port(benchmark):
    port = free_port()
    line = one_line_usage_error(run(benchmark, f"postgresql://postgres@127.0.0.1:{port}/x"))
    assert f"PostgreSQL at 127.0.0.1:{port} refused the connection" in line
    assert "check the host and port in --dsn" in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_an_unknown_postgresql_role_names_the_user(benchmark):
    line = one_line_usage_error(run(benchmark, "postgresql://no_such_Role@127.0.0.1:5432/x"))
    assert "has no role 'no_such_Role': fix the user in --dsn" in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_an_unknown_postgresql_database_names_the_database(benchmark):
    line = one_line_usage_error(run(benchmark, "postgresql://postgres@127.0.0.1:5432/no_such_db"))
    assert "has no database 'no_such_db': fix the database in --dsn" in line


@pytest.mark.parametrize("benchmark", ("tpcb", "sql-bench", "backup", "external-sort"))
def test_a_postgresql_user_without_create_names_the_privilege(benchmark, unprivileged):
    line = one_line_usage_error(run(benchmark, unprivileged["postgresql"]))
    database = unprivileged["postgresql"].rsplit("/", 1)[1]
    # A benchmark works in a schema of its own: creating it needs CREATE on the database.
    assert f"user '{NO_PRIVILEGES}' lacks a privilege on database {database}" in line
    assert f"GRANT ALL ON DATABASE {database} TO {NO_PRIVILEGES}" in line


# --- MariaDB -----------------------------------------------------------------


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_a_mariadb_port_nobody_listens_on_names_host_and_port(benchmark):
    port = free_port()
    line = one_line_usage_error(run(benchmark, f"mysql://root@127.0.0.1:{port}/test"))
    assert f"MySQL at 127.0.0.1:{port} refused the connection" in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_a_wrong_mariadb_password_names_user_and_password(benchmark, unprivileged):
    dsn = unprivileged["mariadb"].replace(":pw@", ":not-the-password@")
    line = one_line_usage_error(run(benchmark, dsn))
    assert f"refused user '{NO_PRIVILEGES}': fix the user or the password in --dsn" in line
    assert "not-the-password" not in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ("postgresql://postgres@nohost.invalid:5432/x", "unknown host 'nohost.invalid'"),
        ("mysql://root@nohost.invalid:3306/x", "unknown host in --dsn (MySQL at nohost.invalid"),
    ],
)
def test_a_host_that_does_not_resolve_is_named(benchmark, dsn, expected):
    # .invalid never resolves (RFC 2606); the server is not "refusing" anything.
    line = one_line_usage_error(run(benchmark, dsn))
    assert expected in line and "refused" not in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_an_unknown_mariadb_user_without_a_password_names_the_user(benchmark):
    # MariaDB answers 1698, not 1045, when no password was sent.
    line = one_line_usage_error(run(benchmark, "mysql://no_such_user@127.0.0.1:3306/test"))
    assert "refused user 'no_such_user': fix the user, or add its password in --dsn" in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_an_unknown_mariadb_database_names_the_database(benchmark):
    line = one_line_usage_error(run(benchmark, "mysql://root@127.0.0.1:3306/no_such_db"))
    assert "has no database 'no_such_db'" in line
    assert "CREATE DATABASE no_such_db" in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_a_mariadb_user_with_only_select_names_the_refused_command(benchmark, unprivileged):
    """The benchmark works in a database of its own beside the user's: a user who may
    not create it is told which one, and the GRANT that allows it."""
    line = one_line_usage_error(run(benchmark, unprivileged["mariadb"]))
    database = unprivileged["mariadb"].rsplit("/", 1)[1]
    own = f"{database}_benchhub_{benchmark.replace('-', '_')}"
    assert f"user '{NO_PRIVILEGES}' may not create the database {own}" in line
    assert "Access denied" in line and f"GRANT ALL ON `{own}`.* TO '{NO_PRIVILEGES}'" in line


def test_a_mariadb_database_the_user_may_not_use_names_the_grant(unprivileged):
    dsn = unprivileged["mariadb"].rsplit("/", 1)[0] + "/mysql"
    line = one_line_usage_error(run("tpcb", dsn))
    assert f"user '{NO_PRIVILEGES}' may not use database 'mysql'" in line


# --- Firebird ----------------------------------------------------------------


def firebird_dsn(user: str = "SYSDBA", password: str | None = None, port: int = 3050) -> str:
    secret = f":{password}" if password else ""
    path = f"{FIREBIRD_DIR}/{database_name('errors')}.fdb"
    return f"firebird://{user}{secret}@localhost:{port}/{path}"


def test_a_wrong_firebird_password_names_user_and_password():
    line = one_line_usage_error(run("backup", firebird_dsn(password="wrong")))
    assert "Firebird at localhost:3050 refused user 'SYSDBA'" in line
    assert "fix the user or the password in --dsn" in line


def test_an_unknown_firebird_user_is_named():
    line = one_line_usage_error(run("backup", firebird_dsn(user="NOBODY_HERE", password="pw")))
    assert "refused user 'NOBODY_HERE'" in line


def test_a_firebird_port_nobody_listens_on_names_host_and_port():
    port = free_port()
    line = one_line_usage_error(run("backup", firebird_dsn(port=port)))
    assert f"Firebird at localhost:{port} did not accept the connection" in line


def test_a_firebird_host_that_does_not_resolve_is_named():
    # isql says "Unable to complete network request to host ..." for this as
    # for a closed port; "Failed to locate host machine" tells them apart.
    path = f"{FIREBIRD_DIR}/{database_name('errors')}.fdb"
    line = one_line_usage_error(run("backup", f"firebird://SYSDBA@nohost.invalid:3050/{path}"))
    assert "unknown host in --dsn (Firebird at nohost.invalid:3050" in line
    assert "did not accept" not in line


def test_a_firebird_path_in_no_directory_names_the_path():
    """The benchmark's own file goes next to the --dsn one: in a folder that does not
    exist, the file it could not create is named, in that folder."""
    line = one_line_usage_error(run("backup", "firebird://SYSDBA@localhost//no/such/dir/x.fdb"))
    assert "Firebird cannot open or create /no/such/dir/x_benchhub_backup.fdb" in line
    assert "fix the path in --dsn" in line


# --- import --dsn, --debug ----------------------------------------------------------


@pytest.mark.parametrize(
    ("dsn", "expected"),
    [
        ("postgresql://postgres@127.0.0.1:{port}/x", "refused the connection"),
        ("postgresql://no_such_role@127.0.0.1:5432/x", "has no role 'no_such_role'"),
        ("mysql://root@127.0.0.1:3306/no_such_db", "has no database 'no_such_db'"),
        ("mysql://root@127.0.0.1:{port}/x", "refused the connection"),
        ("mysql://root@nohost.invalid:3306/x", "unknown host in --dsn (MySQL at nohost.invalid"),
        ("postgresql://postgres@nohost.invalid:5432/x", "unknown host 'nohost.invalid'"),
        ("mysql://no_such_user@127.0.0.1:3306/x", "refused user 'no_such_user'"),
        ("mysql://root:wrong@127.0.0.1:3306/x", "fix the user or the password in --dsn"),
    ],
)
def test_import_with_a_wrong_dsn_says_what_to_fix(dsn, expected):
    done = agent("import", "pgbench", FIXTURE, "--dry-run", "--dsn", dsn.format(port=free_port()))
    assert expected in one_line_usage_error(done)


def test_debug_shows_the_traceback_as_well():
    done = agent(
        "run", "tpcb", "--dsn", f"postgresql://postgres@127.0.0.1:{free_port()}/x", "--debug"
    )
    assert done.returncode == 2
    assert "Traceback (most recent call last)" in done.stderr
    assert "psycopg.OperationalError" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("benchhub-agent: PostgreSQL at")
