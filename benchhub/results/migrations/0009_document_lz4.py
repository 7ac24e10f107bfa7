# The stored document compressed with lz4 instead of pglz, PostgreSQL's
# default, where the server is built with lz4 (PostgreSQL 14 on; Debian's
# and the postgres:15 image's are). An upload's document (8.5 kB in
# benchmarks/ingest.py) is compressed when stored, in the request: pglz took
# 0.68-0.71 ms of the backend's CPU per insert, lz4 0.47-0.50 ms, for 3,476
# bytes stored instead of 3,087. Rows already stored keep their pglz values, which read as before;
# the values are the same either way. Nothing to do on SQLite, nor on a
# server without lz4.

from django.db import migrations

TABLE, COLUMN = "results_submission", "document"


def _lz4_available(schema_editor) -> bool:
    if schema_editor.connection.vendor != "postgresql":
        return False
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def compress_with_lz4(apps, schema_editor):
    if _lz4_available(schema_editor):
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN {COLUMN} SET COMPRESSION lz4")


def compress_as_default(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN {COLUMN} SET COMPRESSION default")


class Migration(migrations.Migration):
    dependencies = [("results", "0008_case_insensitive_statistics")]

    operations = [migrations.RunPython(compress_with_lz4, compress_as_default)]
