from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from benchhub.results.models import Metric, Run


class Study(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="studies"
    )
    title = models.CharField(max_length=200)
    question = models.TextField(help_text="what the study asks, in a sentence")
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="studies")
    # What varies: one or two comparison axes (filesystem, io_scheduler, config_profile …);
    # the first is the x axis, the second separates the series.
    varied = models.JSONField()
    reference = models.CharField(max_length=200, blank=True, help_text="a value of the first = 100")
    # Where each run's value is read: {"operation": "TOTALS"}, or {} for its best point.
    point = models.JSONField(default=dict, blank=True)
    write_up = models.TextField(blank=True)
    citation = models.JSONField(null=True, blank=True)
    repeats = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="repetitions"
    )
    runs = models.ManyToManyField(Run, related_name="studies")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.title
