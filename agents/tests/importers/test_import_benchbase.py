from __future__ import annotations

import json

import pytest
from benchhub_contract.importers import ImportFormatError, parse_tool_output

from .helpers import assert_valid_document, fixture, points

NAME = "published/benchbase-sqlite-tpcc-summary.json"


def test_summary_json_gives_throughput_and_latencies_in_ms():
    imported = parse_tool_output("benchbase", fixture(NAME))
    run = imported.runs[0]
    assert run["benchmark"] == "tpcc"
    assert run["parameters"] == {"scale": 1, "isolation": "TRANSACTION_SERIALIZABLE"}
    assert points(imported) == {
        ("throughput", ("terminals", 1)): 1751.193076636597,
        ("latency_mean", ("terminals", 1)): 0.567,
        ("latency_p95", ("terminals", 1)): 1.178,
        ("latency_p99", ("terminals", 1)): 1.517,
    }
    assert "Goodput 1743.3265159390583 requests/s" in run["note"]
    # "DBMS Version": null — so nothing is claimed about the database.
    assert imported.facts == {"client": {"load_engine": "benchbase"}}
    assert_valid_document(imported)


def test_a_dbms_version_becomes_the_database_fact():
    summary = json.loads(fixture(NAME))
    summary |= {"DBMS Type": "POSTGRES", "DBMS Version": "PostgreSQL 16.1"}
    imported = parse_tool_output("benchbase", json.dumps(summary))
    assert imported.facts["database"] == {
        "version_string": "PostgreSQL 16.1",
        "engine": "postgresql",
    }
    assert_valid_document(imported)


def test_a_benchmark_outside_the_catalog_is_refused_by_name():
    summary = json.loads(fixture(NAME)) | {"Benchmark Type": "ycsb"}
    with pytest.raises(ImportFormatError, match="'ycsb' is not one BenchHub compares"):
        parse_tool_output("benchbase", json.dumps(summary))


def test_truncated_json_is_refused():
    with pytest.raises(ImportFormatError, match="it is not JSON"):
        parse_tool_output("benchbase", fixture(NAME)[:300])


def test_json_without_the_summary_keys_is_refused():
    with pytest.raises(
        ImportFormatError, match="expected the key 'Throughput \\(requests/second\\)'"
    ):
        parse_tool_output("benchbase", '{"Benchmark Type": "tpcc"}')
