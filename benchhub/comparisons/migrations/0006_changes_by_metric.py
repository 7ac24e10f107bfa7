"""Each change row says which metric's answers it can change, and each kept
answer which metric it reads: an approval of a sql-bench result leaves the
select-update answers served and the worker does not compute them again
(kept.py).

Why metrics, not benchmarks: an answer reads the measurements of one metric
(``filter(metric=...)``: the cells, the samples of its verdicts, its
pooling) and nothing of another metric; the measurements' metric ids are
what the change touched, read from the rows themselves. A benchmark would
rely on every measurement's metric being one of its run's benchmark, which
uploads keep but nothing in the database enforces (the admin can move a
measurement to any metric). An approval of a select-update run touches all
its metrics anyway (each run reports them all): a few rows more per change,
nothing less served.

``comparisons_datachange.metric``: the metric whose answers the
transaction may have changed, one row per metric; 0 for every answer. What
logs which:

- a submission that is, was or becomes approved (inserted, updated,
  deleted): the metrics of its runs' measurements, read by the submission's
  key. A submission is inserted before its runs: nothing, usually;
- runs inserted into an approved submission, any update or deletion of
  runs: the metrics of the measurements of those runs (by their ids: the
  measurements of a run inserted or deleted are usually inserted after or
  deleted before it, and log themselves);
- measurements inserted into an approved submission, deleted, or updated in
  a compared column: their metrics (old and new). An update is now a row
  trigger whose condition is that a compared column differs: a statement
  trigger with a column list cannot see the rows, and one without fires on
  every outlier score the baselines write;
- every answer (0): the environment dimensions and the catalog (updates,
  deletions), a user renamed or deleted, alias rules, TRUNCATE. An alias
  rule changes the statement of a filter of any metric; a dimension row or
  a user is shared by runs of every benchmark, and looking their runs up
  would read up to every measurement. Rows that do not name a metric (the
  column's default, rows written before this migration) are these.

Kept answers are dropped: they were stored without their metric (and the
code digest of every answer's key changes with this file anyway).
"""

from importlib import import_module

from django.db import migrations

_migration_0001 = import_module("benchhub.comparisons.migrations.0001_data_changes")
_migration_0004 = import_module("benchhub.comparisons.migrations.0004_inserts_looked_up_by_key")
# PostgreSQL only, statement by statement, as 0001 runs its own.
_run = _migration_0001._run


def _log(metrics: str) -> str:
    """The statement logging the metric ids ``metrics`` selects (a column
    named ``metric``) for this transaction."""
    return f"""INSERT INTO comparisons_datachange (xid, metric)
            SELECT DISTINCT pg_current_xact_id(), touched.metric FROM ({metrics}) AS touched
            ON CONFLICT DO NOTHING;"""


# The metrics of the measurements of the runs ``runs`` selects (column
# ``id``): a probe of each run's measurements by their run's key, whatever the
# statistics say (a correlated subquery is not planned into a join).
def _of_runs(runs: str) -> str:
    return f"""SELECT unnest(ARRAY(
                SELECT m.metric_id FROM results_measurement AS m WHERE m.run_id = r.id
            )) AS metric FROM ({runs}) AS r"""


_APPROVED = """(SELECT s.status FROM results_submission AS s WHERE s.id = {submission})
            = 'approved'"""

FORWARD = [
    "ALTER TABLE comparisons_datachange ADD COLUMN metric bigint NOT NULL DEFAULT 0",
    "ALTER TABLE comparisons_datachange DROP CONSTRAINT comparisons_datachange_pkey",
    "ALTER TABLE comparisons_datachange ADD PRIMARY KEY (xid, metric)",
    # An answer's check (kept.py): the newest change of its metric and of
    # every metric, and the first of each at or above its snapshot's xmax.
    "CREATE INDEX comparisons_datachange_metric ON comparisons_datachange (metric, xid)",
    "DELETE FROM comparisons_keptanswer",
    "ALTER TABLE comparisons_keptanswer ADD COLUMN metric bigint NOT NULL",
    # Submissions: row triggers as before (no call for a pending upload).
    f"""CREATE FUNCTION comparisons_submission_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        submission bigint;
    BEGIN
        IF TG_OP = 'DELETE' THEN
            submission := OLD.id;
        ELSE
            submission := NEW.id;
        END IF;
        {_log(_of_runs("SELECT id FROM results_run WHERE submission_id = submission"))}
        RETURN NULL;
    END $$""",
    *(
        f"DROP TRIGGER comparisons_submission_{event} ON results_submission"
        for event in ("inserted", "updated", "deleted")
    ),
    """CREATE TRIGGER comparisons_submission_inserted AFTER INSERT ON results_submission
    FOR EACH ROW WHEN (NEW.status = 'approved')
    EXECUTE FUNCTION comparisons_submission_changed()""",
    """CREATE TRIGGER comparisons_submission_updated AFTER UPDATE ON results_submission
    FOR EACH ROW WHEN (OLD.status = 'approved' OR NEW.status = 'approved')
    EXECUTE FUNCTION comparisons_submission_changed()""",
    """CREATE TRIGGER comparisons_submission_deleted AFTER DELETE ON results_submission
    FOR EACH ROW WHEN (OLD.status = 'approved') EXECUTE FUNCTION comparisons_submission_changed()""",
    # Runs inserted: the approved submissions' (looked up by key, 0004).
    f"""CREATE OR REPLACE FUNCTION comparisons_runs_added() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        {
        _log(
            _of_runs(
                "SELECT added.id FROM added WHERE "
                + _APPROVED.format(submission="added.submission_id")
            )
        )
    }
        RETURN NULL;
    END $$""",
    # Runs updated or deleted, whatever their submission (as before): the
    # old rows' ids (a run's id never changes while measurements name it).
    f"""CREATE FUNCTION comparisons_runs_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        {_log(_of_runs("SELECT gone.id FROM gone"))}
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER comparisons_run_updated AFTER UPDATE ON results_run
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION comparisons_runs_changed()""",
    """CREATE TRIGGER comparisons_run_deleted AFTER DELETE ON results_run
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION comparisons_runs_changed()""",
    "DROP TRIGGER comparisons_run_changed ON results_run",
    # Measurements inserted into approved submissions: each distinct run's
    # submission looked up by key (0004), then the metrics of those runs'.
    f"""CREATE OR REPLACE FUNCTION comparisons_measurements_added() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        {
        _log(
            "SELECT added.metric_id AS metric FROM added WHERE added.run_id IN ("
            " SELECT m.run_id FROM (SELECT DISTINCT run_id FROM added) AS m WHERE ("
            " SELECT s.status FROM results_run AS r"
            " JOIN results_submission AS s ON s.id = r.submission_id WHERE r.id = m.run_id"
            " ) = 'approved')"
        )
    }
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION comparisons_measurement_updated() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        {_log("SELECT unnest(ARRAY[OLD.metric_id, NEW.metric_id]) AS metric")}
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION comparisons_measurements_deleted() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        {_log("SELECT gone.metric_id AS metric FROM gone")}
        RETURN NULL;
    END $$""",
    "DROP TRIGGER comparisons_measurement_updated ON results_measurement",
    f"""CREATE TRIGGER comparisons_measurement_updated
    AFTER UPDATE OF {_migration_0001.MEASUREMENT_COLUMNS} ON results_measurement
    FOR EACH ROW WHEN (
        (OLD.{", OLD.".join(_migration_0001.MEASUREMENT_COLUMNS.split(", "))})
        IS DISTINCT FROM
        (NEW.{", NEW.".join(_migration_0001.MEASUREMENT_COLUMNS.split(", "))})
    )
    EXECUTE FUNCTION comparisons_measurement_updated()""",
    """CREATE TRIGGER comparisons_measurement_removed AFTER DELETE ON results_measurement
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION comparisons_measurements_deleted()""",
    "DROP TRIGGER comparisons_measurement_deleted ON results_measurement",
]


def _0001(prefix: str) -> list[str]:
    return [s for s in _migration_0001.FORWARD if s.startswith(prefix)]


BACKWARD = [
    "DROP TRIGGER comparisons_submission_inserted ON results_submission",
    "DROP TRIGGER comparisons_submission_updated ON results_submission",
    "DROP TRIGGER comparisons_submission_deleted ON results_submission",
    *_0001("CREATE TRIGGER comparisons_submission_"),
    "DROP FUNCTION comparisons_submission_changed()",
    "DROP TRIGGER comparisons_run_updated ON results_run",
    "DROP TRIGGER comparisons_run_deleted ON results_run",
    *_0001("CREATE TRIGGER comparisons_run_changed"),
    "DROP FUNCTION comparisons_runs_changed()",
    "DROP TRIGGER comparisons_measurement_updated ON results_measurement",
    "DROP TRIGGER comparisons_measurement_removed ON results_measurement",
    *_0001("CREATE TRIGGER comparisons_measurement_updated"),
    *_0001("CREATE TRIGGER comparisons_measurement_deleted"),
    "DROP FUNCTION comparisons_measurement_updated()",
    "DROP FUNCTION comparisons_measurements_deleted()",
    # 0004's bodies, back.
    *_migration_0004.FORWARD,
    "DELETE FROM comparisons_keptanswer",
    "ALTER TABLE comparisons_keptanswer DROP COLUMN metric",
    # One row per transaction again: a transaction's rows of every metric
    # become one row of every answer's.
    """DELETE FROM comparisons_datachange AS a USING comparisons_datachange AS b
    WHERE a.xid = b.xid AND a.metric > b.metric""",
    "UPDATE comparisons_datachange SET metric = 0",
    "DROP INDEX comparisons_datachange_metric",
    "ALTER TABLE comparisons_datachange DROP CONSTRAINT comparisons_datachange_pkey",
    "ALTER TABLE comparisons_datachange DROP COLUMN metric",
    "ALTER TABLE comparisons_datachange ADD PRIMARY KEY (xid)",
]


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0005_change_time")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
