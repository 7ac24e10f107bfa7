"""Kept comparison answers (benchhub/comparisons/kept.py) and the triggers
that say when the data behind them changed.

Two tables, PostgreSQL only (the embedded default keeps no answers):

- ``comparisons_datachange``: one row per transaction that changed what a
  public comparison reads, by its transaction id, written by the triggers
  below in that same transaction (so it commits, or vanishes, with it);
- ``comparisons_keptanswer``: an answer, with the snapshot it was computed
  after. It stands while no change row is committed that this snapshot did
  not see.

What is logged (everything a comparison's statements read; the test
tests/comparisons/test_kept_answers.py checks that every table in them
carries a trigger):

- a submission that is, was or becomes approved: inserted, updated, deleted.
  Pending uploads, the common write, log nothing;
- runs and measurements inserted into an approved submission; any update
  of a run; an update of a measurement's compared columns (not its outlier
  score, which the baselines rewrite); any deletion of either;
- updates and deletions of environment rows (hardware, storage, OS, server,
  client) and of the catalog (benchmarks, metrics): an insertion is not
  referenced by any approved run until a logged run insertion is;
- a user's renaming or deletion (the ``submitter`` filter), and alias rules
  (the filters' spellings);
- TRUNCATE of any of them.
"""

from django.db import migrations

STATEMENT_TABLES = [
    "results_hardware",
    "results_storage",
    "results_operatingsystem",
    "results_databaseserver",
    "results_client",
    "results_benchmark",
    "results_metric",
]
TRUNCATED_TABLES = [
    *STATEMENT_TABLES,
    "results_submission",
    "results_run",
    "results_measurement",
    "auth_user",
    "moderation_aliasrule",
]
MEASUREMENT_COLUMNS = "run_id, metric_id, parameters, parameter_keys, value, samples, approximate"

FORWARD = [
    "CREATE TABLE comparisons_datachange (xid xid8 PRIMARY KEY)",
    """CREATE TABLE comparisons_keptanswer (
        key text PRIMARY KEY,
        snapshot pg_snapshot NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        answer bytea NOT NULL
    )""",
    "CREATE INDEX comparisons_keptanswer_created ON comparisons_keptanswer (created_at)",
    """CREATE FUNCTION comparisons_data_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO comparisons_datachange (xid) VALUES (pg_current_xact_id())
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$""",
    # Statement level, over the inserted rows (transition table "added").
    """CREATE FUNCTION comparisons_runs_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (
            SELECT 1 FROM added JOIN results_submission s ON s.id = added.submission_id
            WHERE s.status = 'approved'
        ) THEN
            INSERT INTO comparisons_datachange (xid) VALUES (pg_current_xact_id())
            ON CONFLICT DO NOTHING;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION comparisons_measurements_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (
            SELECT 1 FROM (SELECT DISTINCT run_id FROM added) AS m
            JOIN results_run r ON r.id = m.run_id
            JOIN results_submission s ON s.id = r.submission_id
            WHERE s.status = 'approved'
        ) THEN
            INSERT INTO comparisons_datachange (xid) VALUES (pg_current_xact_id())
            ON CONFLICT DO NOTHING;
        END IF;
        RETURN NULL;
    END $$""",
    # Submissions: row level, decided by the row alone (no call at all for
    # a pending upload).
    """CREATE TRIGGER comparisons_submission_inserted AFTER INSERT ON results_submission
    FOR EACH ROW WHEN (NEW.status = 'approved') EXECUTE FUNCTION comparisons_data_changed()""",
    """CREATE TRIGGER comparisons_submission_updated AFTER UPDATE ON results_submission
    FOR EACH ROW WHEN (OLD.status = 'approved' OR NEW.status = 'approved')
    EXECUTE FUNCTION comparisons_data_changed()""",
    """CREATE TRIGGER comparisons_submission_deleted AFTER DELETE ON results_submission
    FOR EACH ROW WHEN (OLD.status = 'approved') EXECUTE FUNCTION comparisons_data_changed()""",
    """CREATE TRIGGER comparisons_run_inserted AFTER INSERT ON results_run
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION comparisons_runs_added()""",
    """CREATE TRIGGER comparisons_run_changed AFTER UPDATE OR DELETE ON results_run
    FOR EACH STATEMENT EXECUTE FUNCTION comparisons_data_changed()""",
    """CREATE TRIGGER comparisons_measurement_inserted AFTER INSERT ON results_measurement
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT
    EXECUTE FUNCTION comparisons_measurements_added()""",
    f"""CREATE TRIGGER comparisons_measurement_updated
    AFTER UPDATE OF {MEASUREMENT_COLUMNS} ON results_measurement
    FOR EACH STATEMENT EXECUTE FUNCTION comparisons_data_changed()""",
    """CREATE TRIGGER comparisons_measurement_deleted AFTER DELETE ON results_measurement
    FOR EACH STATEMENT EXECUTE FUNCTION comparisons_data_changed()""",
    *(
        f"""CREATE TRIGGER comparisons_changed AFTER UPDATE OR DELETE ON {table}
        FOR EACH STATEMENT EXECUTE FUNCTION comparisons_data_changed()"""
        for table in STATEMENT_TABLES
    ),
    """CREATE TRIGGER comparisons_user_changed AFTER UPDATE OF username OR DELETE ON auth_user
    FOR EACH STATEMENT EXECUTE FUNCTION comparisons_data_changed()""",
    """CREATE TRIGGER comparisons_changed AFTER INSERT OR UPDATE OR DELETE ON moderation_aliasrule
    FOR EACH STATEMENT EXECUTE FUNCTION comparisons_data_changed()""",
    *(
        f"""CREATE TRIGGER comparisons_truncated AFTER TRUNCATE ON {table}
        FOR EACH STATEMENT EXECUTE FUNCTION comparisons_data_changed()"""
        for table in TRUNCATED_TABLES
    ),
]

BACKWARD = [
    "DROP TRIGGER comparisons_submission_inserted ON results_submission",
    "DROP TRIGGER comparisons_submission_updated ON results_submission",
    "DROP TRIGGER comparisons_submission_deleted ON results_submission",
    "DROP TRIGGER comparisons_run_inserted ON results_run",
    "DROP TRIGGER comparisons_run_changed ON results_run",
    "DROP TRIGGER comparisons_measurement_inserted ON results_measurement",
    "DROP TRIGGER comparisons_measurement_updated ON results_measurement",
    "DROP TRIGGER comparisons_measurement_deleted ON results_measurement",
    *(f"DROP TRIGGER comparisons_changed ON {table}" for table in STATEMENT_TABLES),
    "DROP TRIGGER comparisons_user_changed ON auth_user",
    "DROP TRIGGER comparisons_changed ON moderation_aliasrule",
    *(f"DROP TRIGGER comparisons_truncated ON {table}" for table in TRUNCATED_TABLES),
    "DROP FUNCTION comparisons_measurements_added()",
    "DROP FUNCTION comparisons_runs_added()",
    "DROP FUNCTION comparisons_data_changed()",
    "DROP TABLE comparisons_keptanswer",
    "DROP TABLE comparisons_datachange",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("results", "0008_case_insensitive_statistics"),
        ("moderation", "0002_alias_marks"),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
