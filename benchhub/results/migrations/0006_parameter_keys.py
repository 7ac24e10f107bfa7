# Each parameter's grouping key, stored (benchhub/results/points.py), and an
# index a comparison reads instead of the table. Existing rows are keyed in
# batches, each its own transaction (the migration is not atomic), so that a
# database of millions of measurements is not rewritten in one transaction;
# rows stored meanwhile by a running release get their keys from the next
# batch, as the batches go by id. Re-running it is harmless.

import json
from collections import defaultdict

import django.db.models.deletion
from django.db import migrations, models, transaction

from benchhub.results.points import parameter_keys

BATCH = 10_000


def key_existing_rows(apps, schema_editor):
    database = schema_editor.connection.alias
    for name in ("Run", "Measurement"):
        model = apps.get_model("results", name)
        rows = model.objects.using(database).order_by("pk")
        last = 0
        while True:
            with transaction.atomic(using=database):
                batch = list(rows.filter(pk__gt=last).values_list("pk", "parameters")[:BATCH])
                if not batch:
                    break
                # A sweep repeats a few parameter sets: one UPDATE per set.
                same_keys = defaultdict(list)
                for pk, parameters in batch:
                    same_keys[json.dumps(parameter_keys(parameters), sort_keys=True)].append(pk)
                for keys, pks in same_keys.items():
                    rows.filter(pk__in=pks).update(parameter_keys=json.loads(keys))
                last = batch[-1][0]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("results", "0005_moderation_statuses"),
    ]

    operations = [
        migrations.AddField(
            model_name="measurement",
            name="parameter_keys",
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
        migrations.AddField(
            model_name="run",
            name="parameter_keys",
            field=models.JSONField(blank=True, default=dict, editable=False),
        ),
        migrations.RunPython(key_existing_rows, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="measurement",
            index=models.Index(
                fields=["metric", "run"],
                include=("id", "value", "approximate", "parameter_keys"),
                name="measurement_metric_covering",
            ),
        ),
        migrations.AlterField(
            model_name="measurement",
            name="metric",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="measurements",
                to="results.metric",
            ),
        ),
    ]
