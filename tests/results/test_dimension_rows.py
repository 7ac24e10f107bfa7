"""The dimension rows of a machine nobody described yet (hardware, storage,
OS, server, client): created by one statement each on PostgreSQL, holding
what get_or_create stored."""

from __future__ import annotations

import pytest
from django.db import connection

from benchhub.results import dimensions
from benchhub.results.comparability import canonical_json, sha256_hex
from benchhub.results.models import Client, DatabaseServer, Hardware, OperatingSystem, Storage
from benchhub.results.services import submission_create
from tests.factories import example_document

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite keeps get_or_create"
)

ROWS = [
    (
        Hardware,
        dimensions.hardware_fields(
            {"cpu": "AMD EPYC 7763", "cores": 64, "ram_bytes": 2**40, "virtualization": "kvm"}
        ),
    ),
    (
        Storage,
        dimensions.storage_fields(
            {"kind": "nvme", "filesystem": "ext4", "mount_options": ["noatime", "discard"]}
        ),
    ),
    (OperatingSystem, dimensions.os_fields({"family": "linux", "distribution": "Debian"})),
    (
        DatabaseServer,
        dimensions.server_fields(
            {"version_string": "PostgreSQL 16.4", "settings": {"shared_buffers": "8GB", "jit": 0}}
        ),
    ),
    (Client, dimensions.client_fields({"driver": "psycopg"})),
]


@on_postgresql
@pytest.mark.parametrize(("model", "values"), ROWS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_new_row_holds_its_values_and_is_found_again_by_its_digest(db, model, values):
    digest = sha256_hex(canonical_json(values))

    created = dimensions._dimension_id(model, values, digest)
    again = dimensions._dimension_id(model, values, digest)

    assert again == created
    row = model.objects.get(pk=created)
    assert row.digest == digest
    assert {name: getattr(row, name) for name in values} == values
    assert dimensions.dimension_get_or_create(model, values).pk == created


@on_postgresql
def test_an_upload_from_a_new_machine_creates_its_row_in_one_statement(
    db, alice, django_assert_max_num_queries
):
    submission_create(submitter=alice, document=example_document())  # the known rows
    document = example_document()
    document["environment"]["hardware"] = {"cpu": "a machine never seen", "cores": 3}

    with django_assert_max_num_queries(5) as upload:
        submission_create(submitter=alice, document=document)

    statements = [q["sql"] for q in upload.captured_queries]
    assert sum('"results_hardware"' in s for s in statements) == 2  # the lookup, the INSERT
    # The upload's own transaction (a savepoint inside the test's); the
    # row's creation opens none of its own.
    assert sum(s.startswith("SAVEPOINT") for s in statements) == 1
    stored = Hardware.objects.get(runs__submission__uuid=document["uuid"])
    assert (stored.cpu_raw, stored.cores) == ("a machine never seen", 3)
