"""A comparison's query: the URL's query string alone, parsed.

``benchmark``, ``metric``, ``x`` (what varies along the axis), ``series``
(what separates the lines or bar groups), ``reference`` (the series value
that becomes 100), and every other parameter is a fixed filter with the
measurement API's semantics (``benchhub.results.filters.MeasurementFilter``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchhub_contract.verdicts import DEFAULT_MINIMUM_EFFECT

from benchhub.results.filters import PARAM_NAME, RUN_FIELDS, known_values
from benchhub.results.models import Metric

# The comparison's own parameters; everything else is a fixed filter.
COMPARISON_PARAMETERS = (
    "benchmark",
    "metric",
    "x",
    "series",
    "reference",
    "minimum_effect",
    "verdicts",
    "per",
    "scale",
    "format",
)
# How the page draws the value axis (?scale=log, as the history's); the
# numbers are the same either way.
SCALES = ("linear", "log")
# Derived metrics: a rate divided by what the machine has of something, each
# measurement by its own run's machine. name → (the divisor's path from a
# measurement, its scale: bytes per GiB, and the words after the unit).
PER: dict[str, tuple[str, int, str]] = {
    "core": ("run__hardware__cores", 1, "per core"),
    "ram_gib": ("run__hardware__ram_bytes", 2**30, "per GiB of RAM"),
}
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
    # The smallest difference a verdict counts, as a fraction (0.05 = 5 %).
    minimum_effect: float = DEFAULT_MINIMUM_EFFECT
    # verdicts=quiet: verdicts from quiet runs only (no noise flag).
    quiet_verdicts: bool = False
    # Each point judged against its series' previous x value rather than the
    # reference series (a history over versions); set by code, not the URL.
    steps: bool = False
    # A key of PER: each value divided by its machine's cores or GiB of RAM.
    per: str | None = None

    @property
    def benchmark(self) -> str:
        return self.metric.benchmark.name

    @property
    def unit(self) -> str:
        """The values' unit: the metric's, or the derived one (tx/s per core)."""
        if self.per is None:
            return self.metric.unit
        return f"{self.metric.unit} {PER[self.per][2]}"

    @property
    def file_stem(self) -> str:
        """What a download of this comparison is called, before its extension
        (catalog and axis names only: no user text reaches a file name)."""
        per = f"-per-{self.per}" if self.per else ""
        return f"benchhub-{self.benchmark}-{self.metric.name}{per}-by-{self.x.name}"


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
    minimum_effect = DEFAULT_MINIMUM_EFFECT
    if values.get("minimum_effect"):
        try:
            minimum_effect = _percent(values["minimum_effect"]) / 100
        except ValueError as exc:
            errors["minimum_effect"] = str(exc)
    if values.get("verdicts") not in ("", "quiet", "all"):
        errors["verdicts"] = "quiet (verdicts from runs without a noise flag) or all"
    if values.get("per") and values["per"] not in PER:
        errors["per"] = f"{values['per']!r}: one of {', '.join(PER)}"
    if values.get("scale") and values["scale"] not in SCALES:
        errors["scale"] = f"{values['scale']!r}: one of {', '.join(SCALES)}"
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
    if metric is not None and values.get("per") and not per_applies(metric):
        errors.setdefault(
            "per",
            f"{metric.name} is in {metric.unit}: only a rate where higher is better "
            "(tx/s, MB/s) divides by cores or RAM into something that means anything",
        )
    if errors:
        raise InvalidComparison(errors)
    assert metric is not None and x is not None
    filters = {
        key: list(given)
        for key, given in params.items()
        if key not in COMPARISON_PARAMETERS and key not in NOT_APPLICABLE
    }
    return ComparisonQuery(
        metric,
        x,
        series,
        values["reference"] or None,
        filters,
        minimum_effect,
        quiet_verdicts=values["verdicts"] == "quiet",
        per=values["per"] or None,
    )


def per_applies(metric: Metric) -> bool:
    """Whether a metric divides by cores or RAM meaningfully: a rate (tx/s,
    orders/min, MB/s) where higher is better. A latency or a time per core
    says nothing; a relative score (%) is already a ratio."""
    return metric.direction == "higher" and "/" in metric.unit


def _percent(text: str) -> float:
    try:
        value = float(text.removesuffix("%"))
    except ValueError:
        raise ValueError(f"{text!r} is not a number: a percentage such as 5") from None
    if not 0 <= value < 1000:
        raise ValueError(f"{text!r}: a percentage from 0 to 1000 (5 means 5 %)")
    return value


def _metric_get(benchmark: str, name: str, errors: dict[str, str]) -> Metric | None:
    # Case-insensitive like every filter value (benchhub.results.filters).
    benchmark, name = benchmark.lower(), name.lower()
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
        known = ", ".join(known_values("benchmark") or [])
        errors["benchmark"] = f"unknown benchmark {benchmark!r}; known values: {known}"
    elif name and "metric" not in errors:
        errors["metric"] = f"{benchmark} has no metric {name!r}; it has {', '.join(names)}"
    return None
