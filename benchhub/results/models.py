"""Benchmark results, normalized.

The environment a run executed in is split into five dimensions (hardware,
storage, OS, database server, client). Each dimension row holds the
normalized fields people filter on *and* the raw strings the agent sent, so
that normalization can be improved and re-applied later. A row is stored
once per distinct description: ``digest`` is a hash of all its fields, and
uploads look rows up by it.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

# Every free-text field of the document is at most this long (the schema's
# "text" type); normalized values derived from it can be as long.
TEXT = 500


class Dimension(models.Model):
    digest = models.CharField(max_length=64, unique=True, editable=False)

    class Meta:
        abstract = True


class Hardware(Dimension):
    cpu_vendor = models.CharField(max_length=50, blank=True, db_index=True)
    cpu_model = models.CharField(max_length=TEXT, blank=True, db_index=True)
    cpu_raw = models.CharField(max_length=TEXT, blank=True)
    cores = models.PositiveIntegerField(null=True, blank=True)
    threads = models.PositiveIntegerField(null=True, blank=True)
    ram_bytes = models.BigIntegerField(null=True, blank=True)
    virtualization = models.CharField(max_length=TEXT, blank=True, db_index=True)
    virtualization_raw = models.CharField(max_length=TEXT, blank=True)

    class Meta:
        verbose_name_plural = "hardware"

    def __str__(self) -> str:
        cpu = " ".join(filter(None, [self.cpu_vendor, self.cpu_model])) or "unknown CPU"
        if not self.cores:
            return f"{cpu}, ? cores"
        return f"{cpu}, {self.cores} core{'' if self.cores == 1 else 's'}"


class Storage(Dimension):
    KINDS = ["hdd", "ssd", "nvme", "virtual", "unknown"]

    device_model = models.CharField(max_length=TEXT, blank=True)
    kind = models.CharField(
        max_length=10, choices=[(k, k) for k in KINDS], default="unknown", db_index=True
    )
    raid = models.CharField(max_length=TEXT, blank=True)
    filesystem = models.CharField(max_length=TEXT, blank=True, db_index=True)
    filesystem_raw = models.CharField(max_length=TEXT, blank=True)
    # Sorted, de-duplicated, comma-joined: "noatime,sync". Stored as text so
    # that it compares the same on SQLite and PostgreSQL; unindexed, as a set
    # of options can outgrow a btree entry and one-option filters use LIKE.
    mount_options = models.TextField(blank=True)
    mount_options_raw = models.TextField(blank=True)
    io_scheduler = models.CharField(max_length=TEXT, blank=True, db_index=True)
    io_scheduler_raw = models.CharField(max_length=TEXT, blank=True)

    class Meta:
        verbose_name_plural = "storage"

    def __str__(self) -> str:
        opts = f" ({self.mount_options})" if self.mount_options else ""
        return f"{self.filesystem or 'unknown fs'}{opts} on {self.kind}"


class OperatingSystem(Dimension):
    FAMILIES = ["linux", "windows", "freebsd", "macos", "other", ""]

    family = models.CharField(max_length=10, blank=True, db_index=True)
    distribution = models.CharField(max_length=TEXT, blank=True, db_index=True)
    distribution_raw = models.CharField(max_length=TEXT, blank=True)
    version = models.CharField(max_length=TEXT, blank=True)
    kernel = models.CharField(max_length=TEXT, blank=True)

    def __str__(self) -> str:
        return " ".join(filter(None, [self.distribution or self.family, self.version])) or "?"


class DatabaseServer(Dimension):
    engine = models.CharField(max_length=20, db_index=True)
    version = models.CharField(max_length=TEXT, blank=True, db_index=True)
    version_major = models.CharField(max_length=TEXT, blank=True, db_index=True)
    # Zero-padded version parts ("00015.00018.00000") so that text order is
    # version order in both databases.
    version_sort = models.CharField(max_length=TEXT, blank=True, db_index=True)
    version_raw = models.CharField(max_length=TEXT)
    architecture = models.CharField(max_length=20, blank=True, db_index=True)
    config_profile = models.CharField(max_length=TEXT, blank=True, db_index=True)
    settings = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        arch = f" {self.architecture}" if self.architecture else ""
        return f"{self.engine} {self.version or '?'}{arch}"


class Client(Dimension):
    PROTOCOLS = [
        "embedded",
        "local",
        "unix_socket",
        "tcp_loopback",
        "tcp_remote",
        "services_api",
        "named_pipe",
        "xnet",  # Firebird's local shared-memory transport on Windows
        "shared_memory",  # MySQL/MariaDB --protocol=MEMORY on Windows
        "unknown",
    ]
    PLACEMENTS = ["same_core", "other_core", "unpinned"]

    protocol = models.CharField(max_length=20, default="unknown", db_index=True)
    driver = models.CharField(max_length=TEXT, blank=True, db_index=True)
    driver_version = models.CharField(max_length=TEXT, blank=True)
    cpu_placement = models.CharField(max_length=20, default="unpinned", db_index=True)
    load_engine = models.CharField(max_length=TEXT, blank=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.protocol} via {self.driver or self.load_engine or '?'}"


class Benchmark(models.Model):
    """The catalog (agents/benchhub_contract/schema/benchmarks.json), mirrored
    into the database after each migrate so that runs can reference it."""

    name = models.SlugField(max_length=40, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    origin = models.CharField(max_length=100, blank=True)

    def __str__(self) -> str:
        return self.name


class Metric(models.Model):
    DIRECTIONS = [("higher", "higher is better"), ("lower", "lower is better"), ("none", "n/a")]

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="metrics")
    name = models.SlugField(max_length=40)
    unit = models.CharField(max_length=20)
    direction = models.CharField(max_length=6, choices=DIRECTIONS)
    description = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "name"], name="metric_unique_per_benchmark"
            )
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.name}.{self.name} ({self.unit})"


class MetricParameter(models.Model):
    """A parameter name some stored result of a metric uses: the x and
    series choices /compare/ offers. Kept at upload (one insert that ignores
    names already there), so that the page does not read every measurement
    of the metric to list them (at a million measurements that was a third
    of its time). Names of results that are not public are listed too: a
    name, never a value; a choice nobody's visible result has compares to
    an empty chart that says so."""

    class Scope(models.TextChoices):
        POINT = "param", "measurement parameter"
        RUN = "run_param", "run parameter"

    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="parameter_names")
    scope = models.CharField(max_length=9, choices=Scope.choices)
    name = models.CharField(max_length=40)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["metric", "scope", "name"], name="metric_parameter_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric}: {self.scope}.{self.name}"


class Submission(models.Model):
    class Source(models.TextChoices):
        AGENT = "agent", "measured by the agent"
        IMPORT = "import", "imported tool output"
        CURATED = "curated", "curated article data"

    class Status(models.TextChoices):
        # Only APPROVED is public (results.selectors.public_submissions_q);
        # every change of status goes through benchhub.moderation.services.
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        FLAGGED = "flagged"
        RERUN = "rerun", "re-run requested"
        HIDDEN = "hidden"  # by its owner or a moderator; unhide restores the status before
        DELETED = "deleted"  # gone for everyone but the audit log

    uuid = models.UUIDField(unique=True, default=uuid.uuid4)
    submitter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions"
    )
    source = models.CharField(max_length=10, choices=Source.choices, db_index=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    # Why it has its status (a rejection's reason, a flag's), shown to its submitter.
    status_reason = models.TextField(blank=True)
    # What "unhide" restores.
    status_before_hidden = models.CharField(max_length=10, choices=Status.choices, blank=True)
    schema_version = models.PositiveSmallIntegerField()
    # SHA-256 of the canonical JSON of the document: a retried upload with
    # the same uuid is the same submission only if this matches.
    content_digest = models.CharField(max_length=64)
    document = models.JSONField()
    tool = models.CharField(max_length=TEXT, blank=True)
    tool_version = models.CharField(max_length=TEXT, blank=True)
    command = models.TextField(blank=True)
    citation = models.JSONField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["status", "-created_at"], name="submission_status_recent")]

    def __str__(self) -> str:
        return str(self.uuid)


class Run(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="runs")
    position = models.PositiveIntegerField(help_text="index of the run in its document")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="runs")
    benchmark_version = models.CharField(max_length=20, default="1")
    parameters = models.JSONField(default=dict, blank=True)
    repetitions = models.PositiveIntegerField(default=1)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)

    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT, related_name="runs")
    storage = models.ForeignKey(Storage, on_delete=models.PROTECT, related_name="runs")
    os = models.ForeignKey(OperatingSystem, on_delete=models.PROTECT, related_name="runs")
    server = models.ForeignKey(DatabaseServer, on_delete=models.PROTECT, related_name="runs")
    client = models.ForeignKey(Client, on_delete=models.PROTECT, related_name="runs")

    fingerprint = models.CharField(max_length=64, db_index=True)
    fingerprint_version = models.PositiveSmallIntegerField()
    # Each parameter's grouping key (benchhub/results/points.py), worked
    # out at upload so that a comparison over run_param.<name> groups by text.
    parameter_keys = models.JSONField(default=dict, blank=True, editable=False)

    # Noise flags (benchhub/results/noise.py), comma-joined in order, ""
    # for a quiet run; the median coefficient of variation behind "noisy";
    # the load engine's own CPU use (%) behind "client-bound".
    noise = models.CharField(max_length=40, blank=True, default="", db_index=True)
    repetition_cv = models.FloatField(null=True, blank=True)
    load_engine_cpu = models.FloatField(null=True, blank=True)

    # A copy of its submission's status, so that a comparison filters runs
    # by who may see them without joining every measurement's run to its
    # submission (a tenth of a computed comparison's statement at 1 M).
    # Written with the run (storage.py, both paths) and with every change of
    # the status (benchhub.moderation.services.submission_moderate, in the
    # same transaction); migration 0013 copied it for the runs before.
    submission_status = models.CharField(
        max_length=10,
        choices=Submission.Status.choices,
        default=Submission.Status.PENDING,
        editable=False,
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "position"], name="run_position_unique")
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.name} run {self.pk}"


class Measurement(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="measurements")
    # Indexed by measurement_metric_covering (its first column).
    metric = models.ForeignKey(
        Metric, on_delete=models.PROTECT, related_name="measurements", db_index=False
    )
    parameters = models.JSONField(default=dict, blank=True)
    # Each parameter's grouping key (benchhub/results/points.py): "n:20" for
    # 20, 20.0 and "20" alike, worked out once at upload instead of by every
    # comparison for every row.
    parameter_keys = models.JSONField(default=dict, blank=True, editable=False)
    value = models.FloatField()
    samples = models.JSONField(default=list, blank=True)
    approximate = models.BooleanField(default=False)
    note = models.TextField(blank=True)
    # Modified z-score against the approved baseline of its key and point
    # (|score| > 3.5 is the usual outlier cut); set by the baselines task,
    # None until there are enough approved results to judge.
    outlier_score = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [
            # A comparison reads one metric's measurements: everything it
            # needs is in the index (an index-only scan of that metric's
            # slice, not a visit to every page of the table), in run order
            # for the join to runs.
            models.Index(
                fields=["metric", "run"],
                include=["id", "value", "approximate", "parameter_keys"],
                name="measurement_metric_covering",
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric.name}={self.value}"


class RunMetric(models.Model):
    """A run's measurements of one metric, summarized: how many, the least
    and the greatest value. Written with the measurements, in the same
    statement or transaction (storage.py, both paths), and by migration 0011
    for those stored before; gone with its run. Nothing else changes it:
    measurements are never updated or deleted on their own, and what may see
    a run (its submission's status) and what describes it (dimension rows,
    their aliases) are read through the run, as for measurements. The changes
    between releases read a run's best value per metric here, one row per run
    and metric instead of every measurement (a select-update run has 9 points,
    a sql-bench run 47)."""

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="metric_summaries", db_index=False
    )
    metric = models.ForeignKey(
        Metric, on_delete=models.PROTECT, related_name="run_summaries", db_index=False
    )
    n = models.PositiveIntegerField()
    low = models.FloatField()
    high = models.FloatField()

    class Meta:
        constraints = [
            # Also the index of the run's foreign key (its first column).
            models.UniqueConstraint(fields=["run", "metric"], name="run_metric_unique")
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.metric_id}: {self.n} from {self.low} to {self.high}"
