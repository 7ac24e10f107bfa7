"""The triggers of runs and measurements inserted (migration 0001) look up
each inserted run's submission by its primary key.

Their join of the inserted rows with runs and submissions was planned like
any join: with statistics from when few submissions were approved, every
upload's trigger walked every approved submission (5 ms per upload at a
thousand of them, and growing); with fresh ones, it read every run. Every
upload runs them, pending ones too. A correlated subquery on the key is a
lookup whatever the statistics say: a few rows per upload.
"""

from importlib import import_module

from django.db import migrations

_migration_0001 = import_module("benchhub.comparisons.migrations.0001_data_changes")
# PostgreSQL only, statement by statement, as 0001 runs its own.
_run = _migration_0001._run

_LOG = """INSERT INTO comparisons_datachange (xid) VALUES (pg_current_xact_id())
            ON CONFLICT DO NOTHING;"""

FORWARD = [
    f"""CREATE OR REPLACE FUNCTION comparisons_runs_added() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (
            SELECT 1 FROM (SELECT DISTINCT submission_id FROM added) AS r
            WHERE (SELECT s.status FROM results_submission AS s WHERE s.id = r.submission_id)
                = 'approved'
        ) THEN
            {_LOG}
        END IF;
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE FUNCTION comparisons_measurements_added() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (
            SELECT 1 FROM (SELECT DISTINCT run_id FROM added) AS m
            WHERE (
                SELECT s.status FROM results_run AS r
                JOIN results_submission AS s ON s.id = r.submission_id
                WHERE r.id = m.run_id
            ) = 'approved'
        ) THEN
            {_LOG}
        END IF;
        RETURN NULL;
    END $$""",
]

# 0001's own bodies, back.
BACKWARD = [
    statement.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    for statement in _migration_0001.FORWARD
    if statement.startswith(
        ("CREATE FUNCTION comparisons_runs_added", "CREATE FUNCTION comparisons_measurements_added")
    )
]


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0003_kept_floor")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
