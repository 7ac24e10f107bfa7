"""A comparison: one metric of one benchmark, aggregated per (series, x).

The query is the URL's query string alone (see ``comparison_query_parse``):
``benchmark``, ``metric``, ``x`` (what varies along the axis), ``series``
(what separates the lines or bar groups), ``reference`` (the series value
that becomes 100), and every other parameter is a fixed filter with the
measurement API's semantics (``benchhub.results.filters.MeasurementFilter``).

``comparison_build`` reads the matching measurements as values-only rows in
one query and aggregates them in one pass: median, n, min and max per cell.
The median is computed here rather than in SQL because the embedded default
(SQLite) has no percentile aggregate; a row is four scalars, so even tens of
thousands of them are cheap, and there is never a query per cell.

Order of values, on both axes: numbers numerically (clients 1, 2, 4 … 100),
text in natural alphabetical order, case-insensitive, digit runs compared as
numbers (ext2 < ext10, 9.6 < 15.2), numbers before text. The reference
series, when there is one, comes first.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.datastructures import MultiValueDict
from rest_framework.exceptions import ValidationError

from benchhub.results import selectors as results_selectors
from benchhub.results.filters import (
    NORMALIZERS,
    PARAM_NAME,
    RUN_FIELDS,
    MeasurementFilter,
    parameter_canonical,
    parameter_number,
)
from benchhub.results.models import Metric
from benchhub.results.selectors import User

# The most measurements one comparison reads (≈ 300 bytes each in memory).
MAX_ROWS = 100_000

# The comparison's own parameters; everything else is a fixed filter.
COMPARISON_PARAMETERS = ("benchmark", "metric", "x", "series", "reference", "format")
FORMATS = ("json", "csv")
# Measurement API parameters that mean nothing here: a comparison is one table.
NOT_APPLICABLE = {"cursor": "a comparison is not paginated", "page_size": "not paginated"}

# Environment and submission fields a comparison can vary: the measurement
# filters of RUN_FIELDS, less the benchmark (always fixed) and the RAM bounds
# (a range, not a value). In the order the page offers them.
AXIS_DIMENSIONS: dict[str, str] = {
    name: "run__" + RUN_FIELDS[name][0]
    for name in (
        "engine",
        "version",
        "version_major",
        "architecture",
        "config_profile",
        "filesystem",
        "mount_options",
        "io_scheduler",
        "storage_kind",
        "device_model",
        "raid",
        "os_family",
        "os_distribution",
        "os_version",
        "kernel",
        "cpu_vendor",
        "cpu_model",
        "cores",
        "threads",
        "virtualization",
        "protocol",
        "driver",
        "cpu_placement",
        "load_engine",
        "benchmark_version",
        "source",
        "status",
        "submitter",
        "submission",
        "fingerprint",
    )
}

# Cap on the rows read to list the parameter names the page offers.
_PARAMETER_SAMPLE = 5000


class InvalidComparison(Exception):
    """Bad input; ``errors`` maps each offending query parameter to why."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        # In the order the form asks: benchmark, metric, x, series, … then filters.
        order = {key: index for index, key in enumerate(COMPARISON_PARAMETERS)}
        self.errors = dict(sorted(errors.items(), key=lambda item: order.get(item[0], len(order))))
        super().__init__("; ".join(f"{key}: {message}" for key, message in self.errors.items()))


@dataclass(frozen=True)
class Axis:
    """What varies: ``param.<name>`` (the measurement's point),
    ``run_param.<name>`` (what the run was asked to do) or an environment
    dimension (``filesystem``, ``engine`` …)."""

    name: str
    path: str  # values_list path from Measurement

    @property
    def is_parameter(self) -> bool:
        return self.name.startswith(("param.", "run_param."))

    @property
    def title(self) -> str:
        """For people: "clients", "temp_compressed (run parameter)", "cpu placement"."""
        if self.name.startswith("param."):
            return self.name.removeprefix("param.")
        if self.name.startswith("run_param."):
            return self.name.removeprefix("run_param.") + " (run parameter)"
        return self.name.replace("_", " ")


def axis_parse(key: str, name: str) -> Axis:
    scope, dot, parameter = name.partition(".")
    if dot and scope in ("param", "run_param"):
        if not PARAM_NAME.match(parameter):
            raise InvalidComparison({key: f"{parameter!r} is not a parameter name"})
        prefix = "parameters__" if scope == "param" else "run__parameters__"
        return Axis(name, prefix + parameter)
    if name in AXIS_DIMENSIONS:
        return Axis(name, AXIS_DIMENSIONS[name])
    raise InvalidComparison(
        {
            key: f"{name!r} cannot vary: use param.<name>, run_param.<name> or one of "
            + ", ".join(AXIS_DIMENSIONS)
        }
    )


@dataclass(frozen=True)
class ComparisonQuery:
    metric: Metric  # with its benchmark
    x: Axis
    series: Axis | None
    reference: str | None
    filters: dict[str, list[str]]  # the fixed filters, as given

    @property
    def benchmark(self) -> str:
        return self.metric.benchmark.name

    @property
    def file_stem(self) -> str:
        """What a download of this comparison is called, before its extension
        (catalog and axis names only: no user text reaches a file name)."""
        return f"benchhub-{self.benchmark}-{self.metric.name}-by-{self.x.name}"


def _single(params: Mapping[str, list[str]], key: str) -> str:
    values = params.get(key) or []
    if len(values) > 1:
        raise InvalidComparison({key: "given more than once"})
    if values and "\x00" in values[0]:
        raise InvalidComparison({key: "a null character is not allowed"})
    return values[0].strip() if values else ""


def comparison_query_parse(params: Mapping[str, list[str]]) -> ComparisonQuery:
    """The query string (as lists of values, like ``QueryDict.lists()``)
    → a comparison query. One query, for the metric and its benchmark.
    Raises InvalidComparison naming every parameter it can fault at once."""
    errors: dict[str, str] = {}
    values: dict[str, str] = {}
    for key in COMPARISON_PARAMETERS:
        try:
            values[key] = _single(params, key)
        except InvalidComparison as exc:
            errors.update(exc.errors)
    for key in ("benchmark", "metric", "x"):
        if key not in errors and not values[key]:
            errors[key] = "required"
    if values.get("format") and values["format"] not in FORMATS:
        errors["format"] = "json or csv"
    for key, why in NOT_APPLICABLE.items():
        if key in params:
            errors[key] = why

    x = series = None
    for key in ("x", "series"):
        if key in errors or not values[key]:
            continue
        try:
            axis = axis_parse(key, values[key])
        except InvalidComparison as exc:
            errors.update(exc.errors)
            continue
        if key == "x":
            x = axis
        else:
            series = axis
    if x is not None and series is not None and x.name == series.name:
        errors["series"] = f"must differ from x ({x.name}): one dimension cannot be both"
    if values.get("reference") and not values.get("series"):
        errors.setdefault("reference", "needs a series: the reference is one of its values")

    metric = None
    if values.get("benchmark") and "benchmark" not in errors:
        metric = _metric_get(values["benchmark"], values.get("metric", ""), errors)
    if errors:
        raise InvalidComparison(errors)
    assert metric is not None and x is not None
    filters = {
        key: list(given)
        for key, given in params.items()
        if key not in COMPARISON_PARAMETERS and key not in NOT_APPLICABLE
    }
    return ComparisonQuery(metric, x, series, values["reference"] or None, filters)


def _metric_get(benchmark: str, name: str, errors: dict[str, str]) -> Metric | None:
    if name and "metric" not in errors:
        metric = (
            Metric.objects.select_related("benchmark")
            .filter(benchmark__name=benchmark, name=name)
            .first()
        )
        if metric is not None:
            return metric
    # Only on the error path: tell which half is wrong, and what would do.
    names = list(
        Metric.objects.filter(benchmark__name=benchmark)
        .order_by("id")
        .values_list("name", flat=True)
    )
    if not names:
        errors["benchmark"] = f"no benchmark {benchmark!r}; see /api/v1/benchmarks/"
    elif name and "metric" not in errors:
        errors["metric"] = f"{benchmark} has no metric {name!r}; it has {', '.join(names)}"
    return None


# --- aggregation -------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    x: Any
    value: float  # the median
    n: int
    min: float
    max: float
    relative: float | None = None  # 100 * value / the reference's value at x


@dataclass(frozen=True)
class Series:
    label: str
    points: list[Point]


@dataclass
class Comparison:
    query: ComparisonQuery
    x_values: list[Any]
    series: list[Series]
    # The reference as a series label (normalized: reference=EXT4 → "ext4").
    reference: str | None = None
    notes: list[str] = field(default_factory=list)
    # The page drops a reference that is not a series value (with a note);
    # it then pushes the URL without it.
    reference_dropped: bool = False

    @property
    def x_numeric(self) -> bool:
        return bool(self.x_values) and all(_is_number(x) for x in self.x_values)

    @property
    def is_empty(self) -> bool:
        return not self.series


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _axis_value(axis: Axis | None, raw: Any) -> Any:
    """A stored value as the comparison groups it; None when missing.

    Parameters are JSON: the number 20, 20.0 and the text "20" are one x
    value, the number 20 — exactly what ?param.clients=20 finds
    (``parameter_number``: only the canonical spelling of a number counts as
    one, so "20.0", " 20" or "٢٠" stay text). Booleans become the text
    "true"/"false" (in Python True == 1 would merge them with the number 1).
    """
    if raw is None:
        return None
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if isinstance(raw, float) and not math.isfinite(raw):
        return str(raw)
    if isinstance(raw, (dict, list)):
        return json.dumps(raw, sort_keys=True, ensure_ascii=False)
    if isinstance(raw, str) and not (axis is not None and axis.is_parameter):
        return raw
    return parameter_canonical(raw)


def _label(value: Any) -> str:
    return str(value)


_DIGITS = re.compile(r"([0-9]+)")  # ASCII: int() of "²" or "①" would raise


def _order_key(value: Any) -> tuple:
    if _is_number(value):
        return (0, value, ())
    text = str(value)
    natural = tuple(
        (0, int(part), "") if index % 2 else (1, 0, part.casefold())
        for index, part in enumerate(_DIGITS.split(text))
        if part
    )
    return (1, 0, natural, text)


def reference_label(axis: Axis, reference: str) -> str:
    """The reference as a series label: normalized like the filters
    (reference=UFS2 finds "ufs"), parameters' numbers as numbers ("20.0" → "20")."""
    if axis.name in NORMALIZERS:
        reference = NORMALIZERS[axis.name](reference)
    if axis.is_parameter:  # typed by a user, read as a filter reads it
        number = parameter_number(reference)
        if number is not None:
            return _label(number)
    return _label(_axis_value(axis, reference))


def comparison_build(
    *, user: User, query: ComparisonQuery, strict_reference: bool = True
) -> Comparison:
    """Read and aggregate. Only results ``user`` may see (approved, or
    their own). A reference that is not among the series values raises
    InvalidComparison, or with ``strict_reference=False`` is dropped with a
    note (the page does that when the series select changed under it)."""
    rows = _rows(user, query)
    x_axis, series_axis = query.x, query.series
    cells: dict[tuple[str, Any], list[float]] = defaultdict(list)
    series_values: dict[str, Any] = {}
    missing_x = missing_series = approximate = total = 0
    for series_raw, x_raw, value, is_approximate in rows:
        total += 1
        x = _axis_value(x_axis, x_raw)
        if series_axis is None:
            series_value: Any = query.metric.name
        else:
            series_value = _axis_value(series_axis, series_raw)
        if x is None:
            missing_x += 1
            continue
        if series_value is None:
            missing_series += 1
            continue
        approximate += is_approximate
        label = _label(series_value)
        series_values.setdefault(label, series_value)
        cells[label, x].append(value)

    notes: list[str] = []
    if total == 0:
        notes.append("No measurement you may see matches this comparison.")
    if missing_x:
        notes.append(
            f"{missing_x} measurement{'s' if missing_x != 1 else ''} without a "
            f"{x_axis.title} value left out."
        )
    if missing_series and series_axis is not None:
        notes.append(
            f"{missing_series} measurement{'s' if missing_series != 1 else ''} without a "
            f"{series_axis.title} value left out."
        )
    if approximate:
        notes.append(
            f"Approximate values included: {approximate} of {total - missing_x - missing_series} "
            "measurements are approximate (read off a chart or an 'about' in the text)."
        )

    x_values = sorted({x for _, x in cells}, key=_order_key)
    labels = sorted(series_values, key=lambda label: _order_key(series_values[label]))

    reference = query.reference
    reference_dropped = False
    if reference is not None and series_axis is not None:
        wanted = reference_label(series_axis, reference)
        if wanted in series_values:
            reference = wanted
            labels.remove(wanted)
            labels.insert(0, wanted)
        elif total == 0:
            reference = wanted  # nothing to compare: the empty note says it all
        elif strict_reference:
            raise InvalidComparison({"reference": _reference_missing(wanted, series_axis, labels)})
        else:
            notes.append(
                _reference_missing(wanted, series_axis, labels) + "; shown without reference."
            )
            reference, reference_dropped = None, True

    medians = {key: statistics.median(values) for key, values in cells.items()}
    reference_medians = (
        {x: medians[reference, x] for x in x_values if (reference, x) in medians}
        if reference is not None
        else {}
    )
    if reference is not None and not reference_dropped and total:
        gaps = [x for x in x_values if not reference_medians.get(x)]
        if gaps:
            notes.append(
                f"{series_axis.title} = {reference} has no value (or 0) at "
                f"{x_axis.title} = {', '.join(map(_label, gaps))}: relative values there are null."
            )

    series = []
    for label in labels:
        points = []
        for x in x_values:
            values = cells.get((label, x))
            if not values:
                continue
            relative = None
            if reference is not None and reference_medians.get(x):
                relative = medians[label, x] / reference_medians[x] * 100
            points.append(
                Point(x, medians[label, x], len(values), min(values), max(values), relative)
            )
        series.append(Series(label, points))
    return Comparison(
        query=query,
        x_values=x_values,
        series=series,
        reference=reference,
        notes=notes,
        reference_dropped=reference_dropped,
    )


def _reference_missing(wanted: str, axis: Axis, labels: list[str]) -> str:
    shown = ", ".join(labels[:20]) + (" …" if len(labels) > 20 else "")
    return f"{wanted!r} is not a {axis.title} value of these results (they have: {shown})"


def _measurements(user: User, query: ComparisonQuery):
    """The visible measurements of the metric, with the fixed filters applied
    exactly as /api/v1/measurements/ applies them."""
    queryset = results_selectors.measurement_list(user=user).filter(metric=query.metric)
    # get() gives a filter's last value, getlist() all of them (param.* may repeat)
    data = MultiValueDict({key: values for key, values in query.filters.items() if values})
    filterset = MeasurementFilter(data=data, queryset=queryset)
    if not filterset.is_valid():
        raise InvalidComparison(
            {key: " ".join(str(m) for m in messages) for key, messages in filterset.errors.items()}
        )
    try:
        return filterset.qs
    except ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"request": exc.detail}
        raise InvalidComparison(
            {
                key: " ".join(map(str, v)) if isinstance(v, list) else str(v)
                for key, v in detail.items()
            }
        ) from None


def _rows(user: User, query: ComparisonQuery) -> Iterable[tuple[Any, Any, float, bool]]:
    """At most MAX_ROWS rows (aggregated in Python, as SQLite has no median):
    a comparison over more is refused with a message asking for filters,
    rather than holding every measurement in memory for one request."""
    columns = [query.x.path, "value", "approximate"]
    if query.series is not None:
        columns.insert(0, query.series.path)
    rows = list(_measurements(user, query).order_by().values_list(*columns)[: MAX_ROWS + 1])
    if len(rows) > MAX_ROWS:
        raise InvalidComparison(
            {
                "request": f"more than {MAX_ROWS:,} measurements match; fix more of the "
                "environment (engine, version_major, filesystem, …) to compare fewer"
            }
        )
    if query.series is None:
        return ((None, *row) for row in rows)
    return rows


def comparison_parameter_names(*, user: User, metric: Metric) -> tuple[list[str], list[str]]:
    """The measurement and run parameter names the metric's visible results
    use, for the page's x and series choices. One query, over a sample of
    distinct parameter sets (a sweep repeats the same few keys)."""
    pairs = (
        results_selectors.measurement_list(user=user)
        .filter(metric=metric)
        .order_by()
        .values_list("parameters", "run__parameters")
        .distinct()[:_PARAMETER_SAMPLE]
    )
    point: dict[str, None] = {}
    run: dict[str, None] = {}
    for parameters, run_parameters in pairs:
        point.update(dict.fromkeys(parameters or {}))
        run.update(dict.fromkeys(run_parameters or {}))
    valid = [name for name in point if PARAM_NAME.match(name)]
    valid_run = [name for name in run if PARAM_NAME.match(name)]
    return sorted(valid, key=_order_key), sorted(valid_run, key=_order_key)
