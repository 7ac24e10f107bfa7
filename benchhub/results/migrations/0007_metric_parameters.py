# The parameter names of each metric's stored results (MetricParameter),
# which /compare/ offers as axes: kept at upload from now on, and listed here
# once from the measurements already stored (one pass over the distinct
# parameter keys of each metric).

import django.db.models.deletion
from django.db import migrations, models


def list_stored_names(apps, schema_editor):
    database = schema_editor.connection.alias
    Measurement = apps.get_model("results", "Measurement")
    MetricParameter = apps.get_model("results", "MetricParameter")
    names = set()
    for scope, column in (("param", "parameter_keys"), ("run_param", "run__parameter_keys")):
        pairs = (
            Measurement.objects.using(database)
            .order_by()
            .values_list("metric_id", column)
            .distinct()
        )
        for metric_id, keys in pairs.iterator():
            names.update((metric_id, scope, name) for name in keys or {})
    MetricParameter.objects.using(database).bulk_create(
        [MetricParameter(metric_id=m, scope=scope, name=name) for m, scope, name in names],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0006_parameter_keys"),
    ]

    operations = [
        migrations.CreateModel(
            name="MetricParameter",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "scope",
                    models.CharField(
                        choices=[("param", "measurement parameter"), ("run_param", "run parameter")],
                        max_length=9,
                    ),
                ),
                ("name", models.CharField(max_length=40)),
                (
                    "metric",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="parameter_names",
                        to="results.metric",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("metric", "scope", "name"), name="metric_parameter_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(list_stored_names, migrations.RunPython.noop, elidable=True),
    ]
