"""Every column a filter matches case-insensitively has statistics on its
UPPER() (results migration 0008): without them PostgreSQL takes such a
condition to keep 0.5 % of the rows and plans a comparison as if it read a
handful of runs."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from benchhub.results.filters import RUN_FIELDS
from benchhub.results.models import DatabaseServer, Run

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="statistics on expressions are PostgreSQL's"
)


def _column(path: str) -> tuple[str, str]:
    """RUN_FIELDS' path from Run → (table, column)."""
    model = Run
    *relations, name = path.split("__")
    for relation in relations:
        model = model._meta.get_field(relation).related_model
    return model._meta.db_table, model._meta.get_field(name).column


CASE_INSENSITIVE = sorted(
    _column(path) for path, lookup in RUN_FIELDS.values() if lookup.startswith("i")
)


def test_every_case_insensitive_filter_column_has_statistics_on_its_upper(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT stxrelid::regclass::text, pg_get_statisticsobjdef_expressions(oid)::text "
            "FROM pg_statistic_ext"
        )
        kept = {(table, expressions) for table, expressions in cursor.fetchall()}

    assert len(CASE_INSENSITIVE) == 14
    missing = [
        (table, column)
        for table, column in CASE_INSENSITIVE
        if (table, f"{{upper(({column})::text)}}") not in kept
    ]
    assert missing == []


def test_the_planner_counts_a_case_insensitive_match_as_it_is(db):
    # Half of the servers have the profile, spelled as people type it.
    for index in range(40):
        DatabaseServer.objects.create(
            digest=f"{index:064d}",
            engine="mariadb",
            version="10.11.9",
            version_major="10.11",
            config_profile="my-huge.cnf" if index % 2 else f"profile-{index}",
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE results_databaseserver")
        cursor.execute(
            "EXPLAIN (FORMAT JSON) SELECT * FROM results_databaseserver "
            "WHERE UPPER(config_profile::text) = UPPER('My-Huge.cnf')"
        )
        (plan,) = cursor.fetchone()

    assert plan[0]["Plan"]["Plan Rows"] == 20  # not 1 (0.5 % of 40)


class _RecordingEditor:
    """What migration 0008's function needs of a schema editor: the
    connection, and execute(), which here also records the statements."""

    def __init__(self) -> None:
        self.connection = connection
        self.executed: list[str] = []

    def execute(self, sql: str) -> None:
        self.executed.append(sql)
        with connection.cursor() as cursor:
            cursor.execute(sql)


def _statistics_migration():
    return importlib.import_module("benchhub.results.migrations.0008_case_insensitive_statistics")


def test_the_statistics_migration_analyzes_only_tables_with_rows(db):
    DatabaseServer.objects.create(
        digest="0" * 64, engine="mariadb", version="10.11.9", version_major="10.11"
    )
    editor = _RecordingEditor()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE results_run CASCADE")

    _statistics_migration().create(None, editor)

    analyzed = {sql.split()[1] for sql in editor.executed if sql.startswith("ANALYZE")}
    assert "results_databaseserver" in analyzed
    assert "results_run" not in analyzed


def test_a_new_databases_foreign_key_check_of_a_run_uses_its_primary_key(db):
    # Every measurement an upload stores checks its run at commit with this
    # statement, planned once per connection and kept. Planned from an
    # ANALYZE of the empty table, it scanned every run, 54 times an upload,
    # wherever autovacuum does not ANALYZE again (this machine's PostgreSQL):
    # 0.035 ms a check at 500 runs, 1.9 ms of the upload's 7 ms.
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE results_run CASCADE")  # as migrated: empty, never analyzed
        _statistics_migration().create(None, _RecordingEditor())
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(
            'PREPARE fk_check (bigint) AS SELECT 1 FROM ONLY "public"."results_run" x '
            'WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x'
        )
        try:
            cursor.execute("EXPLAIN (FORMAT JSON) EXECUTE fk_check (1)")
            (plan,) = cursor.fetchone()
        finally:
            cursor.execute("DEALLOCATE fk_check")

    scan = plan[0]["Plan"]["Plans"][0]
    assert (scan["Node Type"], scan["Index Name"]) == ("Index Scan", "results_run_pkey")
