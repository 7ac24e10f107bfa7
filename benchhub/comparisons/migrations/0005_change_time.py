"""Each change row says when its transaction began (``now()``), so that a
kept answer may be served for a few seconds after a change it missed while
the worker computes it again (kept.py, ``BENCHHUB_COMPARISON_STALE_SECONDS``).

Rows written before this migration take its time: an answer that missed
one of them is served at most the grace after the migration.
"""

from importlib import import_module

from django.db import migrations

# PostgreSQL only, statement by statement, as 0001 runs its own.
_run = import_module("benchhub.comparisons.migrations.0001_data_changes")._run

FORWARD = [
    "ALTER TABLE comparisons_datachange ADD COLUMN at timestamptz NOT NULL DEFAULT now()",
]

BACKWARD = ["ALTER TABLE comparisons_datachange DROP COLUMN at"]


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0004_inserts_looked_up_by_key")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
