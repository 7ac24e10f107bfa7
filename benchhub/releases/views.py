from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse

from benchhub.comparisons.query import PER
from benchhub.lib.api import error_body
from benchhub.lib.methods import page_methods
from benchhub.releases.data import changes_as_data, history_as_data
from benchhub.releases.history import (
    BY,
    History,
    InvalidHistory,
    history_build,
    history_engines,
)
from benchhub.releases.selectors import InvalidChanges, changes_build, changes_versions
from benchhub.results import selectors as results_selectors
from benchhub.results.feeds import feed_url_for
from benchhub.results.normalization.versions import version_order


@page_methods("GET")
def changes_page(request: HttpRequest) -> HttpResponse:
    """/changes/?engine=postgresql&from=16&to=17: what changed between two releases,
    from machines that ran both; the form alone without a query; ?format=json."""
    query = {key: request.GET.get(key, "").strip() for key in ("engine", "from", "to")}
    wanted = request.GET.get("format", "html")
    engine = query["engine"]
    versions = changes_versions(user=request.user, engine=engine) if engine else []
    context: dict = {"query": query, "versions": versions}
    if not any(query.values()):
        return render(request, "releases/changes.html", context)
    try:
        if wanted not in ("html", "json"):
            raise InvalidChanges({"format": f"{wanted!r}: html or json"})
        changes = changes_build(
            user=request.user, engine=query["engine"], before=query["from"], after=query["to"]
        )
    except InvalidChanges as exc:
        if wanted == "json":
            details = [{"path": f"$.{k}", "message": m} for k, m in exc.errors.items()]
            return JsonResponse(error_body("invalid", str(exc), details), status=400)
        return render(
            request, "releases/changes.html", {**context, "errors": exc.errors}, status=400
        )
    if wanted == "json":
        return JsonResponse(changes_as_data(changes))
    low, high = sorted((changes.before, changes.after), key=version_order)
    feed = feed_url_for(
        [("engine", changes.engine), ("version_min", low), ("version_max", f"{high}.99999.99999")]
    )
    return render(
        request, "releases/changes.html", {**context, "changes": changes, "feed_url": feed}
    )


# Environment filters the history's form always offers ("machines like mine");
# any other filter in the address gets an input of its own.
HISTORY_FILTERS = (
    "cpu_model",
    "cores",
    "storage_kind",
    "filesystem",
    "os_family",
    "config_profile",
    "protocol",
)


@page_methods("GET")
def history_page(request: HttpRequest, name: str) -> HttpResponse:
    """/benchmarks/<name>/history/?engine=postgresql: a metric over the server's
    versions, the median per version with its spread and its verdict against
    the version before; ?format=json as /api/v1/history/<name>/."""
    wanted = request.GET.get("format", "html")
    benchmark = results_selectors.benchmark_list().filter(name=name.lower()).first()
    context: dict = {
        "benchmark": benchmark,
        "name": name,
        "by_choices": BY,
        "per_choices": {key: words for key, (_, _, words) in PER.items()},
    }
    try:
        if wanted not in ("html", "json"):
            raise InvalidHistory({"format": f"{wanted!r}: html or json"})
        if benchmark is not None and wanted == "html" and not request.GET.get("engine"):
            # The way in from a benchmark or a release: which server's versions?
            engines = history_engines(user=request.user, benchmark=benchmark.name)
            return render(request, "releases/history.html", {**context, "engines": engines})
        history = history_build(user=request.user, benchmark_name=name, params=request.GET)
    except InvalidHistory as exc:
        status = 404 if "benchmark" in exc.errors else 400
        if wanted == "json":
            details = [{"path": f"$.{k}", "message": m} for k, m in exc.errors.items()]
            return JsonResponse(error_body("invalid", str(exc), details), status=status)
        context.update(errors=exc.errors, form=_history_form(request.GET, {}))
        if benchmark is not None:
            context["engines"] = history_engines(user=request.user, benchmark=benchmark.name)
        return render(request, "releases/history.html", context, status=status)
    data = history_as_data(history)
    if wanted == "json":
        return JsonResponse(data)
    query = request.GET.copy()
    query["format"] = "json"
    # Each step's own evidence, paired by machine: the changes page from the
    # version before (which takes major versions, and their prefixes).
    links: list[str | None] = [None] * len(history.steps)
    if history.by == "version_major":
        links[1:] = [
            reverse("releases:changes")
            + "?"
            + urlencode({"engine": history.engine, "from": before.version, "to": after.version})
            for before, after in zip(history.steps, history.steps[1:], strict=False)
        ]
    context.update(
        history=history,
        rows=list(zip(history.steps, links, strict=True)),
        engines=history_engines(user=request.user, benchmark=history.benchmark.name),
        data=data,
        labels=_history_labels(history),
        form=_history_form(request.GET, history.filters),
        json_url=f"{request.path}?{query.urlencode()}",
        api_url=reverse("releases-api:history", args=[history.benchmark.name])
        + f"?{_without(request.GET, 'format')}",
    )
    return render(request, "releases/history.html", context)


def _without(params: QueryDict, key: str) -> str:
    kept = params.copy()
    kept.pop(key, None)
    return kept.urlencode()


def _history_form(params: QueryDict, applied: dict[str, list[str]]) -> dict:
    """The form's values: the choices, the point and environment filters (the
    applied ones, so a point the history chose shows in its input)."""
    given = {key: [v for v in values if v.strip()] for key, values in params.lists()}
    filters = {**given, **applied} if applied else given
    own = ("metric", "by", "format", "engine", "benchmark", "x", "minimum_effect", "per", "scale")
    inputs = [(name, value) for name in HISTORY_FILTERS for value in filters.get(name) or [""]]
    points = []
    for key, values in filters.items():
        if key in own or key in HISTORY_FILTERS:
            continue
        target = points if key.startswith(("param.", "run_param.")) else inputs
        target.extend((key, value) for value in values)
    return {
        "metric": (params.get("metric") or "").strip(),
        "by": (params.get("by") or "version").strip(),
        "engine": (params.get("engine") or "").strip().lower(),
        "per": (params.get("per") or "").strip(),
        "scale": (params.get("scale") or "").strip(),
        "points": points,
        "inputs": inputs,
    }


def _history_labels(history: History) -> dict[str, str]:
    metric = history.metric
    better = {"higher": ", higher is better", "lower": ", lower is better"}.get(
        metric.direction, ""
    )
    point = ", ".join(
        f"{key.removeprefix('param.')}={value}"
        for key, values in history.filters.items()
        if key.startswith("param.")
        for value in values
    )
    rest = ", ".join(
        f"{key}={value}"
        for key, values in history.filters.items()
        if not key.startswith("param.") and key != "engine"
        for value in values
    )
    return {
        "title": f"{history.benchmark.name}: {metric.name}"
        + (f" {PER[history.per][2]}" if history.per else "")
        + f" over {history.engine} versions"
        + (f" at {point}" if point else ""),
        "subtitle": f"fixed: {rest}" if rest else "every environment",
        "x": f"{history.engine} {BY[history.by].removeprefix('each ')}",
        "y": f"{metric.name} ({history.unit}){better}",
        "median": "median",
        "band": "middle half of the runs (q1 to q3)",
        "filename": f"benchhub-{history.benchmark.name}-{metric.name}-over-{history.engine}.png",
    }
