"""HTML pages of the results app."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from benchhub.results import selectors


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
