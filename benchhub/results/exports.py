"""CSV export of measurement queries."""

from __future__ import annotations

import csv
import itertools
import json
import logging
import uuid
from collections.abc import Generator, Iterator
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from benchhub.results.filters import parameter_number
from benchhub.results.models import Measurement

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
    ("cpu_vendor", "run.hardware.cpu_vendor"),
    ("cpu_model", "run.hardware.cpu_model"),
    ("cores", "run.hardware.cores"),
    ("threads", "run.hardware.threads"),
    ("ram_bytes", "run.hardware.ram_bytes"),
    ("virtualization", "run.hardware.virtualization"),
    ("storage_kind", "run.storage.kind"),
    ("device_model", "run.storage.device_model"),
    ("raid", "run.storage.raid"),
    ("filesystem", "run.storage.filesystem"),
    ("mount_options", "run.storage.mount_options"),
    ("io_scheduler", "run.storage.io_scheduler"),
    ("os_family", "run.os.family"),
    ("os_distribution", "run.os.distribution"),
    ("os_version", "run.os.version"),
    ("kernel", "run.os.kernel"),
    ("engine", "run.server.engine"),
    ("version", "run.server.version"),
    ("version_major", "run.server.version_major"),
    ("architecture", "run.server.architecture"),
    ("config_profile", "run.server.config_profile"),
    ("protocol", "run.client.protocol"),
    ("driver", "run.client.driver"),
    ("driver_version", "run.client.driver_version"),
    ("cpu_placement", "run.client.cpu_placement"),
    ("load_engine", "run.client.load_engine"),
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
    """The CSV lines of ``queryset``, read from a server-side cursor in
    chunks, so that an export of any size starts at once and holds one chunk
    in memory.

    The transaction keeps the cursor a plain one: outside a transaction
    Django declares it WITH HOLD, and PostgreSQL then computes every row
    before the first is sent. The query runs and its first row is read
    before the header is yielded: a database that does not answer fails the
    first ``next()``, which measurements_csv_response calls in the view, so
    the answer is the API's 503 instead of a 200. A failure after that (the
    database gone, a bug) cannot change the 200 already sent, so it is made
    visible twice: a last line ``#error,<message with an id>`` and, by
    re-raising, an aborted connection (no final chunk), which HTTP clients
    report as an incomplete transfer. A complete export has no such line.
    """
    writer = csv.writer(_Echo())
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
            yield writer.writerow([name for name, _ in COLUMNS])
            for row in itertools.chain(() if first is None else (first,), found):
                block.append(writer.writerow([csv_cell(value) for value in row]))
                rows += 1
                if len(block) == _BLOCK_ROWS:  # one write per block, not per row
                    yield "".join(block)
                    block = []
        yield "".join(block)
    except Exception as exc:
        if not started or isinstance(exc.__context__, GeneratorExit):
            raise  # nothing sent yet (the view answers it), or nobody reads on
        yield "".join(block)
        error_id = uuid.uuid4().hex[:16]
        logger.exception("CSV export failed after %d rows; error id %s", rows, error_id)
        yield writer.writerow(
            [ERROR_MARKER, f"export failed after {rows} rows ({type(exc).__name__}); "
             f"the file is incomplete; error id {error_id}"]
        )  # fmt: skip
        raise


def measurements_csv_response(queryset: QuerySet[Measurement]) -> StreamingHttpResponse:
    rows = measurement_rows(queryset)
    header = next(rows)  # the query runs here, in the view: its failure is the API's answer
    response = StreamingHttpResponse(_after(header, rows), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="benchhub-measurements.csv"'
    return response


def _after(first: str, rest: Generator[str]) -> Iterator[str]:
    """``first``, then ``rest``, which is closed with this (the response
    closes it): its transaction and cursor are open from the view on."""
    try:
        yield first
        yield from rest
    finally:
        rest.close()
