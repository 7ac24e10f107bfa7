"""Writes of the results app."""

from __future__ import annotations

import logging
import uuid as uuid_module
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from benchhub_contract.schema import DocumentError, benchmark_catalog, parse_time
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction

from benchhub.results import events
from benchhub.results.comparability import (
    FINGERPRINT_VERSION,
    canonical_json,
    run_fingerprint,
    sha256_hex,
)
from benchhub.results.dimensions import (
    client_fields,
    hardware_fields,
    os_fields,
    server_fields,
    storage_fields,
)
from benchhub.results.documents import document_errors, run_environment
from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Dimension,
    Hardware,
    Metric,
    MetricParameter,
    OperatingSystem,
    Run,
    Storage,
    Submission,
)
from benchhub.results.noise import run_noise
from benchhub.results.points import parameter_keys
from benchhub.results.storage import PreparedDocument, lookup, store

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
            store(prepared)
        else:
            with transaction.atomic():
                store(prepared)
                # A trusted submitter's upload is approved on arrival, through
                # moderation's one service (and its audit log).
                events.hooks.arrived(prepared.submission)
    except IntegrityError:
        existing = Submission.objects.filter(uuid=submission_uuid).first()
        if existing is None:
            raise
        return _same_or_conflict(existing, digest, submitter)
    if status == Submission.Status.APPROVED:
        # Stored public (an import, a seed); one approved on arrival was told
        # by moderation.
        events.public_data_changed.send(
            sender=Submission, metrics={metric for _, metric, *_ in prepared.measurements}
        )
    return SubmissionOutcome(prepared.submission, created=True, runs=tuple(prepared.runs))


def _one_statement(prepared: PreparedDocument) -> bool:
    """Whether the document is stored by one statement and nothing else: on
    PostgreSQL, outside a caller's transaction, with every dimension row
    already stored, and nothing for moderation to do on arrival."""
    return (
        connection.vendor == "postgresql"
        and not connection.in_atomic_block
        and not prepared.missing
        and not events.hooks.moderated_on_arrival(prepared.submission)
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


def _prepare(
    submitter: AbstractBaseUser,
    document: dict[str, Any],
    canonical: str,
    submission_uuid: uuid_module.UUID,
    digest: str,
    status: str,
) -> PreparedDocument:
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
    aliases = events.hooks.alias_rules()
    environments = [_run_environment(document, run_doc, aliases) for run_doc in document["runs"]]
    metrics, dimension_ids = lookup(
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
    return PreparedDocument(
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


def _parameter_names(
    measurements: list[tuple[Any, ...]], runs: list[Run]
) -> set[tuple[int, str, str]]:
    """The metrics' parameter names /compare/ offers (MetricParameter) that
    this document uses: (metric id, scope, name); stored by one insert that
    leaves those already known as they are. ``measurements`` give their
    run's position, metric id and parameter keys first."""
    # Names gathered per metric first (set unions of dict keys, in C): the
    # tuples built per measurement and name cost more than the rest of this
    # (benchmarks/ingest.py).
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
        values = events.hooks.alias_apply(key, values, aliases)
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
