"""CSV export of measurement queries."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from benchhub.results.filters import parameter_number
from benchhub.results.models import Measurement

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


def _attr(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


class _Echo:
    def write(self, value: str) -> str:
        return value


def measurement_rows(queryset: QuerySet[Measurement]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow([name for name, _ in COLUMNS])
    for measurement in queryset.iterator(chunk_size=2000):
        yield writer.writerow([csv_cell(_attr(measurement, path)) for _, path in COLUMNS])


def measurements_csv_response(queryset: QuerySet[Measurement]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(measurement_rows(queryset), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="benchhub-measurements.csv"'
    return response
