from django.db import models

from benchhub.results.models import Metric


class Baseline(models.Model):
    """The approved results of one comparability key, metric and point
    (measurement parameters such as clients=20), summarized from its
    histogram (BaselineBucket; the rule and its error bound are in
    baselines/histogram.py)."""

    fingerprint = models.CharField(max_length=64)
    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="baselines")
    # Canonical JSON of the point's parameters: equality on text is exact
    # and indexable on every database.
    point = models.CharField(max_length=1000)
    parameters = models.JSONField(default=dict)
    n = models.PositiveIntegerField()
    median = models.FloatField()
    q1 = models.FloatField()
    q3 = models.FloatField()
    minimum = models.FloatField()
    maximum = models.FloatField()
    mad = models.FloatField(help_text="median absolute deviation")
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["fingerprint", "metric", "point"], name="baseline_unique_point"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric_id} at {self.point}: median {self.median} (n={self.n})"


class BaselineBucket(models.Model):
    """How many pooled values of a baseline count in one bucket (a value
    rounded to 4 significant digits: histogram.bucket_of). Merged by adding
    and subtracting counts; the unique index also serves the rank's range
    sums."""

    baseline = models.ForeignKey(Baseline, on_delete=models.CASCADE, related_name="buckets")
    value = models.FloatField()
    # Signed: a subtraction is applied as an upsert before empty buckets go.
    count = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["baseline", "value"], name="baseline_bucket_unique")
        ]

    def __str__(self) -> str:
        return f"{self.baseline_id}: {self.count} at {self.value}"


class CountedRun(models.Model):
    """A run whose measured values are in its key's buckets. Not a foreign
    key: a run deleted outright must leave a trace (its key is rebuilt)."""

    run_id = models.BigIntegerField(unique=True)
    fingerprint = models.CharField(max_length=64, db_index=True)

    def __str__(self) -> str:
        return f"run {self.run_id} in {self.fingerprint}"


class DirtyKey(models.Model):
    """A comparability key whose baselines must be brought up to date (the
    protocol is in baselines/refresh.py)."""

    fingerprint = models.CharField(max_length=64, unique=True)
    marked_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    # The claiming round's own token (uuid4), which its release compares:
    # claimed_at says when (for CLAIM_EXPIRY) but two rounds can claim in
    # the same clock tick, and one must not release the other's claim.
    claim = models.UUIDField(null=True, blank=True)
    # Set when the key must be recomputed from its data (nightly, after an
    # upgrade, after a counted run was deleted outright) rather than updated.
    rebuild_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.fingerprint


class DirtyRun(models.Model):
    """A run whose submission changed (uploaded, approved, rejected …): the
    refresh of its key adds or removes its values and scores it."""

    run_id = models.BigIntegerField(unique=True)
    fingerprint = models.CharField(max_length=64, db_index=True)
    marked_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"run {self.run_id} of {self.fingerprint}"
