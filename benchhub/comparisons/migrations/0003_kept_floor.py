"""The floor under kept comparison answers (benchhub/comparisons/kept.py):
one row, read by every answer served.

- ``horizon``: the change rows below it may have been pruned. An answer
  whose snapshot's xmin is below it could be missing one of them (a prune
  can run while an answer is computed: its snapshot, taken before, is in
  no kept row yet), so it is not served. A prune raises the horizon before
  it deletes below it.
- ``cluster``: the system identifier of the PostgreSQL cluster whose
  transaction ids the snapshots and change rows name. A dump restored on
  another machine (docs/operations.md) brings answers and change rows
  whose ids mean nothing there: while the floor names another cluster no
  answer is served, and the next prune deletes them all.

The answers kept so far are dropped: a prune may already have deleted a
change row one of them needed.
"""

from importlib import import_module

from django.db import migrations

# PostgreSQL only, statement by statement, as 0001 runs its own.
_run = import_module("benchhub.comparisons.migrations.0001_data_changes")._run

FORWARD = [
    """CREATE TABLE comparisons_keptfloor (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        cluster bigint NOT NULL,
        horizon xid8 NOT NULL
    )""",
    "DELETE FROM comparisons_keptanswer",
    """INSERT INTO comparisons_keptfloor (cluster, horizon)
    SELECT (pg_control_system()).system_identifier, pg_snapshot_xmax(pg_current_snapshot())""",
]

BACKWARD = ["DROP TABLE comparisons_keptfloor"]


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0002_kept_answer_refresh")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
