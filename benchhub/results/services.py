"""Writes of the results app."""

from __future__ import annotations

import functools
import json
import logging
import math
import uuid as uuid_module
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, TypeVar

from benchhub_agent.schema import DocumentError, benchmark_catalog, parse_time
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from benchhub.baselines.refresh import mark_inserted_runs_sql, queue_needed
from benchhub.baselines.services import baselines_mark_dirty, baselines_runs_marked
from benchhub.lib.prepared import prepared_cursor
from benchhub.moderation.aliases import alias_map, aliases_apply
from benchhub.moderation.services import arrival_moderated, submission_arrived
from benchhub.results.comparability import (
    FINGERPRINT_VERSION,
    canonical_json,
    run_fingerprint,
    sha256_hex,
)
from benchhub.results.documents import document_errors, run_environment
from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Dimension,
    Hardware,
    Measurement,
    Metric,
    MetricParameter,
    OperatingSystem,
    Run,
    Storage,
    Submission,
)
from benchhub.results.noise import run_noise
from benchhub.results.normalization import (
    normalize_cpu,
    normalize_distribution,
    normalize_filesystem,
    normalize_io_scheduler,
    normalize_mount_options,
    normalize_virtualization,
    parse_server_version,
)
from benchhub.results.points import parameter_keys

logger = logging.getLogger(__name__)


class InvalidDocument(Exception):
    def __init__(self, errors: list[DocumentError]) -> None:
        super().__init__(f"{len(errors)} error(s) in the document")
        self.errors = errors


class SubmissionConflict(Exception):
    """The uuid is taken: by a submission with other content, or by another
    submitter's (``other_submitter``), whose upload is never handed out."""

    def __init__(self, existing: Submission, *, other_submitter: bool = False) -> None:
        why = "another submitter" if other_submitter else "different content"
        super().__init__(f"submission {existing.uuid} exists with {why}")
        self.existing = existing
        self.other_submitter = other_submitter


class SubmissionGone(SubmissionConflict):
    """The submitter's own upload under this uuid was deleted: storing it
    again would bring back what was removed, and its URL answers 404."""

    def __init__(self, existing: Submission) -> None:
        super().__init__(existing)


class CatalogIncomplete(Exception):
    """The document names a benchmark or metric of the catalog file (the
    schema accepted it) whose row the database lacks: deleted outside the
    admin, or the code updated and the web process started before the
    ``migrate`` that runs catalog_sync. The server's fault, not the
    document's: ``missing`` is (JSON path of its first use, what is missing)."""

    def __init__(self, missing: list[tuple[str, str]]) -> None:
        super().__init__(
            f"this server's database lacks {', '.join(what for _, what in missing)}, which "
            "its benchmark catalog lists (deleted by hand, or the server was updated without "
            "running migrate); an administrator puts the catalog back with manage.py migrate, "
            "and the same document can then be sent again"
        )
        self.missing = missing


@dataclass(frozen=True)
class SubmissionOutcome:
    submission: Submission
    created: bool
    # The runs just stored, with their benchmarks: answering the upload
    # needs no second read. Empty for a submission found already stored.
    runs: tuple[Run, ...] = ()


def catalog_sync() -> None:
    """Mirror the benchmark catalog file into the database (after migrate)."""
    for entry in benchmark_catalog()["benchmarks"]:
        benchmark, _ = Benchmark.objects.update_or_create(
            name=entry["name"],
            defaults={
                "title": entry["title"],
                "description": entry.get("description", ""),
                "origin": entry.get("origin", ""),
            },
        )
        for metric in entry["metrics"]:
            Metric.objects.update_or_create(
                benchmark=benchmark,
                name=metric["name"],
                defaults={
                    "unit": metric["unit"],
                    "direction": metric["direction"],
                    "description": metric.get("description", ""),
                },
            )


def submission_create(
    *,
    submitter: AbstractBaseUser,
    document: Any,
    status: str = Submission.Status.PENDING,
) -> SubmissionOutcome:
    """Store an uploaded document, once.

    The same uuid with the same content from the same submitter returns
    the stored submission (created=False); with other content, or from
    another submitter, it raises SubmissionConflict. All
    of a document is stored in one transaction or nothing is.
    """
    errors = document_errors(document)
    if errors:
        raise InvalidDocument(errors)
    submission_uuid = uuid_module.UUID(document["uuid"])
    # One submission whatever the letter case of its uuid: stored, and
    # digested, in the canonical lower case.
    document = {**document, "uuid": str(submission_uuid)}
    canonical = canonical_json(document)
    digest = sha256_hex(canonical)

    prepared = _prepare(submitter, document, canonical, submission_uuid, digest, status)
    # Nearly every upload is new: the uuid is not looked up first. A retry
    # (or a concurrent upload of the same uuid, which PostgreSQL makes wait
    # for the other's commit) fails on the submission's INSERT, the first
    # statement of the transaction, and is answered from the stored one.
    try:
        if _one_statement(prepared):
            # The statement that stores the document is the whole transaction:
            # no BEGIN and COMMIT round trips, and the key's baseline mark it
            # writes is held until its own commit only, not while the answer
            # comes back to Python and the COMMIT goes out.
            _store(prepared)
        else:
            with transaction.atomic():
                _store(prepared)
                # A trusted submitter's upload is approved on arrival, through
                # moderation's one service (and its audit log).
                submission_arrived(submission=prepared.submission)
    except IntegrityError:
        existing = Submission.objects.filter(uuid=submission_uuid).first()
        if existing is None:
            raise
        return _same_or_conflict(existing, digest, submitter)
    return SubmissionOutcome(prepared.submission, created=True, runs=tuple(prepared.runs))


def _one_statement(prepared: _Prepared) -> bool:
    """Whether the document is stored by one statement and nothing else: on
    PostgreSQL, outside a caller's transaction, with every dimension row
    already stored, and nothing for moderation to do on arrival."""
    return (
        connection.vendor == "postgresql"
        and not connection.in_atomic_block
        and not prepared.missing
        and not arrival_moderated(submission=prepared.submission)
    )


def _same_or_conflict(
    existing: Submission, digest: str, submitter: AbstractBaseUser
) -> SubmissionOutcome:
    """A retry is the same submitter's same content; anyone else's upload
    under that uuid is a conflict, even with the same content, so that a
    replayed document never hands out somebody else's submission."""
    if existing.submitter_id != submitter.pk:
        raise SubmissionConflict(existing, other_submitter=True)
    if existing.status == Submission.Status.DELETED:
        raise SubmissionGone(existing)
    if existing.content_digest != digest:
        raise SubmissionConflict(existing)
    return SubmissionOutcome(existing, created=False)


@dataclass
class _Prepared:
    """A document made ready to store: its rows, built, and what each needs."""

    submission: Submission
    canonical: str
    runs: list[Run]
    # The dimension rows nobody stored yet, for dimensions_create.
    missing: list[tuple[Run, str, type[Dimension], dict[str, Any], str]]
    # (run position, metric id, parameter keys, the measurement's document)
    measurements: list[tuple[int, int, dict[str, str], dict[str, Any]]]
    names: set[tuple[int, str, str]]


def _prepare(
    submitter: AbstractBaseUser,
    document: dict[str, Any],
    canonical: str,
    submission_uuid: uuid_module.UUID,
    digest: str,
    status: str,
) -> _Prepared:
    """The rows of ``document``, built from what is stored already (the
    catalog, the dimension rows, the alias rules): reads only."""
    source = document["source"]
    submission = Submission(
        uuid=submission_uuid,
        submitter=submitter,
        source=source["kind"],
        status=status,
        schema_version=int(document["schema"]),  # 1.0 passes the schema's const 1
        content_digest=digest,
        document=document,
        tool=source.get("tool", ""),
        tool_version=source.get("tool_version", ""),
        command=source.get("command", ""),
        citation=source.get("citation"),
        note=source.get("note", ""),
    )
    aliases = alias_map()
    environments = [_run_environment(document, run_doc, aliases) for run_doc in document["runs"]]
    metrics, dimension_ids = _lookup(
        {run["benchmark"] for run in document["runs"]},
        {(model, digest) for wanted, _ in environments for model, _, digest in wanted.values()},
    )
    if missing := _missing_from_catalog(document["runs"], metrics):
        exc = CatalogIncomplete(missing)
        logger.warning("upload refused: %s", exc)
        raise exc
    built = [
        _run_new(position, run_doc, environment, metrics, dimension_ids)
        for position, (run_doc, environment) in enumerate(
            zip(document["runs"], environments, strict=True)
        )
    ]
    runs = [run for run, _ in built]
    measurements = [
        (
            position,
            metrics[(run_doc["benchmark"], m["metric"])][0],
            parameter_keys(m.get("parameters", {})),
            m,
        )
        for position, run_doc in enumerate(document["runs"])
        for m in run_doc["measurements"]
    ]
    return _Prepared(
        submission=submission,
        canonical=canonical,
        runs=runs,
        missing=[(run, *item) for run, missing in built for item in missing],
        measurements=measurements,
        names=_parameter_names(measurements, runs),
    )


def _missing_from_catalog(
    runs: list[dict[str, Any]], metrics: dict[tuple[str, str | None], tuple[int, int]]
) -> list[tuple[str, str]]:
    """What ``runs`` use that _lookup did not find: (JSON path of its first
    use, "benchmark b" or "metric m of benchmark b"), each named once."""
    missing: dict[tuple[str, str | None], str] = {}
    for position, run in enumerate(runs):
        benchmark = run["benchmark"]
        if (benchmark, None) not in metrics:
            missing.setdefault((benchmark, None), f"$.runs[{position}].benchmark")
            continue
        for index, measurement in enumerate(run["measurements"]):
            if (benchmark, measurement["metric"]) not in metrics:
                missing.setdefault(
                    (benchmark, measurement["metric"]),
                    f"$.runs[{position}].measurements[{index}].metric",
                )
    return [
        (path, f"metric {metric} of benchmark {benchmark}" if metric else f"benchmark {benchmark}")
        for (benchmark, metric), path in missing.items()
    ]


def _store(prepared: _Prepared) -> None:
    """Write the rows of a prepared document; ``prepared``'s submission and
    runs get their ids."""
    submission, runs, measurements = prepared.submission, prepared.runs, prepared.measurements
    dimensions_create(prepared.missing)
    if connection.vendor == "postgresql":
        _insert_postgresql(submission, prepared.canonical, runs, measurements, prepared.names)
        return
    _insert_row(submission)
    for run in runs:
        run.submission = submission
        _insert_row(run)
    ids = [run.pk for run in runs]
    _insert_measurements(
        [
            (
                ids[position],
                metric_id,
                m.get("parameters", {}),
                m["value"] + 0.0,  # -0.0 stored as 0.0: _run_new says why
                m.get("samples", []),
                m.get("approximate", False),
                m.get("note", ""),
                keys,
            )
            for position, metric_id, keys, m in measurements
        ]
    )
    _insert_parameter_names(prepared.names)
    # Pending results are scored against the approved baseline too, so
    # that a moderator sees an outlier before approving it.
    baselines_mark_dirty(runs=[(run.pk, run.fingerprint) for run in runs])


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


def _lookup(
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


def _parameter_names(
    measurements: list[tuple[Any, ...]], runs: list[Run]
) -> set[tuple[int, str, str]]:
    """The metrics' parameter names /compare/ offers (MetricParameter) that
    this document uses: (metric id, scope, name); stored by one insert that
    leaves those already known as they are. ``measurements`` give their
    run's position, metric id and parameter keys first."""
    # Names gathered per metric first (set unions of dict keys, in C): the
    # tuples built per measurement and name cost more than the rest of this
    # (docs/performance.md, "Ingest, 2026-11-26 (evening)").
    point_names: dict[int, set[str]] = defaultdict(set)
    run_names: dict[int, set[str]] = defaultdict(set)
    for position, metric_id, keys, *_ in measurements:
        point_names[metric_id].update(keys)
        run_names[metric_id].update(runs[position].parameter_keys)
    return {
        (metric_id, scope, name)
        for scope, by_metric in (
            (MetricParameter.Scope.POINT.value, point_names),
            (MetricParameter.Scope.RUN.value, run_names),
        )
        for metric_id, names in by_metric.items()
        for name in names
    }


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
_JSON_COLUMNS = (2, 4, 7)


# PostgreSQL: a document is stored by one statement of fixed text (psycopg
# parses it once and caches it): the submission, its runs, their
# measurements, the metrics' parameter names and the runs' baseline marks
# (baselines/refresh.py). Runs travel as a JSON array (one json.dumps, in
# C); the measurements are read from the stored document's jsonb, with their
# metric ids and parameter keys beside it. Through the ORM these were five
# statements, two of them compiled anew for every upload; a multi-row VALUES
# list had a text per row count, too long for psycopg's cache
# (docs/performance.md, "Ingest, 2026-11-25"); the measurements written out
# again as JSON cost Python and PostgreSQL more than reading them from the
# document ("Ingest, 2026-11-26").
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
    RETURNING id
), run AS (
    INSERT INTO {run} (submission_id, {run_columns})
    SELECT submission.id, {run_columns}
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
        parameter=quote(MetricParameter._meta.db_table),
        marks=mark_inserted_runs_sql("run"),
    )


def _insert_postgresql(
    submission: Submission,
    canonical: str,
    runs: list[Run],
    measurements: list[tuple[Any, ...]],
    names: set[tuple[int, str, str]],
) -> None:
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
    params["document"] = canonical
    params["citation"] = None if submission.citation is None else json.dumps(submission.citation)
    params["runs"] = json.dumps([_run_row(run) for run in runs])
    # The measurements' values are read from the stored document itself; of
    # each only what the document does not hold goes along, per run, in the
    # document's order: [metric id, parameter keys].
    keys: list[list[Any]] = [[] for _ in runs]
    for position, metric_id, point_keys, _ in measurements:
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
    _stored(submission, submission_id)
    for run, run_id in zip(runs, run_ids, strict=True):
        run.submission = submission
        _stored(run, run_id)
    # Pending results are scored against the approved baseline too, so that
    # a moderator sees an outlier before approving it.
    baselines_runs_marked(queue=queue_needed(list(zip(inserted, claimed, strict=True)), now))


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


def _stored(instance: Submission | Run, pk: int) -> None:
    """The model instance as the ORM leaves one it has just inserted."""
    instance.pk = pk
    instance._state.adding = False
    instance._state.db = connection.alias


def _insert_row(instance: Submission | Run) -> None:
    """``instance.save(force_insert=True)`` (SQLite, the embedded default):
    the same values, prepared by each field as save() prepares them
    (auto_now_add set on the instance too), in a statement of fixed text.
    The ORM compiled its INSERT anew for every row, a tenth of an upload's
    CPU in the one runserver process (docs/performance.md)."""
    statement, fields = _row_insert(type(instance))
    params = [
        field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        _stored(instance, cursor.fetchone()[0])


@functools.cache
def _row_insert(model: type[Submission | Run]) -> tuple[str, list[Any]]:
    quote = connection.ops.quote_name
    meta = model._meta
    fields = [field for field in meta.local_concrete_fields if field is not meta.auto_field]
    statement = (
        f"INSERT INTO {quote(meta.db_table)} "  # noqa: S608 -- names only
        f"({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {quote(meta.pk.column)}"
    )
    return statement, fields


def _insert_parameter_names(names: set[tuple[int, str, str]]) -> None:
    """MetricParameter's bulk_create(ignore_conflicts=True) of these
    (metric id, scope, name) rows, in the same order, as one executemany of
    fixed text (SQLite): the ORM built a model instance per row and
    compiled a statement per row count."""
    if not names:
        return
    quote = connection.ops.quote_name
    columns = ", ".join(quote(column) for column in ("metric_id", "scope", "name"))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT OR IGNORE INTO {quote(MetricParameter._meta.db_table)} ({columns}) "  # noqa: S608 -- names only
            "VALUES (%s, %s, %s)",
            list(names),
        )


def _insert_measurements(rows: list[tuple[Any, ...]]) -> None:
    """One multi-row INSERT for a document's measurements (SQLite, the
    embedded default).

    A sweep has dozens of them and uploads come by the hundred per second;
    bulk_create spent more CPU building model instances and typed arrays
    than PostgreSQL spent storing the rows (docs/performance.md, Ingest).
    JSON values are adapted exactly as JSONField adapts them.
    """
    if not rows:
        return
    adapt = connection.ops.adapt_json_value
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in _MEASUREMENT_COLUMNS)
    row_placeholders = "(" + ", ".join(["%s"] * len(_MEASUREMENT_COLUMNS)) + ")"
    with connection.cursor() as cursor:
        # Batches keep the statement under SQLite's 32,766 parameter limit.
        for start in range(0, len(rows), 1000):
            batch = rows[start : start + 1000]
            params = [
                adapt(v, None) if i in _JSON_COLUMNS else v
                for row in batch
                for i, v in enumerate(row)
            ]
            cursor.execute(
                f"INSERT INTO {quote(Measurement._meta.db_table)} ({columns}) VALUES "  # noqa: S608 -- names only
                + ", ".join([row_placeholders] * len(batch)),
                params,
            )


# A run's dimensions: key → (model, field values after the alias rules, digest).
Dimensions = dict[str, tuple[type[Dimension], dict[str, Any], str]]


def _run_environment(
    document: dict[str, Any], run_doc: dict[str, Any], aliases: dict
) -> tuple[Dimensions, str]:
    """The dimension rows ``run_doc`` describes, normalized, with the
    moderators' alias rules ("openzfs" is "zfs") applied after normalization;
    and the run's comparability key (run_fingerprint)."""
    environment = run_environment(document, run_doc)
    server = server_fields(environment["database"])
    client = client_fields(environment.get("client", {}))
    described = {
        "hardware": (Hardware, hardware_fields(environment.get("hardware", {}))),
        "storage": (Storage, storage_fields(environment.get("storage", {}))),
        "os": (OperatingSystem, os_fields(environment.get("os", {}))),
        "server": (DatabaseServer, server),
        "client": (Client, client),
    }
    wanted = {}
    for key, (model, values) in described.items():
        values = aliases_apply(key, values, aliases)
        wanted[key] = (model, values, sha256_hex(canonical_json(values)))
    fingerprint = run_fingerprint(
        benchmark=run_doc["benchmark"],
        benchmark_version=run_doc.get("benchmark_version", "1"),
        parameters=run_doc.get("parameters", {}),
        engine=server["engine"],
        engine_major=server["version_major"],
        load_engine=client["load_engine"],
    )
    return wanted, fingerprint


def _run_new(
    position: int,
    run_doc: dict[str, Any],
    environment: tuple[Dimensions, str],
    metrics: dict[tuple[str, str | None], tuple[int, int]],
    dimension_ids: dict[tuple[str, str], int],
) -> tuple[Run, list[tuple[str, type[Dimension], dict[str, Any], str]]]:
    """The run of ``run_doc``, not yet stored (its submission is not either),
    with the ids of its dimensions already stored, and the (key, model,
    values, digest) of those that are not, for dimensions_create."""
    dimensions, fingerprint = environment
    # Only the id and name are read of it: the answer names the benchmark.
    benchmark = Benchmark(pk=metrics[(run_doc["benchmark"], None)][0], name=run_doc["benchmark"])
    benchmark._state.adding = False
    benchmark_version = run_doc.get("benchmark_version", "1")
    parameters = run_doc.get("parameters", {})
    started_at, ended_at = run_doc.get("started_at"), run_doc.get("ended_at")
    ids = {
        key: dimension_ids.get((model._meta.db_table, digest))
        for key, (model, _, digest) in dimensions.items()
    }
    missing = [(key, *dimensions[key]) for key, pk in ids.items() if pk is None]
    load_engine_cpu = run_doc.get("load_engine_cpu")
    if load_engine_cpu is not None:
        # -0.0 (it passes a minimum of 0) is stored as 0.0 on both databases:
        # SQLite's REAL drops the sign, and so did the ORM on PostgreSQL (the
        # literal -0.0 it sent is a numeric), but float8 read from the JSON
        # rows of _insert_postgresql keeps it. Adding 0.0 drops it (IEEE).
        load_engine_cpu += 0.0
    noise = run_noise(
        repetitions=run_doc.get("repetitions"),
        samples=(m.get("samples") or () for m in run_doc["measurements"]),
        load_engine_cpu=load_engine_cpu,
    )
    run = Run(
        position=position,
        benchmark=benchmark,
        benchmark_version=benchmark_version,
        parameters=parameters,
        parameter_keys=parameter_keys(parameters),
        repetitions=run_doc.get("repetitions", 1),
        noise=noise.stored,
        repetition_cv=noise.cv,
        load_engine_cpu=load_engine_cpu,
        started_at=parse_time(started_at) if started_at else None,
        ended_at=parse_time(ended_at) if ended_at else None,
        note=run_doc.get("note", ""),
        hardware_id=ids["hardware"],
        storage_id=ids["storage"],
        os_id=ids["os"],
        server_id=ids["server"],
        client_id=ids["client"],
        fingerprint=fingerprint,
        fingerprint_version=FINGERPRINT_VERSION,
    )
    return run, missing


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
