"""A PostgreSQL that asks for a password, as most do outside a test machine: a wrong or
missing password is one line naming the password, exit 2, in every benchmark and in
``import --dsn``.

The shared PostgreSQL trusts every local connection, so a password is never checked
there; this cluster is the test's own (``private_postgresql``), with scram-sha-256 on
loopback for every role but postgres.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.agent.test_outbox_e2e import agent
from tests.deploy.servers import private_postgresql

SQL_BENCHMARKS = ("tpcb", "select-update", "sql-bench", "backup", "external-sort")
FIXTURE = "agents/tests/importers/fixtures/pgbench15-tpcb.txt"
HBA = """\
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""


@pytest.fixture(scope="module")
def asks_for_a_password():
    """The URL of a cluster where user bench's password is 'right'."""
    with private_postgresql() as cluster:
        with psycopg.connect(f"{cluster.url}/postgres", autocommit=True) as conn:
            conn.execute("CREATE ROLE bench LOGIN PASSWORD 'right'")
        (cluster.data / "pg_hba.conf").write_text(HBA)
        cluster.pg_ctl("reload")
        yield f"127.0.0.1:{cluster.port}"


def one_line(done) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("benchhub-agent: PostgreSQL at 127.0.0.1:")
    return line


def test_the_right_password_is_let_in(asks_for_a_password):
    """Without this, the refusals below could be the cluster refusing everyone."""
    with psycopg.connect(f"postgresql://bench:right@{asks_for_a_password}/postgres") as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("bench",)


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_a_wrong_postgresql_password_names_the_password(asks_for_a_password, benchmark, tmp_path):
    dsn = f"postgresql://bench:not-right@{asks_for_a_password}/postgres"
    done = agent("run", benchmark, "--dsn", dsn, "--repeat", "1", "--dry-run", outbox=tmp_path)
    line = one_line(done)
    assert "refused the password of user 'bench': fix the password in --dsn" in line
    assert "not-right" not in line


@pytest.mark.parametrize("benchmark", SQL_BENCHMARKS)
def test_a_missing_postgresql_password_says_to_add_it(asks_for_a_password, benchmark, tmp_path):
    dsn = f"postgresql://bench@{asks_for_a_password}/postgres"
    done = agent("run", benchmark, "--dsn", dsn, "--repeat", "1", "--dry-run", outbox=tmp_path)
    assert "asks user 'bench' for a password: add it to --dsn" in one_line(done)


def test_import_with_a_wrong_postgresql_password_names_the_password(asks_for_a_password, tmp_path):
    dsn = f"postgresql://bench:not-right@{asks_for_a_password}/postgres"
    done = agent("import", "pgbench", FIXTURE, "--dry-run", "--dsn", dsn, outbox=tmp_path)
    assert "refused the password of user 'bench'" in one_line(done)
