from django.db import models

from benchhub.results.models import Metric


class Baseline(models.Model):
    """The approved results of one comparability key, metric and point
    (measurement parameters such as clients=20), summarized."""

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
    # Sorted values, so that ranking a new result needs no aggregate query.
    values = models.JSONField(default=list)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["fingerprint", "metric", "point"], name="baseline_unique_point"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric_id} at {self.point}: median {self.median} (n={self.n})"


class DirtyKey(models.Model):
    """A comparability key whose baselines must be recomputed (the protocol
    is in baselines/refresh.py)."""

    fingerprint = models.CharField(max_length=64, unique=True)
    marked_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.fingerprint
