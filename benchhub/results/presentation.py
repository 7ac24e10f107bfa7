"""What the run and submission pages show, built from rows already read.

Pure functions: no query here (the views read everything through selectors
first), so a page's query count does not grow with its rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from benchhub.baselines.selectors import baseline_point, rank_refusal
from benchhub.lib.spread import spread_of
from benchhub.results.models import Measurement, Run
from benchhub.results.noise import (  # the run's own flag uses the same cut
    NOISY_CV,
    coefficient_of_variation,
)
from benchhub.results.normalization.versions import version_order

# |modified z-score| above this is Iglewicz and Hoaglin's usual outlier cut.
OUTLIER_SCORE = 3.5


@dataclass(frozen=True)
class EnvironmentRow:
    section: str
    label: str
    value: str
    raw: str = ""  # what the agent sent, when normalization changed it
    url: str = ""  # the dimension's own page, when it has one


def _human_bytes(value: int | None) -> str:
    if not value:
        return ""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


def environment_rows(run: Run, *, linked: bool = True) -> list[EnvironmentRow]:
    """The run's five dimensions as label/value rows, normalized values
    first and the raw string beside them where it differs; ``linked``: the
    CPU, filesystem and version link to their pages (which show only runs
    the lists show)."""
    hw, st, os_, server, client = run.hardware, run.storage, run.os, run.server, run.client

    def page(kind: str, row: Any) -> str:
        return dimension_url(kind, row) if linked else ""

    cpu = " ".join(filter(None, [hw.cpu_vendor, hw.cpu_model]))

    def raw(normalized: str, given: str) -> str:
        return given if given and given != normalized else ""

    rows = [
        EnvironmentRow("Hardware", "CPU", cpu, raw(cpu, hw.cpu_raw), page("cpu", hw)),
        EnvironmentRow("Hardware", "cores / threads", _pair(hw.cores, hw.threads)),
        EnvironmentRow("Hardware", "RAM", _human_bytes(hw.ram_bytes)),
        EnvironmentRow(
            "Hardware",
            "virtualization",
            hw.virtualization,
            raw(hw.virtualization, hw.virtualization_raw),
        ),
        EnvironmentRow("Storage", "kind", st.kind),
        EnvironmentRow("Storage", "device", st.device_model),
        EnvironmentRow("Storage", "RAID", st.raid),
        EnvironmentRow(
            "Storage",
            "filesystem",
            st.filesystem,
            raw(st.filesystem, st.filesystem_raw),
            page("filesystem", st),
        ),
        EnvironmentRow(
            "Storage",
            "mount options",
            st.mount_options.replace(",", ", "),
            raw(st.mount_options, st.mount_options_raw),
        ),
        EnvironmentRow(
            "Storage", "I/O scheduler", st.io_scheduler, raw(st.io_scheduler, st.io_scheduler_raw)
        ),
        EnvironmentRow("OS", "family", os_.family),
        EnvironmentRow(
            "OS", "distribution", os_.distribution, raw(os_.distribution, os_.distribution_raw)
        ),
        EnvironmentRow("OS", "release", os_.version),
        EnvironmentRow("OS", "kernel", os_.kernel),
        EnvironmentRow("Database", "engine", server.engine),
        EnvironmentRow(
            "Database",
            "server version",
            server.version,
            raw(server.version, server.version_raw),
            page("version", server),
        ),
        EnvironmentRow("Database", "major version", server.version_major),
        EnvironmentRow("Database", "architecture", server.architecture),
        EnvironmentRow("Database", "configuration profile", server.config_profile),
        # as stored: the value the results list, /compare/ and the filters
        # (protocol=tcp_loopback) spell, not a second spelling of it
        EnvironmentRow("Client", "protocol", client.protocol),
        EnvironmentRow(
            "Client", "driver", " ".join(filter(None, [client.driver, client.driver_version]))
        ),
        EnvironmentRow("Client", "CPU placement", client.cpu_placement),
        EnvironmentRow("Client", "load engine", client.load_engine),
    ]
    return [row for row in rows if row.value or row.raw]


def _pair(first: int | None, second: int | None) -> str:
    if first is None and second is None:
        return ""
    return f"{first if first is not None else '?'} / {second if second is not None else '?'}"


def dimension_url(kind: str, row: Any) -> str:
    """The page of a CPU model, a database version or a filesystem; empty
    when the run does not know it (no page for "unknown")."""
    if kind == "cpu" and row.cpu_model:
        return reverse("results:cpu", args=[row.cpu_model])
    if kind == "filesystem" and row.filesystem and "/" not in row.filesystem:
        return reverse("results:filesystem", args=[row.filesystem])
    if kind == "version" and row.version and "/" not in row.version:
        return reverse("results:version", args=[row.engine, row.version])
    return ""


def parameters_text(parameters: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{key}={parameter_value_text(v)}" for key, v in (parameters or {}).items())


def parameter_value_text(value: Any) -> str:
    """A parameter's value as the filters, the facets and the moderation
    queue spell it: true, false and null, never Python's True or None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


@dataclass(frozen=True)
class Standing:
    """Where a value stands among the approved results of its key and point."""

    n: int  # the baseline's results, this one among them when it is counted
    # Share (in %) of the others this one does better than; None where a
    # rank means nothing, and ``unranked`` says why (baselines.rank_refusal).
    percentile: float | None
    others: int  # the baseline's results but this one
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float
    # Positions on a 0 to 100 strip between minimum and maximum, for the page.
    marks: dict[str, float] = field(default_factory=dict)
    unranked: str = ""


@dataclass(frozen=True)
class MeasurementRow:
    measurement: Measurement
    point: str  # "clients=20"
    spread: tuple[float, float] | None  # min and max of the repetitions
    cv: float | None  # coefficient of variation of the repetitions
    flags: list[str]
    standing: Standing | None

    @property
    def cv_percent(self) -> str:
        return f"{self.cv * 100:.1f}" if self.cv is not None else ""


def _position(value: float, low: float, high: float) -> float:
    if high <= low:
        return 50.0
    return max(0.0, min(100.0, 100.0 * (value - low) / (high - low)))


def standing_of(
    value: float, baseline: Any, direction: str, rank, *, counted: bool = False
) -> Standing:
    """``counted``: the value is one of the baseline's own (an approved run's,
    taken in by a refresh). Its rank then ties it with itself, half a result
    it "does better than": the fastest of five came out better than 90 % of
    them and the slower of two better than 25 %. It is ranked among the
    others instead (the fastest of five, 100 % of the 4 others)."""
    low, high = min(baseline.minimum, value), max(baseline.maximum, value)
    others = baseline.n - 1 if counted else baseline.n
    unranked = rank_refusal(baseline, others)
    percentile = None if unranked else rank(value, baseline, direction)
    if percentile is not None and counted and others:
        percentile = max(0.0, min(100.0, (percentile * baseline.n - 50.0) / others))
    return Standing(
        n=baseline.n,
        percentile=percentile,
        others=others,
        median=baseline.median,
        q1=baseline.q1,
        q3=baseline.q3,
        minimum=baseline.minimum,
        maximum=baseline.maximum,
        unranked=unranked,
        marks={
            "min": _position(baseline.minimum, low, high),
            "q1": _position(baseline.q1, low, high),
            "median": _position(baseline.median, low, high),
            "q3": _position(baseline.q3, low, high),
            "max": _position(baseline.maximum, low, high),
            "value": _position(value, low, high),
        },
    )


def measurement_rows(
    measurements: Iterable[Measurement],
    baselines: Mapping[tuple[str, str], Any],
    rank,
    *,
    counted: bool = False,
) -> list[MeasurementRow]:
    """Every measurement with its repetitions' spread, its noise flags and,
    when its key has a baseline, where it stands. ``baselines`` maps
    (metric name, baseline point) to a baseline row; ``rank(value, baseline,
    direction)`` is the baselines app's (selectors.BaselineRanker);
    ``counted``: the run's measured values are in the baselines."""
    rows = []
    for m in measurements:
        samples = [float(s) for s in m.samples or [] if isinstance(s, (int, float))]
        spread = (min(samples), max(samples)) if len(samples) > 1 else None
        cv = coefficient_of_variation(samples)
        flags = []
        if cv is not None and cv > NOISY_CV:
            # to the tenth, as the CV beside it: "CV 9.5%" and "vary by 9%" disagreed
            flags.append(f"noisy: repetitions vary by {cv:.1%}")
        if m.outlier_score is not None and abs(m.outlier_score) > OUTLIER_SCORE:
            flags.append(f"outlier among comparable runs (score {m.outlier_score:+.1f})")
        if m.approximate:
            flags.append("approximate")
        baseline = baselines.get((m.metric.name, baseline_point(m.parameters or {})))
        standing = (
            standing_of(
                m.value, baseline, m.metric.direction, rank, counted=counted and not m.approximate
            )
            if baseline is not None and baseline.n
            else None
        )
        rows.append(MeasurementRow(m, parameters_text(m.parameters), spread, cv, flags, standing))
    return rows


def sweep_chart(run: Run, measurements: Iterable[Measurement]) -> dict[str, Any]:
    """The run's measurements per metric, as the run page's chart draws them:
    x is the parameter that varies within the run (clients, operation …);
    numeric x draws lines, text x draws bars."""
    by_metric: dict[str, list[Measurement]] = defaultdict(list)
    units: dict[str, tuple[str, str]] = {}
    for m in measurements:
        by_metric[m.metric.name].append(m)
        units[m.metric.name] = (m.metric.unit, m.metric.direction)
    metrics = []
    for name, rows in by_metric.items():
        varying = _varying_parameter(rows)
        points = []
        for m in rows:
            x = (m.parameters or {}).get(varying) if varying else name
            samples = [float(s) for s in m.samples or [] if isinstance(s, (int, float))]
            points.append(
                {
                    "x": x,
                    "y": m.value,
                    "min": min(samples) if len(samples) > 1 else None,
                    "max": max(samples) if len(samples) > 1 else None,
                }
            )
        numeric = all(
            isinstance(p["x"], (int, float)) and not isinstance(p["x"], bool) for p in points
        )
        if numeric:
            points.sort(key=lambda p: p["x"])
        unit, direction = units[name]
        metrics.append(
            {
                "metric": name,
                "unit": unit,
                "direction": direction,
                "x": varying or "metric",
                "x_numeric": numeric and bool(varying),
                "points": points,
            }
        )
    return {"benchmark": run.benchmark.name, "run": run.pk, "metrics": metrics}


def _varying_parameter(rows: list[Measurement]) -> str | None:
    names: dict[str, set[str]] = defaultdict(set)
    for m in rows:
        for key, value in (m.parameters or {}).items():
            names[key].add(repr(value))
    varying = [key for key, values in names.items() if len(values) > 1]
    if "clients" in varying:
        return "clients"
    if varying:
        return varying[0]
    return next(iter(names), None)


def compare_url(
    run: Run,
    metric: str,
    x: str | None,
    *,
    series: str = "cpu_model",
    fix: tuple[str, ...] = ("filesystem",),
) -> str:
    """A comparison of this run's key (the same benchmark, parameters,
    engine and major version: its fingerprint) along its sweep, one line
    per ``series``, with this run's own values of ``fix`` fixed too (by
    default its filesystem: "postgresql 15 on ext4, per CPU model")."""
    query: list[tuple[str, str]] = [
        ("benchmark", run.benchmark.name),
        ("metric", metric),
        ("x", f"param.{x}" if x and x != "metric" else series),
    ]
    if x and x != "metric":
        query.append(("series", series))
    query.append(("engine", run.server.engine))
    if run.server.version_major and series not in ("version_major", "version"):
        query.append(("version_major", run.server.version_major))
    own = {
        "filesystem": run.storage.filesystem,
        "storage_kind": run.storage.kind,
        "cpu_model": run.hardware.cpu_model,
    }
    for name in fix:
        if name != series and own.get(name):
            query.append((name, own[name]))
    for key, value in (run.parameters or {}).items():
        if isinstance(value, bool):
            query.append((f"run_param.{key}", "true" if value else "false"))
        elif isinstance(value, (str, int, float)):
            query.append((f"run_param.{key}", str(value)))
    return reverse("comparisons:compare") + "?" + urlencode(query)


def compare_links(run: Run, metric: str, x: str | None) -> list[tuple[str, str]]:
    """(label, URL) of the comparisons a run's reader asks for next, each
    a chart of a few lines: its database on its filesystem per CPU model
    (the first, "runs like it"), its CPU's filesystems, its engine's
    versions on its CPU and filesystem, and every CPU on any filesystem."""
    server = f"{run.server.engine} {run.server.version_major}".strip()
    filesystem = run.storage.filesystem
    cpu = run.hardware.cpu_model
    links = []
    if filesystem:
        links.append((f"{server} on {filesystem}, per CPU model", compare_url(run, metric, x)))
    if cpu:
        links.append(
            (
                f"{server} on {cpu}, per filesystem",
                compare_url(run, metric, x, series="filesystem", fix=("cpu_model",)),
            )
        )
    if cpu and filesystem:
        links.append(
            (
                f"{run.server.engine} versions on {cpu} and {filesystem}",
                compare_url(
                    run, metric, x, series="version_major", fix=("cpu_model", "filesystem")
                ),
            )
        )
    anywhere = compare_url(run, metric, x, fix=())
    links.append((f"{server} on any filesystem, per CPU model", anywhere))
    return links


# --- summaries of many runs: dimension and benchmark pages ----------------------

POINTS_SHOWN = 6


@dataclass(frozen=True)
class SpreadCell:
    n: int
    low: float
    median: float
    high: float
    # Measurements that differ in another parameter, pooled: the median is
    # that of all their values, and the page says so.
    pooled: bool = False


@dataclass(frozen=True)
class SpreadTable:
    """One benchmark's primary metric: a row per engine and major version,
    a column per point (the most measured ones), median (n, min to max)."""

    benchmark: str
    metric: Any  # Metric
    point_name: str  # "clients", "operation", or "" for none
    points: list[Any]
    rows: list[tuple[str, list[SpreadCell | None]]]
    more_points: int
    compare_url: str = ""

    @property
    def pooled(self) -> bool:
        """Whether a cell pools measurements that differ in another parameter."""
        return any(cell is not None and cell.pooled for _, cells in self.rows for cell in cells)


def _point_order(value: Any) -> tuple:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, "")
    return (1, 0, str(value).casefold())


def spread_tables(
    groups: Iterable[Mapping[str, Any]],
    primary: Mapping[str, Any],
    compare: Any = None,
) -> list[SpreadTable]:
    """``groups`` are ``selectors.spread_of_runs`` rows (one measurement
    each, with its benchmark, engine, major version and parameters);
    ``compare(benchmark, metric, point_name)`` gives each table's comparison link."""
    by_benchmark: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for group in groups:
        by_benchmark[group["run__benchmark__name"]].append(group)
    tables = []
    for benchmark in sorted(by_benchmark):
        rows = by_benchmark[benchmark]
        names: dict[str, int] = defaultdict(int)
        for group in rows:
            for key in group["parameters"] or {}:
                names[key] += len(group["values"])
        point_name = max(names, key=lambda key: (names[key], key == "clients")) if names else ""
        totals: dict[Any, int] = defaultdict(int)
        values: dict[tuple[str, Any], list[float]] = defaultdict(list)
        groups_in: dict[tuple[str, Any], int] = defaultdict(int)
        labels: dict[str, tuple] = {}
        for group in rows:
            point = (group["parameters"] or {}).get(point_name) if point_name else "all"
            if point is None or isinstance(point, (dict, list)):
                continue
            label = " ".join(
                filter(None, [group["run__server__engine"], group["run__server__version_major"]])
            )
            labels[label] = (
                group["run__server__engine"],
                version_order(group["run__server__version_major"] or ""),
            )
            totals[point] += len(group["values"])
            values[label, point].extend(group["values"])
            groups_in[label, point] += 1
        cells = {key: _cell(cell, pooled=groups_in[key] > 1) for key, cell in values.items()}
        top = sorted(totals, key=lambda p: -totals[p])[:POINTS_SHOWN]
        points = sorted(top, key=_point_order)
        table_rows = [
            (label, [cells.get((label, point)) for point in points])
            for label in sorted(labels, key=lambda label: labels[label])
        ]
        metric = primary[benchmark]
        tables.append(
            SpreadTable(
                benchmark,
                metric,
                point_name,
                points,
                table_rows,
                max(0, len(totals) - len(points)),
                compare(benchmark, metric, point_name) if compare else "",
            )
        )
    return tables


def _cell(values: list[float], *, pooled: bool) -> SpreadCell:
    """A cell of a summary table: the spread of all its values, by the one
    definition every page shares (``benchhub.lib.spread``)."""
    spread = spread_of(values)
    return SpreadCell(spread.n, spread.min, spread.median, spread.max, pooled=pooled)


def summary_compare_url(
    benchmark: str, metric: Any, point_name: str, series: str, fixed: Mapping[str, str]
) -> str:
    query = [("benchmark", benchmark), ("metric", metric.name)]
    query.append(("x", f"param.{point_name}" if point_name else series))
    if point_name:
        query.append(("series", series))
    query.extend(fixed.items())
    return reverse("comparisons:compare") + "?" + urlencode(query)
