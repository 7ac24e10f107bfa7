"""How the results app writes an uploaded document.

Through the ORM (``save`` and ``bulk_create``) on the embedded default, SQLite. On
PostgreSQL, one raw statement of fixed text stores the whole document, because
benchmarks/ingest.py measured the ORM's compiled statements as the larger part of an
upload's cost there (docs/performance.md, Ingest); tests/results/test_storage_paths.py
holds it to the rows the ORM path stores. Nothing else in the project writes these tables
with raw SQL.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.utils import timezone

from benchhub.lib.prepared import prepared_cursor
from benchhub.results import events
from benchhub.results.dimensions import dimensions_create
from benchhub.results.models import (
    Benchmark,
    Dimension,
    Measurement,
    Metric,
    MetricParameter,
    Run,
    RunMetric,
    Submission,
)


@dataclass
class PreparedDocument:
    """A document made ready to store: its rows, built, and what each needs."""

    submission: Submission
    canonical: str
    runs: list[Run]
    # The dimension rows nobody stored yet, for dimensions_create.
    missing: list[tuple[Run, str, type[Dimension], dict[str, Any], str]]
    # (run position, metric id, parameter keys, the measurement's document)
    measurements: list[tuple[int, int, dict[str, str], dict[str, Any]]]
    names: set[tuple[int, str, str]]


def store(prepared: PreparedDocument) -> None:
    """Write the rows of a prepared document; ``prepared``'s submission and
    runs get their ids."""
    dimensions_create(prepared.missing)
    if connection.vendor == "postgresql":
        _insert_postgresql(prepared)
    else:
        _insert_orm(prepared)


def _insert_orm(prepared: PreparedDocument) -> None:
    """The embedded default's path (SQLite), and the reference the one statement of
    PostgreSQL is tested against (tests/results/test_storage_paths.py)."""
    submission, runs = prepared.submission, prepared.runs
    submission.save(force_insert=True)
    for run in runs:
        run.submission = submission
        run.submission_status = submission.status
    Run.objects.bulk_create(runs)
    measurements = Measurement.objects.bulk_create(
        Measurement(
            run=runs[position],
            metric_id=metric_id,
            parameters=m.get("parameters", {}),
            value=m["value"] + 0.0,  # -0.0 stored as 0.0: _run_new says why
            samples=m.get("samples", []),
            approximate=m.get("approximate", False),
            note=m.get("note", ""),
            parameter_keys=keys,
        )
        for position, metric_id, keys, m in prepared.measurements
    )
    summaries: dict[tuple[int, int], list[float]] = {}
    for measurement in measurements:
        summaries.setdefault((measurement.run_id, measurement.metric_id), []).append(
            measurement.value
        )
    RunMetric.objects.bulk_create(
        RunMetric(
            run_id=run_id, metric_id=metric_id, n=len(values), low=min(values), high=max(values)
        )
        for (run_id, metric_id), values in summaries.items()
    )
    MetricParameter.objects.bulk_create(
        [
            MetricParameter(metric_id=m, scope=scope, name=name)
            for m, scope, name in sorted(prepared.names)
        ],
        ignore_conflicts=True,
    )
    # Pending results are scored against the approved baseline too, so
    # that a moderator sees an outlier before approving it.
    events.hooks.runs_stored([(run.pk, run.fingerprint) for run in runs])


# The catalog's metrics of the document's benchmarks and the ids of the
# dimension rows its runs describe, in one statement: most uploads come from
# machines already described. Rows: (None, benchmark, metric, metric id,
# benchmark id) (metric and its id NULL for a benchmark without metric rows)
# and (table, digest, None, row id, None).
_LOOKUP = """
SELECT NULL, b.name, m.name, m.id, b.id
FROM {benchmark} b LEFT JOIN {metric} m ON m.benchmark_id = b.id
WHERE b.name IN ({names})
"""
_LOOKUP_DIMENSION = (
    "UNION ALL SELECT %s, digest, NULL, id, NULL FROM {table} WHERE digest IN ({digests})"
)


def lookup(
    benchmarks: set[str], dimensions: set[tuple[type[Dimension], str]]
) -> tuple[dict[tuple[str, str | None], tuple[int, int]], dict[tuple[str, str], int]]:
    """(benchmark name, metric name) → (metric id, benchmark id) of the
    catalog's metrics of these benchmarks, and (benchmark name, None) →
    (benchmark id, benchmark id) of those stored; and (table, digest) → id of the dimension
    rows of ``dimensions`` (model, digest) already stored. Raw SQL: the ORM
    compiled the metrics' query anew for every upload, and the two lookups
    were two round trips (one per run for the dimensions)."""
    quote = connection.ops.quote_name
    digests: dict[str, list[str]] = {}
    for model, digest in sorted(dimensions, key=lambda item: (item[0]._meta.db_table, item[1])):
        digests.setdefault(model._meta.db_table, []).append(digest)
    statement = _LOOKUP.format(
        metric=quote(Metric._meta.db_table),
        benchmark=quote(Benchmark._meta.db_table),
        names=", ".join(["%s"] * len(benchmarks)),
    ) + "\n".join(
        _LOOKUP_DIMENSION.format(table=quote(table), digests=", ".join(["%s"] * len(values)))
        for table, values in digests.items()
    )
    params = sorted(benchmarks)
    for table, values in digests.items():
        params += [table, *values]
    metrics: dict[tuple[str, str | None], tuple[int, int]] = {}
    found: dict[tuple[str, str], int] = {}
    with prepared_cursor() as cursor:
        cursor.execute(statement, params)
        for table, name, metric, row_id, benchmark_id in cursor.fetchall():
            if table is None:
                metrics[(name, None)] = (benchmark_id, benchmark_id)
                if metric is not None:
                    metrics[(name, metric)] = (row_id, benchmark_id)
            else:
                found[(table, name)] = row_id
    return metrics, found


_MEASUREMENT_COLUMNS = (
    "run_id",
    "metric_id",
    "parameters",
    "value",
    "samples",
    "approximate",
    "note",
    "parameter_keys",
)


# PostgreSQL: a document is stored by one statement of fixed text (psycopg
# parses it once and caches it): the submission, its runs, their
# measurements and their summary per run and metric (from the rows the
# measurements' INSERT returns, so the very values stored), the metrics'
# parameter names and the runs' baseline marks
# (baselines/marking.py). Runs travel as a JSON array (one json.dumps, in
# C); the measurements are read from the stored document's jsonb, with their
# metric ids and parameter keys beside it. Through the ORM these were five
# statements, two of them compiled anew for every upload; a multi-row VALUES
# list had a text per row count, too long for psycopg's cache; the
# measurements written out again as JSON cost Python and PostgreSQL more than
# reading them from the document (benchmarks/ingest.py measures both).
_SUBMISSION_COLUMNS = (
    "uuid",
    "submitter_id",
    "source",
    "status",
    "status_reason",
    "status_before_hidden",
    "schema_version",
    "content_digest",
    "document",
    "tool",
    "tool_version",
    "command",
    "citation",
    "note",
    "created_at",
)
# Each with its type in the JSON rows; submission_id comes from the INSERT.
_RUN_COLUMNS = (
    ("position", "integer"),
    ("benchmark_id", "bigint"),
    ("benchmark_version", "text"),
    ("parameters", "jsonb"),
    ("repetitions", "integer"),
    ("started_at", "timestamptz"),
    ("ended_at", "timestamptz"),
    ("note", "text"),
    ("hardware_id", "bigint"),
    ("storage_id", "bigint"),
    ("os_id", "bigint"),
    ("server_id", "bigint"),
    ("client_id", "bigint"),
    ("fingerprint", "text"),
    ("fingerprint_version", "integer"),
    ("parameter_keys", "jsonb"),
    ("noise", "text"),
    ("repetition_cv", "double precision"),
    ("load_engine_cpu", "double precision"),
)
_DOCUMENT_INSERT = """
WITH document AS MATERIALIZED (
    SELECT %(document)s::jsonb AS body
), measurement_key AS MATERIALIZED (
    SELECT %(measurements)s::jsonb AS body
), submission AS (
    INSERT INTO {submission} ({submission_columns})
    VALUES ({submission_values})
    RETURNING id, status
), run AS (
    INSERT INTO {run} (submission_id, submission_status, {run_columns})
    SELECT submission.id, submission.status, {run_columns}
    FROM submission, json_to_recordset(%(runs)s::json) AS r({run_types})
    ORDER BY position
    RETURNING id, position, fingerprint
), run_ids AS (
    SELECT array_agg(id ORDER BY position) AS ids FROM run
), measurement AS (
    INSERT INTO {measurement} (run_id, {measurement_columns})
    SELECT run_ids.ids[r.position], (k.pair ->> 0)::bigint,
        COALESCE(m.body -> 'parameters', '{{}}'), (m.body ->> 'value')::double precision,
        COALESCE(m.body -> 'samples', '[]'), COALESCE((m.body -> 'approximate')::boolean, false),
        COALESCE(m.body ->> 'note', ''), k.pair -> 1
    FROM run_ids, document, measurement_key,
        jsonb_array_elements(document.body -> 'runs') WITH ORDINALITY AS r(body, position),
        jsonb_array_elements(r.body -> 'measurements') WITH ORDINALITY AS m(body, n),
        LATERAL (SELECT measurement_key.body -> (r.position - 1)::integer -> (m.n - 1)::integer)
            AS k(pair)
    ORDER BY r.position, m.n
    RETURNING run_id, metric_id, value
), run_metric AS (
    INSERT INTO {run_metric} (run_id, metric_id, n, low, high)
    SELECT run_id, metric_id, count(*), min(value), max(value)
    FROM measurement GROUP BY run_id, metric_id
), parameter_name AS (
    INSERT INTO {parameter} (metric_id, scope, name)
    SELECT * FROM unnest(%(name_metrics)s::bigint[], %(name_scopes)s::text[],
                         %(name_names)s::text[])
    ON CONFLICT DO NOTHING
), {marks}
SELECT (SELECT id FROM submission), (SELECT ids FROM run_ids),
       (SELECT array_agg(inserted) FROM dirty_key),
       (SELECT array_agg(claimed_at) FROM dirty_key)
"""


@functools.cache
def _document_insert() -> str:
    quote = connection.ops.quote_name
    measurement_columns = ", ".join(_MEASUREMENT_COLUMNS[1:])
    return _DOCUMENT_INSERT.format(
        submission=quote(Submission._meta.db_table),
        submission_columns=", ".join(_SUBMISSION_COLUMNS),
        submission_values=", ".join(
            "(SELECT body FROM document)"
            if c == "document"
            else f"%({c})s::jsonb"
            if c == "citation"
            else f"%({c})s"
            for c in _SUBMISSION_COLUMNS
        ),
        run=quote(Run._meta.db_table),
        run_columns=", ".join(name for name, _ in _RUN_COLUMNS),
        run_types=", ".join(f"{name} {kind}" for name, kind in _RUN_COLUMNS),
        measurement=quote(Measurement._meta.db_table),
        measurement_columns=measurement_columns,
        run_metric=quote(RunMetric._meta.db_table),
        parameter=quote(MetricParameter._meta.db_table),
        marks=events.hooks.marks_sql("run"),
    )


def _insert_postgresql(prepared: PreparedDocument) -> None:
    """The document in one statement (_DOCUMENT_INSERT); ``submission`` and
    ``runs`` get their ids as if saved. JSON values go in as JSON text,
    exactly as JSONField's adapter writes them (json.dumps); numbers as
    json.dumps writes a float (its shortest exact form), which PostgreSQL
    reads back to the same double. A measurement's value is the document's
    number read as a double, the same one (jsonb keeps the decimal json.dumps
    wrote, without the sign of -0.0, as the ORM stored it). Non-finite
    numbers of the document never get here (bounds_errors); a run's
    coefficient of variation may overflow to infinity, which goes as the
    text PostgreSQL reads it from."""
    submission, runs, names = prepared.submission, prepared.runs, prepared.names
    now = timezone.now()
    submission.created_at = now
    params: dict[str, Any] = {
        column: getattr(submission, column)
        for column in _SUBMISSION_COLUMNS
        if column not in ("document", "citation")
    }
    # On PostgreSQL the digest's JSON text is stored as it is: jsonb keeps
    # no key order nor spacing, so it is the same value, and the document
    # (up to megabytes) is not serialized a second time.
    params["document"] = prepared.canonical
    params["citation"] = None if submission.citation is None else json.dumps(submission.citation)
    params["runs"] = json.dumps([_run_row(run) for run in runs])
    # The measurements' values are read from the stored document itself; of
    # each only what the document does not hold goes along, per run, in the
    # document's order: [metric id, parameter keys].
    keys: list[list[Any]] = [[] for _ in runs]
    for position, metric_id, point_keys, _ in prepared.measurements:
        keys[position].append([metric_id, point_keys])
    params["measurements"] = json.dumps(keys)
    ordered = sorted(names)  # rows of one metric locked in one order by every upload
    params["name_metrics"], params["name_scopes"], params["name_names"] = (
        [name[i] for name in ordered] for i in range(3)
    )
    params["marked_at"] = now
    with prepared_cursor() as cursor:
        cursor.execute(_document_insert(), params)
        submission_id, run_ids, inserted, claimed = cursor.fetchone()
    submission.pk = submission_id
    for run, run_id in zip(runs, run_ids, strict=True):
        run.submission = submission
        run.submission_status = submission.status
        run.pk = run_id
    # Pending results are scored against the approved baseline too, so that
    # a moderator sees an outlier before approving it.
    events.hooks.marked(list(zip(inserted or [], claimed or [], strict=True)), now)


def _run_row(run: Run) -> dict[str, Any]:
    """The run's values as the ORM would write them: each field prepares
    its own (an integer the document gave as 62.0 is stored as 62)."""
    row = {name: field.get_prep_value(getattr(run, name)) for name, field in _run_fields().items()}
    for name in ("started_at", "ended_at"):
        if row[name] is not None:
            row[name] = row[name].isoformat()
    if row["repetition_cv"] is not None and not math.isfinite(row["repetition_cv"]):
        row["repetition_cv"] = str(row["repetition_cv"])  # "inf": float8's input reads it
    return row


@functools.cache
def _run_fields() -> dict[str, Any]:
    return {name: Run._meta.get_field(name.removesuffix("_id")) for name, _ in _RUN_COLUMNS}
