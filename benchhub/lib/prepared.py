"""Prepared statements for the raw statements every upload runs (PostgreSQL).

Django's psycopg connections bind parameters on the client (the values are
written into the SQL text) and prepare nothing, so PostgreSQL parses and
plans every statement anew. For the upload's lookups, planning was three
quarters of what the statement cost the server (benchmarks/ingest.py).
:func:`prepared_cursor` gives a cursor that binds on
the server instead; psycopg prepares a statement once it has run
``prepare_threshold`` times on the connection (settings:
DATABASE_PREPARED_STATEMENTS), and PostgreSQL plans it once per connection
from then on. A text seen less often (a document of an unusual shape) runs
unprepared, as before.

Only statements of fixed text, written for it, go through it: with the
values sent apart from the text, a parameter is typed by its Python value
(an int as the smallest integer type that holds it, text as unknown), so
each ``%s`` stands where PostgreSQL can tell its type (a column it is
compared with or stored in, or a cast).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.db import connection


@contextlib.contextmanager
def prepared_cursor() -> Iterator[Any]:
    """connection.cursor(), binding on the server where statements may be
    prepared (PostgreSQL with a prepare_threshold); elsewhere the usual one."""
    if (
        connection.vendor != "postgresql"
        or connection.settings_dict["OPTIONS"].get("prepare_threshold") is None
    ):
        with connection.cursor() as cursor:
            yield cursor
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    # As connection.cursor() would, first: a connection that failed its
    # health check is replaced before its cursor class is chosen.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    usual = raw.cursor_factory
    raw.cursor_factory = ServerBindingCursor  # this thread's connection, for one cursor
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = usual
    with cursor:
        yield cursor
