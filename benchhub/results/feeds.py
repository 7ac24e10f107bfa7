"""Atom feeds: "new results matching this", for any results URL.

``/results/feed.atom?<the browser's filters and search>`` lists the newest
visible runs the same URL shows in the results browser (a submitter's
uploads are ``?submitter=<name>``), so a reader follows a query in a feed
reader instead of coming back to look. A filter the API refuses is a 400
naming it, as on the page.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from django.contrib.syndication.views import Feed
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from benchhub.lib.methods import page_methods
from benchhub.results import selectors
from benchhub.results.filters import RUN_FIELDS
from benchhub.results.headlines import run_headlines
from benchhub.results.models import Run
from benchhub.results.views import browser_query

FEED_ENTRIES = 50
# Run filters besides RUN_FIELDS that the results browser takes (filters.ParameterFilterSet).
RUN_EXTRA_FILTERS = ("mount_option", "version_min", "version_max", "noise")


def feed_url_for(filters: Iterable[tuple[str, str]]) -> str:
    """The results feed of the runs these filters name: what a comparison, a
    leaderboard or a changes page follows. Filters on a measurement's point
    (param.*) and a page's own parameters say nothing about which runs are new
    and are left out; every other filter is a run filter the feed applies."""
    pairs = [
        (key, value)
        for key, value in filters
        if key in RUN_FIELDS or key.startswith("run_param.") or key in RUN_EXTRA_FILTERS
    ]
    query = urlencode(pairs)
    return reverse("results:feed") + (f"?{query}" if query else "")


class ResultsFeed(Feed):
    feed_type = Atom1Feed

    def get_object(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        self.request = request
        return browser_query(request)

    def title(self, query: Any) -> str:
        described = [f"{key} = {value}" for key, value in query.filters.items()]
        if query.text:
            described.append(f"“{query.text}”")
        return "BenchHub results" + (f": {', '.join(described)}" if described else "")

    def link(self, query: Any) -> str:
        return reverse("results:browser") + (
            f"?{self.request.GET.urlencode()}" if self.request.GET else ""
        )

    def feed_url(self, query: Any) -> str:
        return self.request.get_full_path()

    def subtitle(self, query: Any) -> str:
        return "New benchmark runs published on BenchHub that match this query."

    def items(self, query: Any) -> list[Run]:
        ids = list(
            query.runs.order_by("-submission__created_at", "-id").values_list("id", flat=True)[
                :FEED_ENTRIES
            ]
        )
        runs = selectors.runs_in_order(ids)
        headlines = run_headlines(runs)
        for run in runs:
            run.headline = headlines.get(run.pk)
        return runs

    def item_title(self, run: Run) -> str:
        headline = f": {run.headline.shown} {run.headline.unit}" if run.headline else ""
        filesystem = run.storage.filesystem or "unknown fs"
        return f"{run.benchmark.name} on {run.server}, {filesystem}{headline}"

    def item_description(self, run: Run) -> str:
        parts = [f"CPU {run.hardware}", f"storage {run.storage}", f"OS {run.os}"]
        parts.append(f"client {run.client}")
        if run.headline:
            where = f" at {run.headline.where}" if run.headline.where else ""
            parts.insert(
                0,
                f"{run.headline.metric} {run.headline.shown} {run.headline.unit}{where} "
                f"(n {run.headline.n})",
            )
        return "; ".join(parts)

    def item_link(self, run: Run) -> str:
        return reverse("results:run", args=[run.pk])

    def item_pubdate(self, run: Run) -> Any:
        return run.submission.created_at

    def item_updateddate(self, run: Run) -> Any:
        return run.submission.created_at

    def item_author_name(self, run: Run) -> str:
        submitter = run.submission.submitter
        return submitter.get_username() if submitter else "BenchHub"


_results_feed = ResultsFeed()


@page_methods("GET")
def results_feed(request: HttpRequest) -> HttpResponse:
    errors = browser_query(request).errors
    if errors:
        text = "\n".join(f"{key}: {message}" for key, message in errors.items())
        return HttpResponse(text + "\n", status=400, content_type="text/plain; charset=utf-8")
    return _results_feed(request)
