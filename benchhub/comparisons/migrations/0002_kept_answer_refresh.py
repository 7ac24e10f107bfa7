"""What the worker needs to compute a kept answer again after its data
changed (benchhub/comparisons/tasks.py): the request, and when the answer
was last served (only answers people ask for are refreshed)."""

from django.db import migrations


def _run(statement):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0001_data_changes")]

    operations = [
        migrations.RunPython(
            _run(
                "ALTER TABLE comparisons_keptanswer ADD COLUMN request bytea, "
                "ADD COLUMN served_at timestamptz NOT NULL DEFAULT now()"
            ),
            _run(
                "ALTER TABLE comparisons_keptanswer DROP COLUMN request, DROP COLUMN served_at"
            ),
        )
    ]
