"""Packs: a comparison's measurements kept grouped, so that a large one
reads a group per pack instead of a row per measurement (packs.py builds
them, from_packs.py computes cells from them).

A pack holds the approved measurements of one metric that nothing a
public comparison filters or groups on can tell apart: the same point
(its parameters as stored, their keys), the same approximate flag, and
runs of the same benchmark version, fingerprint, machine, storage, OS,
server, client, noise flags and run parameters (``packs.PACK_KEY``). What
tells them apart is only their run and submission, so a comparison that
filters or groups on those (submitter, submission, source, status, run)
reads the rows. Because every run of a pack is alike in all of that, one
of them (``run``) stands for all: the comparison's own filters, applied
to that run and to the pack's point, keep or drop the whole pack exactly
as they would keep or drop each of its measurements.
"""

from __future__ import annotations

from django.db import models

from benchhub.results.models import Metric, Run


class MeasurementPack(models.Model):
    # Not constraints: a pack is rebuilt from the rows, never the other way
    # round, and deleting a run or metric must not wait for its packs.
    metric = models.ForeignKey(
        Metric, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    run = models.ForeignKey(
        Run,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        db_index=False,
        help_text="one of the pack's runs, which stands for all of them in filters",
    )
    approximate = models.BooleanField()
    parameters = models.JSONField()
    parameter_keys = models.JSONField()
    n = models.PositiveIntegerField()
    low = models.FloatField()
    high = models.FloatField()
    # n big-endian float8 (float8send), n int8 run ids, n int8 measurement
    # ids, in measurement id order.
    vals = models.BinaryField()
    runs = models.BinaryField()
    ids = models.BinaryField()

    def __str__(self) -> str:
        return f"{self.n} measurements of metric {self.metric_id} like run {self.run_id}'s"


class PackedMetric(models.Model):
    """A metric whose packs were built, and from which data: the versions
    (kept.py) of its measurements and of what every metric reads, as read
    before the build. Its packs are current while those versions are."""

    metric = models.OneToOneField(
        Metric, on_delete=models.DO_NOTHING, db_constraint=False, primary_key=True, related_name="+"
    )
    versions = models.CharField(max_length=100)
    built_at = models.DateTimeField()
    packs = models.PositiveIntegerField()
    seconds = models.FloatField()

    def __str__(self) -> str:
        return f"metric {self.metric_id}: {self.packs} packs built {self.built_at:%Y-%m-%d %H:%M}"
