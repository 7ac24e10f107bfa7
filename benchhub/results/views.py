"""HTML pages of the results app."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django_htmx.http import push_url
from rest_framework.exceptions import ValidationError

from benchhub.baselines.selectors import (
    BaselineRanker,
    baseline_counts_run,
    baseline_list,
    baseline_point,
)
from benchhub.lib.methods import page_methods
from benchhub.moderation.selectors import own_report_get, submission_history
from benchhub.results import presentation, reproduction, selectors
from benchhub.results.browser import BrowserState, facet_links, page_links
from benchhub.results.filters import FREE_TEXT_FILTERS, RunFilter, alias_targets
from benchhub.results.headlines import by_headline, run_headlines
from benchhub.results.models import Run
from benchhub.results.normalization import normalize_filesystem
from benchhub.results.search import Search, search_apply, search_explained, search_read


@page_methods("GET")
def home(request: HttpRequest) -> HttpResponse:
    submissions = selectors.latest_submissions(user=request.user, limit=10)
    template = "results/submission_rows.html" if request.htmx else "results/home.html"
    return render(
        request,
        template,
        {
            "submissions": submissions,
            "benchmarks": selectors.benchmark_catalog() if not request.htmx else [],
            "server_url": request.build_absolute_uri("/").rstrip("/"),
        },
    )


@page_methods("GET")
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get(user=request.user, pk=pk)
    if run is None:
        raise Http404(f"No run {pk} that you may see")
    measurements = sorted(run.measurements.all(), key=lambda m: (m.metric_id, m.pk))
    baselines = {(b.metric.name, b.point): b for b in baseline_list(fingerprint=run.fingerprint)}
    rank = BaselineRanker(
        (baselines.get((m.metric.name, baseline_point(m.parameters or {}))), m.value)
        for m in measurements
    )
    counted = baseline_counts_run(run_id=run.pk)
    rows = presentation.measurement_rows(measurements, baselines, rank, counted=counted)
    chart = presentation.sweep_chart(run, measurements)
    first = chart["metrics"][0] if chart["metrics"] else None
    api_url = request.build_absolute_uri(reverse("api:run-detail", args=[run.pk]))
    return render(
        request,
        "results/run.html",
        {
            "run": run,
            "submission": run.submission,
            "environment": presentation.environment_rows(
                run, linked=selectors.visible_in_lists(user=request.user, submission=run.submission)
            ),
            "settings": sorted((run.server.settings or {}).items()),
            "rows": rows,
            "headline": _headline(rows),
            "unranked": next(
                (
                    row
                    for row in rows
                    if row.standing and row.standing.others and row.standing.unranked
                ),
                None,
            ),
            "rank_min_results": settings.RANK_MIN_RESULTS,
            "chart": chart,
            "compare_links": (
                presentation.compare_links(run, first["metric"], first["x"]) if first else []
            ),
            "api_url": api_url,
            "csv_url": reverse("api:measurement-csv") + f"?run={run.pk}",
            "reproduce": reproduction.reproduction(
                api_url,
                benchmark=run.benchmark.name,
                version=run.benchmark_version,
                engine=run.server.engine,
                source=run.submission.source,
                tool=run.submission.tool,
                placement=run.client.cpu_placement,
            ),
            "parameters": presentation.parameters_text(run.parameters),
            "own_report": own_report_get(user=request.user, submission=run.submission),
            # Signing out here leads home, not to a page then gone (base.html).
            "private_page": not selectors.submission_is_public(run.submission),
        },
    )


def _headline(rows: list[presentation.MeasurementRow]) -> presentation.MeasurementRow | None:
    """The measurement the page puts first: the peak of the run's first
    metric where more is better (throughput at its best client count),
    else of its first metric, among those ranked against other results."""
    # Ranked only against others: a baseline of one is another's result
    # unless the run's own values are in it (approved and taken in by a
    # refresh; not a pending run's), which Standing.others tells.
    ranked = [
        row for row in rows if row.standing is not None and row.standing.percentile is not None
    ]
    if not ranked:
        return None
    higher = [row for row in ranked if row.measurement.metric.direction == "higher"]
    pool = higher or ranked
    metric = pool[0].measurement.metric_id
    same = [row for row in pool if row.measurement.metric_id == metric]
    if pool[0].measurement.metric.direction == "lower":
        return min(same, key=lambda row: row.measurement.value)
    return max(same, key=lambda row: row.measurement.value)


@page_methods("GET")
def submission_detail(request: HttpRequest, uuid) -> HttpResponse:
    submission = selectors.submission_get(user=request.user, uuid=uuid)
    if submission is None:
        raise Http404(f"No submission {uuid} that you may see")
    runs = list(selectors.submission_runs(user=request.user, submission=submission))
    return render(
        request,
        "results/submission.html",
        {
            "submission": submission,
            "runs": runs,
            "api_url": reverse("api:submission-detail", args=[submission.uuid]),
            # Empty for anybody but its submitter and moderators.
            "history": submission_history(submission, request.user),
            "own_report": own_report_get(user=request.user, submission=submission),
            "private_page": not selectors.submission_is_public(submission),
        },
    )


# --- the results browser ---------------------------------------------------------

PAGE_SIZE = 25
# The browser's own parameters; every other one is an API filter.
_BROWSER_PARAMETERS = ("q", "sort", "page")


@dataclass(frozen=True)
class BrowserQuery:
    filters: QueryDict  # the API filters given, without the browser's own parameters
    text: str
    search: Search
    filtered: QuerySet[Run]  # the visible runs the filters leave
    runs: QuerySet[Run]  # ... and the search too
    errors: dict[str, str]


def browser_query(request: HttpRequest) -> BrowserQuery:
    """The runs a results URL names: visible to the reader, filtered as the
    API filters, searched as the search box reads its words."""
    filters = request.GET.copy()
    for key in (*_BROWSER_PARAMETERS, "format", "cursor", "page_size"):
        filters.pop(key, None)
    for key in [key for key, values in filters.lists() if not any(v.strip() for v in values)]:
        del filters[key]  # an empty form field means "any"
    text = request.GET.get("q", "").strip()[:200]
    runs, errors = _filtered_runs(request, filters)
    filtered, search = runs, Search()
    if "\x00" in text:  # PostgreSQL text cannot hold one: the search would fail
        runs, errors = runs.none(), {**errors, "q": "a null character is not allowed"}
    elif text and not errors:
        visible = selectors.run_list(user=request.user)
        search = search_read(text, runs=visible, given=filters)
        runs = search_apply(runs, search)
    return BrowserQuery(filters, text, search, filtered, runs, errors)


@page_methods("GET")
def results_browser(request: HttpRequest) -> HttpResponse:
    """/results/: every visible run, filtered by the facets (the API's
    filters, so a page URL and an API URL say the same), searched, sorted
    and paged. With htmx only the result region is sent; the URL is pushed
    by the links themselves (hx-push-url)."""
    query = browser_query(request)
    filters, text, search, errors = query.filters, query.text, query.search, query.errors
    runs, filtered = query.runs, query.filtered
    sort = request.GET.get("sort", "newest")
    if sort not in selectors.SORTS:
        sort = "newest"
    facets, total = selectors.run_facets(runs, with_parameters="benchmark" in filters)
    by_sort = by_headline(runs) if sort == "headline" else runs.order_by(*selectors.SORTS[sort][1])
    ordered = by_sort.values_list("id", flat=True)
    paginator = Paginator(ordered, PAGE_SIZE)
    paginator.count = total  # counted with the facets: no COUNT(*) over the same join
    page = paginator.get_page(request.GET.get("page"))
    page.object_list = selectors.runs_in_order(list(page.object_list))
    headlines = run_headlines(page.object_list)
    for run in page.object_list:
        run.headline = headlines.get(run.pk)

    state = BrowserState(filters=filters, text=text, sort=sort)
    suggestions = _suggestions(request, state) if not errors and not page.paginator.count else []
    nothing_found = bool(search.terms) and not errors and not page.paginator.count
    context = {
        "search_terms": [
            (term, _without_word(state, search, i)) for i, term in enumerate(search.terms)
        ],
        "search_reasons": search_explained(filtered, search) if nothing_found else [],
        "suggestions": suggestions,
        "state": state,
        "facets": [facet_links(facet, state) for facet in facets if facet.values],
        "chosen": state.chosen(),
        "page": page,
        "errors": errors,
        "sorts": [(key, label) for key, (label, _) in selectors.SORTS.items()],
        "page_links": page_links(page, state),
    }
    status = 400 if errors else 200
    if request.htmx:
        response = render(request, "results/browser_results.html", context, status=status)
        # The canonical URL of what is shown, whatever the form sent (empty fields, defaults).
        return push_url(response, state.url(page=page.number))
    return render(request, "results/browser.html", context, status=status)


def _without_word(state: BrowserState, search: Search, index: int) -> str:
    """The browser's URL with the search's ``index``-th word left out."""
    words = [term.word for i, term in enumerate(search.terms) if i != index]
    return replace(state, text=" ".join(words)).url()


def _suggestions(request: HttpRequest, state: BrowserState) -> list[tuple[str, str, str]]:
    """(filter, known value, URL with it instead) for each free value given
    that might be a misspelling: a query per such filter, only on an empty list."""
    suggestions = []
    for key, values in state.filters.lists():
        if key not in FREE_TEXT_FILTERS:
            continue
        for value in values:
            for known in selectors.nearest_values(user=request.user, name=key, value=value):
                if known.casefold() != value.casefold():
                    suggestions.append((key, known, state.url(set_={key: known})))
    return suggestions


def _filtered_runs(request: HttpRequest, filters: QueryDict) -> tuple[QuerySet, dict[str, str]]:
    """The visible runs under the API's filters; a filter the API would
    refuse is named in ``errors`` and the list is left unfiltered by it."""
    runs = selectors.run_list(user=request.user)
    filterset = RunFilter(data=filters, queryset=runs)
    if not filterset.is_valid():
        errors = {key: " ".join(map(str, messages)) for key, messages in filterset.errors.items()}
        return runs.none(), errors
    try:
        return filterset.qs, {}
    except ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"request": exc.detail}
        errors = {
            key: " ".join(map(str, value)) if isinstance(value, list) else str(value)
            for key, value in detail.items()
        }
        return runs.none(), errors


# --- dimension and benchmark pages ---------------------------------------------

RECENT_RUNS = 25
# The summary tables of a dimension or benchmark page read the measurements
# of its latest runs only: a request never aggregates a whole table (with a
# million measurements, "ext4" alone is hundreds of thousands of rows).
SUMMARY_RUNS = 200


@dataclass(frozen=True)
class Dimension:
    kind: str  # "CPU", "filesystem", "database version"
    title: str
    lookups: dict[str, str]  # on Run
    browser_filters: dict[str, str]  # the same runs in /results/
    series: str  # the comparison axis this dimension is


def _canonical_redirect(name: str, value: str, view: str) -> HttpResponse | None:
    """A spelling a moderator's alias rule maps away has no page of its
    own: the page of the value it was merged into."""
    targets = alias_targets(name, value)
    if len(targets) == 1:
        return redirect(reverse(view, args=[targets[0]]), permanent=True)
    return None


@page_methods("GET")
def cpu_page(request: HttpRequest, model: str) -> HttpResponse:
    _no_null_character(model)
    if (canonical := _canonical_redirect("cpu_model", model, "results:cpu")) is not None:
        return canonical
    return _dimension_page(
        request,
        Dimension(
            "CPU",
            model,
            {"hardware__cpu_model__iexact": model},
            {"cpu_model": model},
            "cpu_model",
        ),
    )


@page_methods("GET")
def filesystem_page(request: HttpRequest, name: str) -> HttpResponse:
    _no_null_character(name)
    filesystem = normalize_filesystem(name)
    canonical = _canonical_redirect("filesystem", filesystem, "results:filesystem")
    if canonical is not None:
        return canonical
    return _dimension_page(
        request,
        Dimension(
            "Filesystem",
            filesystem,
            {"storage__filesystem": filesystem},
            {"filesystem": filesystem},
            "filesystem",
        ),
    )


@page_methods("GET")
def version_page(request: HttpRequest, engine: str, version: str) -> HttpResponse:
    _no_null_character(engine, version)
    engine = engine.lower()
    return _dimension_page(
        request,
        Dimension(
            "Database version",
            f"{engine} {version}",
            {"server__engine": engine, "server__version": version},
            {"engine": engine, "version": version},
            "version",
        ),
    )


def _no_null_character(*names: str) -> None:
    """404 for a name no row can hold (PostgreSQL text cannot hold a NUL),
    before a query with it fails."""
    if any("\x00" in name for name in names):
        raise Http404("no such name")


def _dimension_page(request: HttpRequest, dimension: Dimension) -> HttpResponse:
    runs = selectors.run_list(user=request.user).filter(**dimension.lookups)
    summarized = selectors.latest_run_ids(runs, limit=SUMMARY_RUNS)
    if not summarized:
        raise Http404(f"No result you may see on {dimension.kind} {dimension.title}")
    total = runs.count() if len(summarized) == SUMMARY_RUNS else len(summarized)
    recent = selectors.runs_in_order(summarized[:RECENT_RUNS])
    measurements = selectors.measurements_of_runs(summarized)
    primary = selectors.primary_metrics(measurements)
    groups = selectors.spread_of_runs(summarized, list(primary.values()))
    fixed = {key: value for key, value in dimension.browser_filters.items() if key == "engine"}
    tables = presentation.spread_tables(
        groups,
        primary,
        lambda benchmark, metric, point: presentation.summary_compare_url(
            benchmark, metric, point, dimension.series, fixed
        ),
    )
    browser_url = reverse("results:browser") + "?" + urlencode(dimension.browser_filters)
    return render(
        request,
        "results/dimension.html",
        {
            "dimension": dimension,
            "runs": recent,
            "total": total,
            "tables": tables,
            "summarized": len(summarized),
            "browser_url": browser_url,
        },
    )


@page_methods("GET")
def benchmark_page(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = selectors.benchmark_list().filter(name=name.lower()).first()
    if benchmark is None:
        raise Http404(f"No benchmark {name}")
    metrics = sorted(benchmark.metrics.all(), key=lambda m: m.pk)
    runs = selectors.run_list(user=request.user).filter(benchmark=benchmark)
    summarized = selectors.latest_run_ids(runs, limit=SUMMARY_RUNS)
    latest = summarized[0] if summarized else None
    groups: list = []
    primary = {}
    if latest is not None:
        measurements = selectors.measurements_of_runs(summarized)
        primary = selectors.primary_metrics(measurements)
        groups = selectors.spread_of_runs(summarized, list(primary.values()))
    tables = presentation.spread_tables(
        groups,
        primary,
        lambda benchmark_name, metric, point: presentation.summary_compare_url(
            benchmark_name, metric, point, "version_major", {}
        ),
    )
    like = None
    if latest is not None:
        origin = selectors.run_origin(pk=latest)
        like = reproduction.reproduction(
            request.build_absolute_uri(reverse("api:run-detail", args=[latest])),
            benchmark=benchmark.name,
            version=origin.benchmark_version,
            engine=origin.server.engine,
            source=origin.submission.source,
            tool=origin.submission.tool,
        )
    return render(
        request,
        "results/benchmark.html",
        {
            "benchmark": benchmark,
            "metrics": metrics,
            "table": tables[0] if tables else None,
            "summarized": len(summarized),
            "summary_limit": SUMMARY_RUNS,
            "parameters": selectors.run_parameter_counts(runs)[:12] if latest else [],
            "citations": selectors.curated_citations(user=request.user, benchmark=benchmark),
            "latest": latest,
            # Only a command the agent accepts: none for a benchmark it does not
            # run, no --like for a latest run it did not measure.
            "agent_runs_it": reproduction.agent_benchmark(benchmark.name) is not None,
            "like_command": like.command if like and like.exact else "",
            "browser_url": reverse("results:browser") + "?" + urlencode({"benchmark": name}),
            "server_url": request.build_absolute_uri("/").rstrip("/"),
        },
    )
