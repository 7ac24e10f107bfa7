"""The comparisons app's tables: measurement packs, a comparison's
measurements kept grouped, so that a large one reads a group per pack
instead of a row per measurement (packs.py builds them, from_packs.py
computes cells from them).

A pack holds the approved measurements of one metric that nothing a
public comparison filters or groups on can tell apart: the same point
(its parameters as stored, their keys), the same approximate flag, and
runs of the same benchmark version, fingerprint, machine, storage, OS,
server, client, noise flags and run parameters (``packs.PACK_KEY``). What
tells them apart is only their run and submission, so a comparison that
filters or groups on those (submitter, submission, source, status, run)
reads the rows. A pack keeps its own copy of what its runs share (the
``run_`` fields), so the comparison's own filters, applied to the pack,
keep or drop the whole pack exactly as they would keep or drop each of its
measurements, with no join to the runs.
"""

from __future__ import annotations

from django.db import models

from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Hardware,
    Metric,
    OperatingSystem,
    Storage,
)


def _copy(model, **options) -> models.ForeignKey:
    # Not a constraint: a pack is rebuilt from the rows, never the other way
    # round, and deleting a row must not wait for the packs.
    return models.ForeignKey(
        model, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+", **options
    )


class MeasurementPack(models.Model):
    """What its measurements share (packs.PACK_KEY), named as the comparison
    filters name it from a measurement with ``run__`` as ``run_``
    (benchhub.results.filters.filterset_with_run_fields), and their numbers."""

    metric = _copy(Metric)
    approximate = models.BooleanField()
    parameters = models.JSONField()
    parameter_keys = models.JSONField()
    run_benchmark = _copy(Benchmark, db_index=False)
    run_benchmark_version = models.CharField(max_length=20)
    run_fingerprint = models.CharField(max_length=64)
    run_hardware = _copy(Hardware, db_index=False)
    run_storage = _copy(Storage, db_index=False)
    run_os = _copy(OperatingSystem, db_index=False)
    run_server = _copy(DatabaseServer, db_index=False)
    run_client = _copy(Client, db_index=False)
    run_noise = models.CharField(max_length=40)
    run_parameters = models.JSONField()
    run_parameter_keys = models.JSONField()
    n = models.PositiveIntegerField()
    low = models.FloatField()
    high = models.FloatField()
    # Bytes, not relations: n big-endian float8 (float8send), n int8 run ids,
    # n int8 measurement ids, in measurement id order.
    vals = models.BinaryField()
    runs = models.BinaryField()
    ids = models.BinaryField()

    def __str__(self) -> str:
        return f"{self.n} measurements of metric {self.metric_id} alike"


class PackedMetric(models.Model):
    """A metric whose packs were built, and from which data: the versions
    (kept.py) of its measurements and of what every metric reads, as read
    before the build. Its packs are current while those versions are current
    and ``built_at`` is less than ``packs.MAX_AGE_SECONDS`` ago."""

    metric = models.OneToOneField(
        Metric, on_delete=models.DO_NOTHING, db_constraint=False, primary_key=True, related_name="+"
    )
    versions = models.CharField(max_length=100)
    built_at = models.DateTimeField()
    pack_count = models.PositiveIntegerField(help_text="how many packs the build wrote")
    build_seconds = models.FloatField(
        help_text="how long the build took, its lock's wait included (packs.build_wait spaces "
        "the next build by it)"
    )

    def __str__(self) -> str:
        return f"metric {self.metric_id}: {self.pack_count} packs, {self.built_at:%Y-%m-%d %H:%M}"
