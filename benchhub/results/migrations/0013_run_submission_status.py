# Each run keeps a copy of its submission's status (Run.submission_status),
# written with the run and with every change of the status from now on, and
# here once for the runs already stored, by one UPDATE both databases run.

from django.db import migrations, models


def copy_statuses(apps, schema_editor):
    """Also called by benchmarks/compare.py after it fills with COPY."""
    quote = schema_editor.connection.ops.quote_name
    run = quote(apps.get_model("results", "Run")._meta.db_table)
    submission = quote(apps.get_model("results", "Submission")._meta.db_table)
    schema_editor.execute(
        f"UPDATE {run} SET submission_status = "  # noqa: S608 -- our names
        f"(SELECT status FROM {submission} WHERE {submission}.id = {run}.submission_id)"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0012_run_metric_summaries"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="submission_status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("approved", "Approved"),
                    ("rejected", "Rejected"),
                    ("flagged", "Flagged"),
                    ("rerun", "re-run requested"),
                    ("hidden", "Hidden"),
                    ("deleted", "Deleted"),
                ],
                default="pending",
                editable=False,
                max_length=10,
            ),
        ),
        migrations.RunPython(copy_statuses, migrations.RunPython.noop, elidable=True),
    ]
