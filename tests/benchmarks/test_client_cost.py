"""benchmarks/client_cost.py: the transactions a run committed, read off its
document, and the table that marks the target at the peak."""

from __future__ import annotations

import importlib.util
import sys

from django.conf import settings

_spec = importlib.util.spec_from_file_location(
    "client_cost", settings.BASE_DIR / "benchmarks" / "client_cost.py"
)
client_cost = importlib.util.module_from_spec(_spec)
sys.modules["client_cost"] = client_cost  # its dataclass looks its module up
_spec.loader.exec_module(client_cost)
Point = client_cost.Point


def document(metric: str, values: dict[int, float]) -> dict:
    return {
        "runs": [
            {
                "measurements": [
                    {"metric": "latency_mean", "value": 3.5, "parameters": {"clients": 4}},
                    *(
                        {"metric": metric, "value": value, "parameters": {"clients": clients}}
                        for clients, value in values.items()
                    ),
                ]
            }
        ]
    }


def test_tpcc_counts_its_transactions_per_minute_and_tpcb_per_second():
    tpcc = document("tpm", {1: 600.0, 4: 1500.0})
    assert client_cost.committed(tpcc, "tpcc", 4, 10.0) == 250.0  # 1500 a minute for 10 s
    tpcb = document("tps", {4: 812.5})
    assert client_cost.committed(tpcb, "tpcb", 4, 3.0) == 2437.5


def test_the_table_judges_the_peak_and_only_the_peak(capsys, monkeypatch):
    points = [
        Point("tpcb", 1, 3000.0, 0.9, 1.5, 0.5),  # ratio 0.6, but not the peak
        Point("tpcb", 16, 9000.0, 0.45, 2.0, 0.75),  # the peak: 0.225
        Point("tpcb", 32, 8000.0, 0.6, 2.0, 1.0),
    ]

    assert client_cost.table("postgresql", points)

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "tpcb on postgresql"
    assert "MISSED" not in "\n".join(lines)
    peak = next(line for line in lines if line.lstrip().startswith("16 "))
    assert "50.0 ms" in peak and "0.23" in peak and "peak: target <= 0.25 ok" in peak

    missed = [Point("tpcc", 4, 1000.0, 1.0, 2.0, 0.5)]
    assert not client_cost.table("mariadb", missed)
    assert "MISSED" in capsys.readouterr().out


def test_the_data_it_kept_is_removed_at_the_end_and_the_users_schema_stays(settings):
    """build() keeps tpcb's data for the --no-init runs; remove() must drop it (a last
    --no-init run kept it: Firebird's files and the databases' schemas were left)."""
    import psycopg
    from benchhub_agent.benchmarks import _connections, tpcb
    from benchhub_agent.benchmarks.base import Target

    database = f"{settings.DATABASES['default']['NAME']}_client_cost"
    server = "postgresql://postgres@127.0.0.1:5432"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}"')
        admin.execute(f'CREATE DATABASE "{database}"')
    dsn = f"{server}/{database}"
    try:
        workspace = _connections.in_own_schema(Target.parse(dsn), tpcb.NAME)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA users_own")
        schemas = "SELECT nspname FROM pg_namespace WHERE nspname IN ('users_own', %s)"
        own = _connections.schema_name(tpcb.NAME)
        with psycopg.connect(dsn) as conn:
            assert len(conn.execute(schemas, (own,)).fetchall()) == 2, workspace

        client_cost.remove(dsn, "tpcb")

        with psycopg.connect(dsn) as conn:
            assert conn.execute(schemas, (own,)).fetchall() == [("users_own",)]
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
