"""``benchhub_array_agg``: PostgreSQL's ``array_agg`` with a combine
function, so that the cells statement (in_database.py) groups its rows in
parallel workers. ``array_agg`` has no combine function before PostgreSQL
16, so a plan that collects arrays keeps the whole aggregate in the leader
(docs/performance.md, "Comparisons, 2026-11-27").

The transition function is ``array_append``, which appends in place to the
expanded array the aggregate keeps (linear, as ``array_agg``); partial
arrays are joined with ``array_cat``. The order of the elements is the order
the rows reached the aggregate, as with ``array_agg`` without ORDER BY: the
statement's arrays of one group are built from the same rows in the same
order, so their positions still match.
"""

from importlib import import_module

from django.db import migrations

# PostgreSQL only, statement by statement, as 0001 runs its own.
_run = import_module("benchhub.comparisons.migrations.0001_data_changes")._run

TYPES = ("double precision", "bigint")

FORWARD = [
    f"CREATE AGGREGATE benchhub_array_agg({kind}) (sfunc = array_append, "
    f"stype = {kind}[], combinefunc = array_cat, parallel = safe)"
    for kind in TYPES
]

BACKWARD = [f"DROP AGGREGATE benchhub_array_agg({kind})" for kind in TYPES]


class Migration(migrations.Migration):
    dependencies = [("comparisons", "0005_change_time")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
