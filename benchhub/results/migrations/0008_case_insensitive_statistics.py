# Statistics on UPPER() of every column a filter matches case-insensitively
# (benchhub.results.filters.RUN_FIELDS: iexact, icontains, istartswith; Django
# writes them as UPPER(column) = UPPER(value)). Without them PostgreSQL
# guesses such a condition keeps 0.5 % of the rows: config_profile=my-huge.cnf,
# half of the servers, was planned as one server, and a comparison then read
# its 9,439 runs' measurements one index probe per run (benchmarks/compare.py,
# case 3: the cells statement 250 -> 130 ms under EXPLAIN ANALYZE). PostgreSQL
# keeps statistics on an expression from version 14, the oldest Django 5.2
# supports; ANALYZE fills them (here for the rows already stored, then
# autovacuum). Nothing to do on SQLite.

from django.conf import settings
from django.db import migrations

# (table, column): the paths of RUN_FIELDS' case-insensitive filters.
COLUMNS = [
    ("results_run", "benchmark_version"),
    ("auth_user", "username"),
    ("results_hardware", "cpu_vendor"),
    ("results_hardware", "cpu_model"),
    ("results_hardware", "virtualization"),
    ("results_storage", "device_model"),
    ("results_storage", "raid"),
    ("results_operatingsystem", "version"),
    ("results_operatingsystem", "kernel"),
    ("results_databaseserver", "version"),
    ("results_databaseserver", "version_major"),
    ("results_databaseserver", "config_profile"),
    ("results_client", "driver"),
    ("results_client", "load_engine"),
]


def _applies(schema_editor) -> bool:
    return schema_editor.connection.vendor == "postgresql"


def create(apps, schema_editor):
    if not _applies(schema_editor):
        return
    for table, column in COLUMNS:
        schema_editor.execute(
            f"CREATE STATISTICS IF NOT EXISTS {table}_{column}_upper "
            f"ON (UPPER({column}::text)) FROM {table}"
        )
    with schema_editor.connection.cursor() as cursor:
        for table in sorted({table for table, _ in COLUMNS}):
            # Only a table with rows: ANALYZE of an empty one records it as
            # empty (reltuples 0), and the plans made from that (the
            # foreign-key checks', kept by each connection) scan the whole
            # table until an ANALYZE replaces them: never where autovacuum
            # is off. A table never analyzed is planned as at least 10 pages
            # (an index probe).
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")  # noqa: S608 -- names from COLUMNS
            if cursor.fetchone()[0]:
                schema_editor.execute(f"ANALYZE {table}")


def drop(apps, schema_editor):
    if not _applies(schema_editor):
        return
    for table, column in COLUMNS:
        schema_editor.execute(f"DROP STATISTICS IF EXISTS {table}_{column}_upper")


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0007_metric_parameters"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(create, drop)]
