"""HTML pages of the results app."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from benchhub.baselines.selectors import baseline_list
from benchhub.baselines.statistics import percentile_rank
from benchhub.results import presentation, selectors


def home(request: HttpRequest) -> HttpResponse:
    submissions = selectors.latest_submissions(user=request.user, limit=10)
    template = "results/submission_rows.html" if request.htmx else "results/home.html"
    return render(
        request,
        template,
        {
            "submissions": submissions,
            "server_url": request.build_absolute_uri("/").rstrip("/"),
        },
    )


def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get(user=request.user, pk=pk)
    if run is None:
        raise Http404(f"No run {pk} that you may see")
    measurements = sorted(run.measurements.all(), key=lambda m: (m.metric_id, m.pk))
    baselines = {(b.metric.name, b.point): b for b in baseline_list(fingerprint=run.fingerprint)}
    rows = presentation.measurement_rows(measurements, baselines, percentile_rank)
    chart = presentation.sweep_chart(run, measurements)
    first = chart["metrics"][0] if chart["metrics"] else None
    api_url = request.build_absolute_uri(reverse("api:run-detail", args=[run.pk]))
    return render(
        request,
        "results/run.html",
        {
            "run": run,
            "submission": run.submission,
            "environment": presentation.environment_rows(run),
            "settings": sorted((run.server.settings or {}).items()),
            "rows": rows,
            "headline": _headline(rows),
            "chart": chart,
            "compare_url": (
                presentation.compare_url(run, first["metric"], first["x"]) if first else ""
            ),
            "api_url": api_url,
            "csv_url": reverse("api:measurement-csv") + f"?run={run.pk}",
            "reproduce": f"benchhub-agent run --like {api_url}",
            "parameters": presentation.parameters_text(run.parameters),
        },
    )


def _headline(rows: list[presentation.MeasurementRow]) -> presentation.MeasurementRow | None:
    """The measurement the page puts first: the peak of the run's first
    metric where more is better (throughput at its best client count),
    else of its first metric, among those ranked against other results."""
    # One result is not a distribution: rank only against others.
    ranked = [row for row in rows if row.standing is not None and row.standing.n > 1]
    if not ranked:
        return None
    higher = [row for row in ranked if row.measurement.metric.direction == "higher"]
    pool = higher or ranked
    metric = pool[0].measurement.metric_id
    same = [row for row in pool if row.measurement.metric_id == metric]
    if pool[0].measurement.metric.direction == "lower":
        return min(same, key=lambda row: row.measurement.value)
    return max(same, key=lambda row: row.measurement.value)


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
            # Moderation history: the community helper's selector
            # benchhub.moderation.selectors.submission_history(...) goes here
            # once it has landed (shown to the submitter and moderators).
            "history": None,
        },
    )
