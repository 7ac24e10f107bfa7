"""Each parameter's grouping key is stored with the result: one key for
every spelling of one point, computed at upload and by the migration that
keyed the rows stored before, and decoded to the value the Python path
groups the value read back from PostgreSQL by."""

from __future__ import annotations

import importlib
import uuid

import pytest
from django.apps import apps
from django.db import connection

from benchhub.comparisons.aggregation import _axis_value, _label
from benchhub.comparisons.query import axis_parse
from benchhub.results.models import Measurement, Run, Submission
from benchhub.results.points import parameter_keys, point_from_key, point_key
from benchhub.results.services import submission_create
from tests.factories import sweep_document

SPELLINGS = [
    20,
    20.0,
    "20",
    "20.0",
    " 20",
    "007",
    -0.0,
    "-0",
    2.5,
    "2.5",
    "2.50",
    1e5,
    "1e5",
    1e20,
    1.5e300,
    2.0**60,
    "1152921504606846976",
    0.00001,
    "0.00001",
    0.1234567890123457,
    "0.1234567890123457",
    "0.30000000000000001",
    True,
    "true",
    False,
    "text",
    "٢٠",
]


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        (20, "n:20"),
        (20.0, "n:20"),
        ("20", "n:20"),
        ("20.0", "s:20.0"),
        (" 20", "s: 20"),
        ("007", "s:007"),
        (-0.0, "n:0"),
        (2.5, "n:2.5"),
        ("2.5", "n:2.5"),
        ("2.50", "s:2.50"),
        (1e5, "n:100000"),
        ("1e5", "s:1e5"),
        (1.5e300, "n:15" + "0" * 299),
        (0.00001, "n:1e-05"),
        ("0.00001", "s:0.00001"),
        (True, "s:true"),
        ("true", "s:true"),
        ({"b": 1, "a": 2}, 's:{"a": 2, "b": 1}'),  # not in documents, keyed all the same
        (None, None),
    ],
)
def test_every_spelling_of_a_point_has_one_key(raw, key):
    assert point_key(raw) == key


def test_a_null_parameter_has_no_key():
    assert parameter_keys({"clients": None, "mode": "rw"}) == {"mode": "s:rw"}


@pytest.mark.parametrize("raw", [*SPELLINGS, 0, -7, 2**63 - 1, -(2**63), 10**30, None])
def test_a_runs_keys_are_each_values_point_key(raw):
    """parameter_keys takes a shorter way for integers; the keys are point_key's."""
    expected = {} if raw is None else {"p": point_key(raw)}
    assert parameter_keys({"p": raw}) == expected


def test_stored_keys_decode_to_what_the_python_path_groups_the_stored_value_by(bob):
    document = sweep_document({str(i): float(i + 1) for i in range(len(SPELLINGS))})
    for measurement, spelling in zip(document["runs"][0]["measurements"], SPELLINGS, strict=True):
        measurement["parameters"] = {"point": spelling, "other": 1}
    document["runs"][0]["parameters"] = {"rows": 100.0, "mode": "on"}
    submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)

    axis = axis_parse("x", "param.point")
    stored = list(Measurement.objects.values_list("parameters", "parameter_keys"))
    assert len(stored) == len(SPELLINGS)
    for parameters, keys in stored:  # as read back from PostgreSQL
        grouped = _axis_value(axis, parameters["point"])
        decoded = point_from_key(keys["point"])
        assert decoded == grouped and _label(decoded) == _label(grouped), parameters
        assert type(decoded) is type(grouped) or {type(decoded), type(grouped)} <= {int, float}
        assert keys["other"] == "n:1"
    # Spellings of one point share one key, and only they do.
    by_key: dict[str, set] = {}
    for parameters, keys in stored:
        by_key.setdefault(keys["point"], set()).add(repr(parameters["point"]))
    assert by_key["n:20"] == {"20", "20.0", "'20'"}
    assert by_key["n:2.5"] == {"2.5", "'2.5'"}
    assert by_key["n:0.1234567890123457"] == {"0.1234567890123457", "'0.1234567890123457'"}
    assert by_key["s:true"] == {"True", "'true'"}
    assert len(by_key["s:20.0"]) == len(by_key["s: 20"]) == len(by_key["s:007"]) == 1
    assert Run.objects.get().parameter_keys == {"rows": "n:100", "mode": "s:on"}


def test_the_migration_keys_rows_stored_before_it_in_batches(bob, monkeypatch):
    document = sweep_document({1: 1.0, 20.0: 2.0, "20": 3.0, "2.50": 4.0, "true": 5.0})
    document["runs"][0]["parameters"] = {"rows": "100"}
    for _ in range(3):
        document["uuid"] = str(uuid.uuid4())
        submission_create(submitter=bob, document=document, status=Submission.Status.APPROVED)
    expected = dict(Measurement.objects.values_list("pk", "parameter_keys"))
    assert len(set(map(str, expected.values()))) == 4  # 20.0 and "20" are one point
    Measurement.objects.update(parameter_keys={})
    Run.objects.update(parameter_keys={})
    migration = importlib.import_module("benchhub.results.migrations.0006_parameter_keys")
    monkeypatch.setattr(migration, "BATCH", 4)  # 15 measurements, 3 runs: several batches

    migration.key_existing_rows(apps, connection.schema_editor())

    assert dict(Measurement.objects.values_list("pk", "parameter_keys")) == expected
    assert list(Run.objects.values_list("parameter_keys", flat=True)) == [{"rows": "n:100"}] * 3
