"""Measurement packs (models.py, packs.py): the table of packs and of the
metrics whose packs are built. Asked for by the first comparison that finds
them out of date and built by the worker (no sooner than packs.build_wait
allows), not here: until then comparisons read the rows.

A large pack's bytes are stored out of line uncompressed (STORAGE
EXTERNAL): numbers barely compress, and a comparison reads every byte.
"""

import django.db.models.deletion
from django.db import migrations, models


def _external(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in ("vals", "runs", "ids"):
        schema_editor.execute(
            f'ALTER TABLE comparisons_measurementpack ALTER COLUMN "{column}" SET STORAGE EXTERNAL'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("comparisons", "0007_kept_answers_in_the_cache"),
        ("results", "0013_run_submission_status"),
    ]

    operations = [
        migrations.CreateModel(
            name="PackedMetric",
            fields=[
                (
                    "metric",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="results.metric",
                    ),
                ),
                ("versions", models.CharField(max_length=100)),
                ("built_at", models.DateTimeField()),
                (
                    "pack_count",
                    models.PositiveIntegerField(help_text="how many packs the build wrote"),
                ),
                (
                    "build_seconds",
                    models.FloatField(
                        help_text="how long the build took, its lock's wait included (packs.build_wait spaces the next build by it)"
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="MeasurementPack",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("approximate", models.BooleanField()),
                ("parameters", models.JSONField()),
                ("parameter_keys", models.JSONField()),
                ("run_benchmark_version", models.CharField(max_length=20)),
                ("run_fingerprint", models.CharField(max_length=64)),
                ("run_noise", models.CharField(max_length=40)),
                ("run_parameters", models.JSONField()),
                ("run_parameter_keys", models.JSONField()),
                ("n", models.PositiveIntegerField()),
                ("low", models.FloatField()),
                ("high", models.FloatField()),
                ("vals", models.BinaryField()),
                ("runs", models.BinaryField()),
                ("ids", models.BinaryField()),
                (
                    "metric",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="results.metric",
                    ),
                ),
                (
                    "run_benchmark",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="results.benchmark",
                    ),
                ),
                (
                    "run_client",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="results.client",
                    ),
                ),
                (
                    "run_hardware",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="results.hardware",
                    ),
                ),
                (
                    "run_os",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="results.operatingsystem",
                    ),
                ),
                (
                    "run_server",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="results.databaseserver",
                    ),
                ),
                (
                    "run_storage",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="results.storage",
                    ),
                ),
            ],
        ),
        migrations.RunPython(_external, migrations.RunPython.noop),
    ]
