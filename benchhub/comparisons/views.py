"""The comparison page, /compare/: a form, the chart, the same numbers as a
table. With htmx, a changed field fetches only the comparison fragment and
the answer's HX-Push-Url puts the comparison's canonical URL (the same query
string the API takes) in the address bar."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import push_url

from benchhub.comparisons.aggregation import Comparison, Point, label_shown, verdict_reference
from benchhub.comparisons.apis import comparison_as_data
from benchhub.comparisons.chart_image import comparison_svg
from benchhub.comparisons.presets import PRESETS
from benchhub.comparisons.query import (
    AXIS_DIMENSIONS,
    COMPARISON_PARAMETERS,
    PER,
    InvalidComparison,
    comparison_query_parse,
    per_applies,
)
from benchhub.comparisons.selectors import (
    PooledParameter,
    comparison_build,
    comparison_may_pool,
    comparison_parameter_names,
    comparison_pooling,
)
from benchhub.comparisons.side_by_side import (
    RunsNotComparable,
    runs_side_by_side,
    side_by_side_as_data,
    side_by_side_chart,
    side_by_side_csv,
)
from benchhub.lib.api import error_body
from benchhub.lib.methods import page_methods
from benchhub.results import selectors as results_selectors
from benchhub.results.feeds import feed_url_for
from benchhub.results.filters import MeasurementFilter
from benchhub.results.models import Benchmark, Metric

# Fixed filters the form always offers; any other one in the URL gets an
# input of its own, and "add a filter" takes a name and a value.
COMMON_FILTERS = (
    "engine",
    "version_major",
    "os_family",
    "filesystem",
    "mount_options",
    "io_scheduler",
    "protocol",
    "config_profile",
)
# Suggestions for "add a filter".
FILTER_NAMES = [
    *(name for name in MeasurementFilter.base_filters if name not in ("benchmark", "metric")),
    "mount_option",
    "version_min",
    "version_max",
    "param.",
    "run_param.",
]
# Form helpers that are not part of a comparison's URL.
_ADD_NAME, _ADD_VALUE = "add_filter", "add_value"
# The benchmark the form's metric and axis choices were drawn for.
_SHOWN = "shown_benchmark"
_NOT_A_FILTER = {*COMPARISON_PARAMETERS, _ADD_NAME, _ADD_VALUE}


@dataclass(frozen=True)
class TableRow:
    x: Any
    cells: list[Point | None]  # one per series, in series order


@page_methods("GET")
def compare(request: HttpRequest) -> HttpResponse:
    benchmarks = list(results_selectors.benchmark_list())
    params = _form_params(request.GET)
    # The form is never replaced while in use: the benchmark its metric and
    # axis choices were drawn for travels with it, so that a request sent
    # before an earlier one's answer arrived (typing while a new benchmark
    # loads, or arrowing through the select) still drops the old one's metric.
    shown = request.GET.get(_SHOWN, "").strip().lower()
    if request.htmx and (
        request.htmx.trigger_name == "benchmark"
        or (shown and shown != _first(params, "benchmark").lower())
    ):
        params = _for_another_benchmark(params)
    # Names as the catalog spells them (Select-Update → select-update), so
    # that the selects show them and the pushed URL is the canonical one.
    benchmark = next((b for b in benchmarks if b.name == _first(params, "benchmark").lower()), None)
    if benchmark is not None:
        params["benchmark"] = [benchmark.name]
    metric = _metric_for(benchmark, params) if benchmark else None

    # per core / GiB only for a rate: a metric changed under it drops it, with a note.
    per_dropped = None
    if metric is not None and not per_applies(metric):
        per_dropped = params.pop("per", None)

    point_names: list[str] = []
    run_names: list[str] = []
    if metric is not None:
        point_names, run_names = comparison_parameter_names(metric=metric)
        if not _first(params, "x"):
            params["x"] = [_default_x(point_names)]

    # "— one series —" chosen with a reference set: the reference select
    # was still enabled and sent it; the page drops it, like a stale one.
    orphan_reference = None if _first(params, "series") else params.pop("reference", None)

    comparison: Comparison | None = None
    pooled: list[PooledParameter] = []
    errors: dict[str, str] = {}
    if benchmark is not None or params:
        try:
            query = comparison_query_parse(params)
            names = (
                (point_names, run_names)
                if metric is not None and query.metric.pk == metric.pk
                else comparison_parameter_names(metric=query.metric)
            )
            may_pool = comparison_may_pool(query, *names)
            comparison = comparison_build(
                user=request.user, query=query, strict_reference=False, check_parameters=may_pool
            )
            if may_pool and not comparison.is_empty and comparison.parameters_may_differ:
                pooled = comparison_pooling(user=request.user, query=query)
        except InvalidComparison as exc:
            errors = exc.errors
        if comparison is not None and comparison.reference_dropped:
            params.pop("reference", None)
        if comparison is not None and per_dropped:
            comparison.notes.append(
                f"per {per_dropped[0]!r} divides rates only; {metric.name} is shown as measured."
            )
        if comparison is not None and orphan_reference:
            comparison.notes.append(
                f"reference {orphan_reference[0]!r} needs a series; shown without reference."
            )

    query_string = urlencode(_ordered(params), doseq=True)
    page_url = reverse("comparisons:compare") + (f"?{query_string}" if query_string else "")
    api_url = reverse("comparisons-api:comparison") + f"?{query_string}"
    context = {
        "benchmarks": benchmarks,
        "metrics": sorted(benchmark.metrics.all(), key=lambda m: m.pk) if benchmark else [],
        "per_choices": [(name, words) for name, (_, _, words) in PER.items()]
        if metric is not None and per_applies(metric)
        else [],
        "current": {key: _first(params, key) for key in COMPARISON_PARAMETERS},
        "axis_choices": _axis_choices(point_names, run_names, params),
        "reference_choices": _reference_choices(comparison, params),
        "fixed_filters": _fixed_filter_inputs(params),
        "filter_names": FILTER_NAMES,
        "comparison": comparison,
        "errors": errors,
        "chart": _chart(comparison) if comparison is not None else None,
        "table": _table(comparison) if comparison is not None else [],
        # TOTALS only where a sum means something (a time): no column of dashes
        "summary_totals": comparison is not None
        and any(row.totals is not None for row in comparison.summary),
        "pooled": [_fix_links(parameter, params) for parameter in pooled],
        "page_notes": _page_notes(comparison) if comparison is not None else [],
        "status": _status(comparison, errors),
        "htmx": bool(request.htmx),
        "benchmark_changed": bool(request.htmx)
        and (
            request.htmx.trigger_name == "benchmark"
            or bool(shown and shown != _first(params, "benchmark"))
        ),
        "page_url": page_url,
        "api_url": api_url,
        "csv_url": f"{api_url}&format=csv",
        "svg_url": reverse("comparisons:chart-svg") + f"?{query_string}",
        "feed_url": feed_url_for((key, v) for key, values in params.items() for v in values),
        "presets": PRESETS,
    }
    if request.htmx:
        response = render(request, "comparisons/comparison.html", context)
        return push_url(response, page_url)
    if list(request.GET.lists()) != _ordered(params):
        # Submitted without JavaScript (empty fields, "add a filter"): land
        # on the canonical URL, so that the address bar can be shared as is.
        return redirect(page_url)
    return render(request, "comparisons/compare.html", context)


def _form_params(data: QueryDict) -> dict[str, list[str]]:
    """The query as the comparison reads it: empty form fields dropped (an
    empty select means "not set"), the "add a filter" pair folded in, and
    ``format`` left to the API links."""
    params: dict[str, list[str]] = {}
    for key, values in data.lists():
        if key in (_ADD_NAME, _ADD_VALUE, _SHOWN, "format"):
            continue
        kept = [value.strip() for value in values if value.strip()]
        if kept:
            params[key] = kept
    name, value = data.get(_ADD_NAME, "").strip(), data.get(_ADD_VALUE, "").strip()
    if name and value and name not in _NOT_A_FILTER:
        params.setdefault(name, []).append(value)
    return params


def _for_another_benchmark(params: dict[str, list[str]]) -> dict[str, list[str]]:
    """The benchmark select changed: what belongs to the old benchmark goes
    (its metric, the reference, parameters, which benchmarks name their own
    way); environment axes and filters still mean the same and stay."""
    kept = {}
    for key, values in params.items():
        if key in ("metric", "reference"):
            continue
        if key in ("x", "series"):
            values = [v for v in values if not v.startswith(("param.", "run_param."))]
        elif key.startswith(("param.", "run_param.")):
            continue
        if values:
            kept[key] = values
    return kept


def _first(params: dict[str, list[str]], key: str) -> str:
    return params.get(key, [""])[0]


def _metric_for(benchmark: Benchmark, params: dict[str, list[str]]) -> Metric | None:
    """The metric select lists the benchmark's metrics: when none is given
    (the benchmark select changed, and the old metric went with the old
    benchmark), its first metric (catalog order) takes over. A metric the
    benchmark does not have is left for the comparison to report."""
    metrics = sorted(benchmark.metrics.all(), key=lambda m: m.pk)
    chosen = next((m for m in metrics if m.name == _first(params, "metric").lower()), None)
    if chosen is None and metrics and not _first(params, "metric"):
        chosen = metrics[0]
    if chosen is not None:
        params["metric"] = [chosen.name]
    return chosen


def _default_x(point_names: list[str]) -> str:
    if "clients" in point_names:
        return "param.clients"
    return f"param.{point_names[0]}" if point_names else "engine"


def _ordered(params: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    first = [(key, params[key]) for key in COMPARISON_PARAMETERS if key in params]
    rest = [(key, values) for key, values in params.items() if key not in COMPARISON_PARAMETERS]
    return first + rest


def _axis_choices(
    point_names: list[str], run_names: list[str], params: dict[str, list[str]]
) -> list[tuple[str, list[tuple[str, str]]]]:
    """Option groups for the x and series selects. A value in the URL that
    the data do not use (yet) stays selectable, so that the select shows
    what the URL says and the next change does not silently replace it."""
    point = [f"param.{name}" for name in point_names]
    run = [f"run_param.{name}" for name in run_names]
    for key in ("x", "series"):
        value = _first(params, key)
        if value.startswith("param.") and value not in point:
            point.append(value)
        elif value.startswith("run_param.") and value not in run:
            run.append(value)
    return [
        ("Measurement parameters", [(v, v.removeprefix("param.")) for v in point]),
        ("Run parameters", [(v, v.removeprefix("run_param.")) for v in run]),
        ("Environment", [(name, name.replace("_", " ")) for name in AXIS_DIMENSIONS]),
    ]


def _reference_choices(
    comparison: Comparison | None, params: dict[str, list[str]]
) -> tuple[list[Any], Any]:
    """The reference select's values (the series labels) and the selected
    one. Like x and series, a reference the comparison could not check (an
    error elsewhere) stays selectable, so the next change keeps it."""
    labels = [s.label for s in comparison.series] if comparison is not None else []
    if comparison is not None:
        selected = comparison.reference
    else:
        selected = _first(params, "reference") or None
    if selected is not None and selected not in labels:
        labels.append(selected)
    return labels, selected


def _fixed_filter_inputs(params: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(name, value) per input: the common filters (empty when unset), then
    every other fixed filter of the URL, one input per value."""
    inputs = [(name, value) for name in COMMON_FILTERS for value in params.get(name, [""])]
    for name, values in params.items():
        if name not in COMMON_FILTERS and name not in _NOT_A_FILTER:
            inputs.extend((name, value) for value in values)
    return inputs


def _chart(comparison: Comparison) -> dict[str, Any]:
    """What the chart script reads: the API's JSON, untouched, and the axis
    titles written for people."""
    query = comparison.query
    metric = query.metric
    better = {"higher": ", higher is better", "lower": ", lower is better"}.get(
        metric.direction, ""
    )
    if comparison.reference is not None and query.series is not None:
        y_title = f"{metric.name}, % of {query.series.title} = {label_shown(comparison.reference)}"
    else:
        y_title = f"{metric.name} ({query.unit}){better}"
    per = f" {PER[query.per][2]}" if query.per else ""
    title = f"{query.benchmark}: {metric.name}{per} by {query.x.title}"
    if query.series is not None:
        title += f", per {query.series.title}"
    fixed = ", ".join(f"{key}={value}" for key, values in query.filters.items() for value in values)
    return {
        "data": comparison_as_data(comparison),
        "error_bars": error_bars(comparison),
        "intervals": verdict_intervals(comparison),
        "labels": {
            "title": title,
            "subtitle": f"fixed: {fixed}" if fixed else "",
            "x": query.x.title,
            "y": y_title,
            "filename": f"{query.file_stem}.png",
        },
    }


@page_methods("GET")
def comparison_chart_svg(request: HttpRequest) -> HttpResponse:
    """/compare/chart.svg?<the comparison's query>: the chart as an image another site can
    embed. Its numbers are the API's (kept answers serve it again until the data
    changes); browsers and proxies may keep it five minutes. A query the comparison
    refuses is a 400 naming the problem, as text."""
    try:
        query = comparison_query_parse(dict(request.GET.lists()))
        comparison = comparison_build(user=request.user, query=query)
    except InvalidComparison as exc:
        problems = "; ".join(f"{key}: {message}" for key, message in exc.errors.items())
        return HttpResponse(
            f"No chart: {problems}\n", status=400, content_type="text/plain; charset=utf-8"
        )
    labels = _chart(comparison)["labels"]
    metric = query.metric
    svg = comparison_svg(
        comparison,
        [x for x in comparison.x_values if not is_totals(x)],
        title=labels["title"],
        subtitle=labels["subtitle"],
        y_title=f"{metric.name} ({metric.unit})",
    )
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    # A signed-in submitter's chart may hold their own runs that are not public yet:
    # for their browser only.
    response["Cache-Control"] = (
        "private, max-age=300" if request.user.is_authenticated else "public, max-age=300"
    )
    return response


def _table(comparison: Comparison) -> list[TableRow]:
    """The chart's numbers pivoted like the articles' tables: a row per x
    value, a column per series; an article's own TOTALS row first, as the
    article has it (the chart leaves it out: it would set the scale)."""
    by_series = [{point.x: point for point in series.points} for series in comparison.series]
    rows = [TableRow(x, [points.get(x) for points in by_series]) for x in comparison.x_values]
    return sorted(rows, key=lambda row: not is_totals(row.x))


def is_totals(x: Any) -> bool:
    return isinstance(x, str) and x.strip().casefold() == "totals"


@dataclass(frozen=True)
class FixLinks:
    parameter: PooledParameter
    links: list[tuple[str, str]]  # (value, the page's URL with it fixed)
    vary_url: str = ""  # the page with it as the series, x kept


def _fix_links(parameter: PooledParameter, params: dict[str, list[str]]) -> FixLinks:
    links = []
    for value in parameter.values[:8]:
        fixed = {**params, parameter.filter: [value]}
        links.append((value, reverse("comparisons:compare") + "?" + _query(fixed)))
    # The series, not x: x is the sweep the reader plots (clients, operation).
    varied = {key: value for key, value in params.items() if key != "reference"}
    varied["series"] = [parameter.filter]
    vary_url = reverse("comparisons:compare") + "?" + _query(varied)
    return FixLinks(parameter, links, vary_url)


def _query(params: dict[str, list[str]]) -> str:
    return urlencode(_ordered(params), doseq=True)


def _page_notes(comparison: Comparison) -> list[str]:
    """What the chart would leave a reader wondering about."""
    notes = []
    x = comparison.query.x
    if len(comparison.x_values) == 1 and not comparison.is_empty:
        value = comparison.x_values[0]
        notes.append(
            f"The axis has one category: every measurement that fits has {x.title} = {value}. "
            "Choose another x, or loosen a fixed filter, to compare along it."
        )
    if any(is_totals(value) for value in comparison.x_values) and len(comparison.x_values) > 1:
        notes.append(
            "TOTALS (the article's own sum) is the table's first row and not drawn: as a bar "
            "it would set the scale and flatten every other operation."
        )
    return notes


def _status(comparison: Comparison | None, errors: dict[str, str]) -> str:
    """One sentence for the live region: what the result now shows."""
    if errors:
        return "This comparison cannot be drawn: " + "; ".join(
            f"{key}: {message}" for key, message in errors.items()
        )
    if comparison is None:
        return ""
    if comparison.is_empty:
        return "No results to compare."
    points = sum(len(series.points) for series in comparison.series)
    query = comparison.query
    return (
        f"Showing {query.benchmark} {query.metric.name} by {query.x.title}: "
        f"{len(comparison.series)} series, {points} points."
    )


def error_bars(comparison: Comparison) -> dict[str, dict[str, list[float]]]:
    """Per series label and x (as JSON text), the error bar the chart draws:
    the min and max of the cell's measurements, the range the table, the
    tooltip, the caption and the API's ``min``/``max`` show beside the
    median, whatever n (a reader checks one against the other)."""
    bars: dict[str, dict[str, list[float]]] = {}
    for series in comparison.series:
        for point in series.points:
            if point.n < 2:
                continue
            # JSON as the API writes it (a uuid as its text), as the chart looks it up
            bars.setdefault(series.label, {})[json.dumps(point.x, default=str)] = [
                point.min,
                point.max,
                "range",
            ]
    return bars


def verdict_intervals(comparison: Comparison) -> dict[str, dict[str, list[float]]]:
    """Per series label and x (as JSON text, as ``error_bars``), the interval
    each verdict is based on, in the metric's unit: the 95 % interval of the
    ratio to the reference, times the reference's median at that x. Where a
    verdict has no bounded interval (too few runs), there is none to draw."""
    reference = next(
        (series for series in comparison.series if series.label == verdict_reference(comparison)),
        None,
    )
    if reference is None:
        return {}
    medians = {point.x: point.value for point in reference.points}
    intervals: dict[str, dict[str, list[float]]] = {}
    for series in comparison.series:
        for point in series.points:
            judged = point.verdict
            if judged is None or judged.ratio_low is None or judged.ratio_high is None:
                continue
            if point.x not in medians:
                continue
            median = medians[point.x]
            intervals.setdefault(series.label, {})[json.dumps(point.x, default=str)] = [
                median * judged.ratio_low,
                median * judged.ratio_high,
            ]
    return intervals


# --- any N runs side by side -----------------------------------------------------


@page_methods("GET")
def runs_side_by_side_page(request: HttpRequest) -> HttpResponse:
    """/runs/compare/?run=…&run=…: the runs' common points with ratios to the
    first and verdicts, and what differs between their environments; as
    JSON with ?format=json and CSV with ?format=csv."""
    wanted = request.GET.get("format", "html")
    if wanted not in ("html", "json", "csv"):
        return HttpResponse(
            f"format {wanted!r}: one of html, json, csv\n",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    try:
        result = runs_side_by_side(user=request.user, ids=request.GET.getlist("run"))
    except RunsNotComparable as exc:
        if wanted == "json":
            return JsonResponse(error_body("invalid", str(exc), [{"field": "run"}]), status=400)
        if wanted == "csv":
            return HttpResponse(f"run: {exc}\n", status=400, content_type="text/plain")
        return render(request, "comparisons/runs.html", {"error": str(exc)}, status=400)
    if wanted == "json":
        return JsonResponse(side_by_side_as_data(result, request))
    if wanted == "csv":
        return side_by_side_csv(result)
    query = request.GET.copy()
    links = {}
    for name in ("json", "csv"):
        query["format"] = name
        links[name] = f"{request.path}?{query.urlencode()}"
    return render(
        request,
        "comparisons/runs.html",
        {"result": result, "links": links, "chart": side_by_side_chart(result)},
    )
