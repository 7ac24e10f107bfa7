"""services.tool_output_read / tool_output_import: the rules both the API and
the form rely on, without HTTP in between."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchhub_contract.importers import EnvironmentConflict, ImportedRuns

from benchhub.imports.services import (
    ToolOutputError,
    tool_output_import,
    tool_output_read,
)
from benchhub.results.models import Submission
from benchhub.results.services import InvalidDocument

FIXTURES = Path(__file__).resolve().parents[2] / "agents/tests/importers/fixtures"
PGBENCH = (FIXTURES / "pgbench15-tpcb.txt").read_text()
SYSBENCH = (FIXTURES / "sysbench10-postgresql-oltp_read_write.txt").read_text()
STATED = {
    "database": {"version_string": "PostgreSQL 15.20", "engine": "postgresql"},
    "client": {"load_engine": "pgbench"},
}


def merge(supplied, stated=STATED):
    return ImportedRuns(runs=[], facts=stated, source={}).environment(supplied)


def test_the_output_fills_what_the_user_left_empty():
    supplied = {"database": {"engine": ""}, "hardware": {"cores": 8}, "client": {}}

    assert merge(supplied) == {
        "database": {"version_string": "PostgreSQL 15.20", "engine": "postgresql"},
        "hardware": {"cores": 8},
        "client": {"load_engine": "pgbench"},
    }


def test_the_fuller_of_two_agreeing_version_texts_is_kept():
    full = "PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu, 64-bit"

    merged = merge({"database": {"version_string": full}})

    assert merged["database"]["version_string"] == full


def test_a_user_value_contradicting_the_output_is_refused_naming_the_field():
    with pytest.raises(EnvironmentConflict) as conflict:
        merge({"database": {"version_string": "PostgreSQL 16.1"}})

    assert conflict.value.path == "$.environment.database.version_string"
    assert "'PostgreSQL 15.20'" in str(conflict.value)
    assert "'PostgreSQL 16.1'" in str(conflict.value)


def test_a_contradiction_reaches_the_uploader_and_nothing_is_stored(alice):
    with pytest.raises(ToolOutputError) as refused:
        tool_output_import(
            submitter=alice,
            tool="pgbench",
            text=PGBENCH,
            environment={"database": {"version_string": "PostgreSQL 16.1"}},
        )

    assert refused.value.path == "$.environment.database.version_string"
    assert Submission.objects.count() == 0


def test_sections_only_the_user_describes_are_kept_and_empty_ones_dropped():
    merged = merge({"hardware": {"cores": 8, "cpu": ""}, "os": {"family": ""}}, stated={})

    assert merged == {"hardware": {"cores": 8}}


def test_reading_builds_a_whole_import_document(alice):
    reading = tool_output_read(
        submitter=alice, tool="pgbench", text=PGBENCH, command="pgbench -c 4 -j 2 -T 5"
    )

    document = reading.document
    assert reading.errors == []
    assert document["schema"] == 1
    assert document["source"] == {
        "kind": "import",
        "tool": "pgbench",
        "tool_version": "15.20 (Debian 15.20-0+deb12u1)",
        "command": "pgbench -c 4 -j 2 -T 5",
    }
    assert document["runs"][0]["benchmark"] == "tpcb"
    assert Submission.objects.count() == 0


def test_the_same_upload_gets_the_same_uuid_and_another_user_another(alice, bob):
    def read(user):
        return tool_output_read(submitter=user, tool="pgbench", text=PGBENCH).document["uuid"]

    assert read(alice) == read(alice)
    assert read(alice) != read(bob)


def test_a_given_uuid_is_used_as_it_is(alice):
    key = "0b4f3f7e-2f0e-4d0e-9a51-4f7a3f1d2c55"

    reading = tool_output_read(submitter=alice, tool="pgbench", text=PGBENCH, submission_uuid=key)

    assert reading.document["uuid"] == key


def test_binary_file_is_refused_as_not_text(alice):
    with pytest.raises(ToolOutputError, match="not UTF-8 text") as caught:
        tool_output_import(submitter=alice, tool="pgbench", text=b"\xff\xfe\x00\x01garbage")

    assert caught.value.path == "$.output"
    assert Submission.objects.count() == 0


def test_parameter_that_contradicts_the_output_points_at_the_parameter(alice):
    text = f"sysbench oltp_read_only --threads=4 run\n{SYSBENCH}"

    with pytest.raises(ToolOutputError) as caught:
        tool_output_read(
            submitter=alice, tool="sysbench", text=text, parameters={"test": "oltp_read_write"}
        )

    assert caught.value.path == "$.parameters.test"


def test_incomplete_description_stores_nothing(alice):
    with pytest.raises(InvalidDocument) as caught:
        tool_output_import(
            submitter=alice,
            tool="sysbench",
            text=SYSBENCH,
            parameters={"test": "oltp_read_write"},
            environment={"database": {"engine": "postgresql"}},
        )

    assert [e.path for e in caught.value.errors] == ["$.environment.database.version_string"]
    assert Submission.objects.count() == 0
