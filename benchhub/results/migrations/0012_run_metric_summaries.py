# Each run's measurements of a metric summarized (RunMetric): written with the
# measurements from now on, and here once for those already stored, by one
# INSERT … SELECT … GROUP BY that both databases run.

import django.db.models.deletion
from django.db import migrations, models


def summarize_stored(apps, schema_editor):
    """Also called by benchmarks/compare.py after it fills with COPY."""
    quote = schema_editor.connection.ops.quote_name
    summary = quote(apps.get_model("results", "RunMetric")._meta.db_table)
    measurement = quote(apps.get_model("results", "Measurement")._meta.db_table)
    schema_editor.execute(
        f"INSERT INTO {summary} (run_id, metric_id, n, low, high) "  # noqa: S608 -- our names
        f"SELECT run_id, metric_id, count(*), min(value), max(value) FROM {measurement} "
        "GROUP BY run_id, metric_id"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0011_version_sort_with_prereleases"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunMetric",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("n", models.PositiveIntegerField()),
                ("low", models.FloatField()),
                ("high", models.FloatField()),
                (
                    "metric",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="run_summaries",
                        to="results.metric",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="metric_summaries",
                        to="results.run",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("run", "metric"), name="run_metric_unique")
                ],
            },
        ),
        migrations.RunPython(summarize_stored, migrations.RunPython.noop, elidable=True),
    ]
