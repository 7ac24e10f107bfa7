"""DSN parsing, the recorded command, and validation of the document before it leaves."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from benchhub_agent import document, sysinfo
from benchhub_agent.benchmarks import select_update
from benchhub_agent.benchmarks.base import SilentProgress, Target

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "docs" / "examples" / "select-update-submission.json"
)


def test_dsn_forms_parse_to_targets():
    tcp = Target.parse("postgresql://bench:s3cret@db.example:5433/bench")
    assert (tcp.engine, tcp.host, tcp.port, tcp.user, tcp.password, tcp.database) == (
        "postgresql", "db.example", 5433, "bench", "s3cret", "bench"
    )  # fmt: skip
    socket = Target.parse("postgres:///bench?host=/var/run/postgresql")
    assert (socket.host, socket.socket, socket.database) == (None, "/var/run/postgresql", "bench")
    maria = Target.parse("mariadb://root@127.0.0.1/test?unix_socket=/run/mysqld/mysqld.sock")
    assert (maria.engine, maria.socket) == ("mariadb", "/run/mysqld/mysqld.sock")
    with pytest.raises(ValueError, match="unknown scheme"):
        Target.parse("oracle://x/y")
    with pytest.raises(ValueError, match="no database name"):
        Target.parse("postgresql://localhost")


def test_the_recorded_command_keeps_the_shape_and_drops_secrets():
    dsn = "postgresql://alice:pw@db.internal:5433/bench"
    argv = ["run", "select-update", "--dsn", dsn, "--clients", "1,8", "--upload",
            "--server", "https://hub.internal", "--token=abc123", "--dry-run"]  # fmt: skip
    command = document.reproducing_command(argv)
    # What was measured, not what was done with the result.
    assert command == (
        "benchhub-agent run select-update --dsn 'postgresql://USER:***@HOST:5433/bench' "
        "--clients 1,8"
    )
    for secret in ("alice", "pw@", "db.internal", "hub.internal", "abc123"):
        assert secret not in command


def test_a_socket_path_in_the_dsn_is_not_recorded():
    shape = document.dsn_shape("postgresql:///bench?host=/home/alice/pg&sslmode=disable")
    assert shape == "postgresql:///bench?sslmode=disable&host=SOCKET_DIR"


def test_the_example_document_is_valid():
    document.validate(json.loads(EXAMPLE.read_text()))


def test_a_real_run_makes_a_valid_document(pg_dsn):
    options = argparse.Namespace(
        clients=[1, 2], transactions=100, duration=None, warmup=None, repeat=2,
        locking="for_update", processes=None, pin=None,
    )  # fmt: skip
    result = select_update.run(Target.parse(pg_dsn), options, SilentProgress())
    doc = document.agent_document(
        document_uuid=document.new_uuid(),
        result=result,
        command=document.reproducing_command(["run", "select-update", "--dsn", pg_dsn]),
        machine=sysinfo.environment(result.storage_path),
    )
    document.validate(doc)
    assert doc["source"] == {
        "kind": "agent",
        "tool": "benchhub-agent",
        "tool_version": "0.1.0",
        "command": "benchhub-agent run select-update --dsn "
        f"postgresql://USER@HOST:5432/{Target.parse(pg_dsn).database}",
    }
    assert doc["environment"]["client"]["load_engine"] == "benchhub-agent"
    assert doc["environment"]["storage"]["filesystem"]  # found from the data directory
    assert len(doc["runs"][0]["measurements"]) == 2 * 8


def test_a_metric_outside_the_catalog_is_caught_before_sending():
    doc = json.loads(EXAMPLE.read_text())
    doc["runs"][0]["measurements"][1]["metric"] = "latency_avg"
    doc["runs"][0]["measurements"][2]["unit"] = "s"
    with pytest.raises(document.InvalidDocument) as caught:
        document.validate(doc)
    assert [e.path for e in caught.value.errors] == [
        "$.runs[0].measurements[1].metric",
        "$.runs[0].measurements[2].unit",
    ]


def test_a_schema_violation_names_the_field():
    doc = json.loads(EXAMPLE.read_text())
    del doc["uuid"]
    with pytest.raises(document.InvalidDocument, match=r"\$\.uuid"):
        document.validate(doc)


def test_importing_the_same_output_twice_gives_the_same_uuid():
    first = document.import_uuid("pgbench", "tps = 1")
    assert first == document.import_uuid("pgbench", "tps = 1")
    assert first != document.import_uuid("pgbench", "tps = 2")
    assert first != document.import_uuid("sysbench", "tps = 1")


@pytest.mark.parametrize(
    "copy",
    [
        "latency average = 1.219 ms\ntps = 1640.67\n\n",
        "latency average = 1.219 ms\r\ntps = 1640.67\r\n",
        "\ufefflatency average = 1.219 ms  \ntps = 1640.67",
        "\nlatency average = 1.219 ms\rtps = 1640.67\t\n",
    ],
)
def test_a_copy_of_the_same_output_is_the_same_import(copy):
    original = "latency average = 1.219 ms\ntps = 1640.67\n"
    assert document.import_uuid("pgbench", copy) == document.import_uuid("pgbench", original)


def test_an_output_that_says_something_else_is_another_import():
    original = document.import_uuid("pgbench", "latency average = 1.219 ms\ntps = 1640.67\n")
    assert original != document.import_uuid(
        "pgbench", "latency average = 1.219 ms\ntps = 1640.76\n"
    )
    assert original != document.import_uuid(
        "pgbench", "latency average = 1.219 ms\n\ntps = 1640.67\n"
    )
