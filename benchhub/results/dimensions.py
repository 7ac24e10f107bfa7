"""The dimension rows a run is keyed by (hardware, storage, OS, server,
client): their fields from a document's sections, and their rows, stored
once per distinct content (digest)."""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from django.db import connection

from benchhub.results.comparability import canonical_json, sha256_hex
from benchhub.results.models import Dimension, Run
from benchhub.results.normalization import (
    normalize_cpu,
    normalize_distribution,
    normalize_filesystem,
    normalize_io_scheduler,
    normalize_mount_options,
    normalize_virtualization,
    parse_server_version,
)

D = TypeVar("D", bound=Dimension)


def dimension_get_or_create(model: type[D], values: dict[str, Any]) -> D:
    digest = sha256_hex(canonical_json(values))
    row, _ = model.objects.get_or_create(digest=digest, defaults=values)
    return row


def dimensions_create(
    missing: list[tuple[Run, str, type[Dimension], dict[str, Any], str]],
) -> None:
    """The dimension rows a document's runs need and nobody stored yet
    (run, key, model, values, digest), created through
    dimension_get_or_create (which handles a concurrent insert) and their
    ids set on the runs. Created in one order, by table and digest, in every
    upload: two uploads whose runs brought the same new rows in other orders
    each waited for a row the other held, and PostgreSQL broke the deadlock
    by failing one of them (a 503)."""
    ordered = sorted(
        (
            ((model._meta.db_table, digest), run, key, model, values)
            for run, key, model, values, digest in missing
        ),
        key=lambda item: item[0],
    )
    created: dict[tuple[str, str], int] = {}
    for (table, digest), run, key, model, values in ordered:
        if (table, digest) not in created:
            created[table, digest] = _dimension_id(model, values, digest)
        setattr(run, f"{key}_id", created[table, digest])


def _dimension_id(model: type[Dimension], values: dict[str, Any], digest: str) -> int:
    """The id of ``model``'s row of ``digest``, inserted with ``values`` if
    nobody stored it yet. On PostgreSQL one statement (INSERT … ON CONFLICT
    DO NOTHING RETURNING id; the row of a concurrent upload, committed
    meanwhile, read after it): get_or_create took four (SELECT, SAVEPOINT,
    INSERT, RELEASE), each compiled by the ORM, in one upload of ten of
    benchmarks/ingest.py's. Elsewhere dimension_get_or_create."""
    if connection.vendor != "postgresql":
        return dimension_get_or_create(model, values).pk
    insert, fields = _dimension_insert(model)
    params = [
        field.get_db_prep_save(
            digest
            if field.name == "digest"
            else values[field.name]
            if field.name in values
            else field.get_default(),
            connection,
        )
        for field in fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(insert, params)
        row = cursor.fetchone()
        if row is None:
            cursor.execute(
                f"SELECT id FROM {connection.ops.quote_name(model._meta.db_table)} "  # noqa: S608 -- names only
                "WHERE digest = %s",
                [digest],
            )
            row = cursor.fetchone()
    return row[0]


@functools.cache
def _dimension_insert(model: type[Dimension]) -> tuple[str, list[Any]]:
    quote = connection.ops.quote_name
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    statement = (
        f"INSERT INTO {quote(model._meta.db_table)} "  # noqa: S608 -- names only
        f"({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        "ON CONFLICT (digest) DO NOTHING RETURNING id"
    )
    return statement, fields


def hardware_fields(section: dict[str, Any]) -> dict[str, Any]:
    cpu = normalize_cpu(section.get("cpu", ""))
    return {
        "cpu_vendor": cpu.vendor,
        "cpu_model": cpu.model,
        "cpu_raw": section.get("cpu", ""),
        "cores": section.get("cores"),
        "threads": section.get("threads"),
        "ram_bytes": section.get("ram_bytes"),
        "virtualization": normalize_virtualization(section.get("virtualization")),
        "virtualization_raw": section.get("virtualization", ""),
    }


def storage_fields(section: dict[str, Any]) -> dict[str, Any]:
    raw_options = section.get("mount_options")
    return {
        "device_model": section.get("device_model", ""),
        "kind": section.get("kind", "unknown"),
        "raid": section.get("raid", ""),
        "filesystem": normalize_filesystem(section.get("filesystem")),
        "filesystem_raw": section.get("filesystem", ""),
        "mount_options": normalize_mount_options(raw_options),
        "mount_options_raw": ",".join(raw_options)
        if isinstance(raw_options, list)
        else (raw_options or ""),
        "io_scheduler": normalize_io_scheduler(section.get("io_scheduler")),
        "io_scheduler_raw": section.get("io_scheduler", ""),
    }


def os_fields(section: dict[str, Any]) -> dict[str, Any]:
    distribution = section.get("distribution", "")
    return {
        "family": section.get("family", ""),
        "distribution": normalize_distribution(distribution),
        "distribution_raw": distribution,
        "version": section.get("version", ""),
        "kernel": section.get("kernel", ""),
    }


def server_fields(section: dict[str, Any]) -> dict[str, Any]:
    parsed = parse_server_version(section["version_string"], section.get("engine"))
    return {
        "engine": parsed.engine,
        "version": parsed.version,
        "version_major": parsed.major,
        "version_sort": parsed.sort_key,
        "version_raw": section["version_string"],
        "architecture": section.get("architecture", ""),
        "config_profile": section.get("config_profile", ""),
        "settings": section.get("settings", {}),
    }


def client_fields(section: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocol": section.get("protocol", "unknown"),
        "driver": section.get("driver", ""),
        "driver_version": section.get("driver_version", ""),
        "cpu_placement": section.get("cpu_placement", "unpinned"),
        "load_engine": section.get("load_engine", ""),
    }
