"""CSV export of measurement queries.

On PostgreSQL the database writes the file (``export_sql``) and COPY
streams it: Python passes chunks of bytes on. Elsewhere (the embedded
default's SQLite) ``measurement_rows`` writes it with the csv module, the
same bytes (tests/results/test_export_copy.py compares the two).
"""

from __future__ import annotations

import csv
import itertools
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, transaction
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast
from django.http import StreamingHttpResponse

from benchhub.results import export_sql
from benchhub.results.filters import parameter_number
from benchhub.results.models import (
    Benchmark,
    Client,
    DatabaseServer,
    Hardware,
    Measurement,
    Metric,
    OperatingSystem,
    Run,
    Storage,
    Submission,
)

logger = logging.getLogger("benchhub.api")

COLUMNS: list[tuple[str, str]] = [
    ("measurement_id", "id"),
    ("run_id", "run_id"),
    ("submission", "run.submission.uuid"),
    ("status", "run.submission.status"),
    ("source", "run.submission.source"),
    ("benchmark", "run.benchmark.name"),
    ("benchmark_version", "run.benchmark_version"),
    ("fingerprint", "run.fingerprint"),
    ("run_parameters", "run.parameters"),
    ("metric", "metric.name"),
    ("unit", "metric.unit"),
    ("direction", "metric.direction"),
    ("parameters", "parameters"),
    ("value", "value"),
    ("samples", "samples"),
    ("approximate", "approximate"),
    *export_sql.RUN_TAIL_COLUMNS,
]

# A cell starting with one of these is a formula to a spreadsheet; user text
# must stay text (OWASP "CSV injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if (
        isinstance(value, str)
        and value.startswith(_FORMULA_START)
        and parameter_number(value) is None  # "-5" is a number, not a formula
    ):
        return "'" + value
    return value


class _Echo:
    def write(self, value: str) -> str:
        return value


#: The first cell of the last line of an export that failed part-way.
ERROR_MARKER = "#error"
_CHUNK_ROWS = 2000
_BLOCK_ROWS = 100


def measurement_rows(queryset: QuerySet[Measurement]) -> Iterator[str]:
    """The CSV file of ``queryset`` (``_python_lines``)."""
    writer = csv.writer(_Echo())
    return _python_lines(
        queryset,
        writer.writerow([name for name, _ in COLUMNS]),
        lambda row: writer.writerow([csv_cell(value) for value in row]),
        _failed,
    )


def measurement_json_lines(queryset: QuerySet[Measurement]) -> Iterator[str]:
    """The JSON lines of ``queryset`` (``_python_lines``): one object a
    line, its keys COLUMNS' names in their order; no header."""
    names = [name for name, _ in COLUMNS]
    return _python_lines(queryset, "", lambda row: _json_line(names, row), _failed_json)


def _json_line(names: list[str], row: tuple[Any, ...]) -> str:
    values = (str(value) if isinstance(value, uuid.UUID) else value for value in row)
    return json.dumps(dict(zip(names, values, strict=True)), ensure_ascii=False) + "\n"


def _python_lines(
    queryset: QuerySet[Measurement],
    header: str,
    written: Callable[[tuple[Any, ...]], str],
    failed: Callable[[Exception, int], str],
) -> Iterator[str]:
    """The lines of ``queryset``, ``header`` first, each row ``written``;
    read from a server-side cursor in chunks, so that an export of any size
    starts at once and holds one chunk in memory.

    The transaction keeps the cursor a plain one: outside a transaction
    Django declares it WITH HOLD, and PostgreSQL then computes every row
    before the first is sent. The query runs and its first row is read
    before the header is yielded: a database that does not answer fails the
    first ``next()``, which ``_streamed`` calls in the view, so the answer
    is the API's 503 instead of a 200. A failure after that (the database
    gone, a bug) cannot change the 200 already sent, so it is made visible
    twice: a last line (``failed``: ``#error,<message with an id>``) and, by
    re-raising, an aborted connection (no final chunk), which HTTP clients
    report as an incomplete transfer. A complete export has no such line.
    """
    # Plain tuples of the printed columns: no model instances (seven per row
    # with their joins), which cost most of an export's time.
    lookups = [path.replace(".", "__") for _, path in COLUMNS]
    values = queryset.values_list(*lookups)
    rows, block, started = 0, [], False
    try:
        with transaction.atomic(using=queryset.db):
            found = values.iterator(chunk_size=_CHUNK_ROWS)
            first = next(found, None)
            started = True
            yield header
            for row in itertools.chain(() if first is None else (first,), found):
                block.append(written(row))
                rows += 1
                if len(block) == _BLOCK_ROWS:  # one write per block, not per row
                    yield "".join(block)
                    block = []
        yield "".join(block)
    except Exception as exc:
        if not started or isinstance(exc.__context__, GeneratorExit):
            raise  # nothing sent yet (the view answers it), or nobody reads on
        yield "".join(block)
        yield failed(exc, rows)
        raise


def header_line() -> str:
    return csv.writer(_Echo()).writerow([name for name, _ in COLUMNS])


# For the statement of one export only: float8 written with its shortest
# exact digits, as Python's repr (PostgreSQL's default, stated in case a
# server sets another); no JIT, which compiles the line expressions for
# seconds where running them takes milliseconds (its cost estimate of the
# per-run subqueries, run once per run through a memo, is far off).
_COPY_SETTINGS = (
    "SELECT set_config('extra_float_digits', '1', true), set_config('jit', 'off', true)"
)
# Chunks of about this many bytes leave for the client: few writes, little memory.
_CHUNK_BYTES = 64 * 1024
# What COPY's text format escapes (a line is one text value), undone.
_COPY_ESCAPE = re.compile(rb"\\(.)", re.DOTALL)
_COPY_UNESCAPED = {
    b"\\": b"\\", b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\v"
}  # fmt: skip


def _tables() -> dict[str, str]:
    models = {
        "run": Run,
        "submission": Submission,
        "benchmark": Benchmark,
        "hardware": Hardware,
        "storage": Storage,
        "os": OperatingSystem,
        "server": DatabaseServer,
        "client": Client,
        "metric": Metric,
    }
    return {name: model._meta.db_table for name, model in models.items()}


def copied_statement(
    queryset: QuerySet[Measurement], line: export_sql.LineFormat = export_sql.CSV
) -> tuple[str, tuple[Any, ...]]:
    """The COPY of ``queryset``'s lines (CSV or JSON), and its parameters."""
    picked = queryset.annotate(
        value_text=Cast("value", TextField()), samples_text=Cast("samples", TextField())
    ).values_list(*export_sql.PICKED)
    inner, params = picked.query.sql_with_params()
    return f"COPY ({export_sql.lines_statement(inner, _tables(), line)}) TO STDOUT", params


def _unescaped(chunk: bytes, crlf: bool = True) -> bytes:
    """COPY's text lines unescaped, ended as the csv module ends them (CRLF)
    with ``crlf``."""
    if crlf:
        chunk = chunk.replace(b"\n", b"\r\n")  # only line ends: a newline in a cell is escaped
    if b"\\" in chunk:
        chunk = _COPY_ESCAPE.sub(lambda escape: _COPY_UNESCAPED[escape[1]], chunk)
    return chunk


def copied_rows(queryset: QuerySet[Measurement], json_lines: bool = False) -> Iterator[str | bytes]:
    """``measurement_rows``' file (``measurement_json_lines``' with
    ``json_lines``), written by PostgreSQL and streamed by COPY in chunks:
    the header once the first line has come (a database that does not
    answer fails the first ``next()``, in the view), and a failure part-way
    ends it the same way, with an error line and an aborted response."""
    db = queryset.db
    line = export_sql.JSON_LINES if json_lines else export_sql.CSV
    header, failed = ("", _failed_json) if json_lines else (header_line(), _failed)
    try:
        statement, params = copied_statement(queryset, line)
    except EmptyResultSet:  # a filter no row can match (cores=-1): Django has no SQL for it
        yield header
        return
    rows, block, size, started = 0, [], 0, False
    try:
        # Django's exceptions for psycopg's (its cursor wrapper, bypassed for
        # copy(), converts them): a database that fails is the API's 503.
        with (
            connections[db].wrap_database_errors,
            transaction.atomic(using=db),
            connections[db].cursor() as cursor,
        ):
            raw = cursor.cursor  # psycopg's own, which has copy()
            raw.execute(_COPY_SETTINGS)
            began = time.monotonic()
            with raw.copy(statement, params) as copy:
                lines = iter(copy)
                first = next(lines, None)
                started = True
                yield header
                for line in itertools.chain(() if first is None else (first,), lines):
                    block.append(line)
                    size += len(line)
                    if size >= _CHUNK_BYTES:
                        chunk = _unescaped(b"".join(block), not json_lines)
                        rows += len(block)
                        block, size = [], 0
                        yield chunk
            _logged(db, statement, params, began)
        rows += len(block)
        yield _unescaped(b"".join(block), not json_lines)
    except Exception as exc:
        if not started or isinstance(exc.__context__, GeneratorExit):
            raise
        rows += len(block)
        yield _unescaped(b"".join(block), not json_lines)
        yield failed(exc, rows)
        raise


def _logged(db: str, statement: str, params: tuple[Any, ...], began: float) -> None:
    """The COPY in the connection's query log, as Django logs a query
    (its cursor wrapper has no copy()): what debug tools and the tests'
    CaptureQueriesContext read."""
    connection = connections[db]
    if connection.queries_logged:
        seconds = time.monotonic() - began
        connection.queries_log.append({"sql": statement % tuple(repr(p) for p in params),
                                       "time": f"{seconds:.3f}"})  # fmt: skip


def _failure(exc: Exception, rows: int) -> str:
    error_id = uuid.uuid4().hex[:16]
    logger.exception("Export failed after %d rows; error id %s", rows, error_id)
    return (
        f"export failed after {rows} rows ({type(exc).__name__}); "
        f"the file is incomplete; error id {error_id}"
    )


def _failed(exc: Exception, rows: int) -> str:
    return csv.writer(_Echo()).writerow([ERROR_MARKER, _failure(exc, rows)])


def _failed_json(exc: Exception, rows: int) -> str:
    """A JSON lines export's last line when it failed: ``{"#error": …}``."""
    return json.dumps({ERROR_MARKER: _failure(exc, rows)}) + "\n"


def measurements_csv_response(queryset: QuerySet[Measurement]) -> StreamingHttpResponse:
    if connections[queryset.db].vendor == "postgresql":
        rows = copied_rows(queryset)
    else:
        rows = measurement_rows(queryset)
    return _streamed(rows, "text/csv", "benchhub-measurements.csv")


def measurements_jsonl_response(queryset: QuerySet[Measurement]) -> StreamingHttpResponse:
    if connections[queryset.db].vendor == "postgresql":
        rows = copied_rows(queryset, json_lines=True)
    else:
        rows = measurement_json_lines(queryset)
    return _streamed(rows, JSON_LINES_TYPE, "benchhub-measurements.jsonl")


#: The media type of JSON lines (https://jsonlines.org), as most tools send it.
JSON_LINES_TYPE = "application/jsonl"


def _streamed(rows: Generator[str | bytes], media_type: str, name: str) -> StreamingHttpResponse:
    header = next(rows)  # the query runs here, in the view: its failure is the API's answer
    response = StreamingHttpResponse(_after(header, rows), content_type=media_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _after(first: str, rest: Generator[str | bytes]) -> Iterator[str | bytes]:
    """``first``, then ``rest``, which is closed with this (the response
    closes it): its transaction and cursor are open from the view on."""
    try:
        yield first
        yield from rest
    finally:
        rest.close()
