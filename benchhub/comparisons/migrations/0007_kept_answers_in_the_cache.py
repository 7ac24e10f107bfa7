"""Kept comparison answers move to Django's cache (benchhub/comparisons/kept.py),
made stale by versions bumped on commit (changes.py): the triggers that
migrations 0001-0006 put on results', users' and alias rules' tables, their
functions and the three tables of kept answers go (PostgreSQL, where they
were).

The table of the database cache, which keeps the answers where no Redis is
configured (the embedded default), is made on every database: the cache in
use is a setting, the schema is not.

Backward: the table goes, and 0001-0006 are run again as they ran.
"""

from importlib import import_module

from django.core.management import call_command
from django.db import migrations

CACHE_TABLE = "comparisons_kept_cache"
FUNCTIONS = [
    "comparisons_data_changed",
    "comparisons_runs_added",
    "comparisons_measurements_added",
    "comparisons_submission_changed",
    "comparisons_runs_changed",
    "comparisons_measurement_updated",
    "comparisons_measurements_deleted",
]
EARLIER = [
    "0001_data_changes",
    "0002_kept_answer_refresh",
    "0003_kept_floor",
    "0004_inserts_looked_up_by_key",
    "0005_change_time",
    "0006_changes_by_metric",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT t.tgname, c.relname FROM pg_trigger AS t"
                " JOIN pg_class AS c ON c.oid = t.tgrelid"
                " WHERE NOT t.tgisinternal AND t.tgname LIKE 'comparisons\\_%%'"
            )
            triggers = cursor.fetchall()
        for name, table in triggers:
            schema_editor.execute(f'DROP TRIGGER "{name}" ON "{table}"')
        for function in FUNCTIONS:
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()")
        for table in ("comparisons_keptanswer", "comparisons_datachange", "comparisons_keptfloor"):
            schema_editor.execute(f"DROP TABLE IF EXISTS {table}")
    call_command("createcachetable", CACHE_TABLE, database=schema_editor.connection.alias)


def backward(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {CACHE_TABLE}")
    for name in EARLIER:
        module = import_module(f"benchhub.comparisons.migrations.{name}")
        for operation in module.Migration.operations:
            operation.code(apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0006_changes_by_metric")]

    operations = [migrations.RunPython(forward, backward)]
