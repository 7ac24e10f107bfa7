from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from benchhub.leaderboards.data import leaderboard_as_data
from benchhub.leaderboards.selectors import InvalidLeaderboard, leaderboard_build
from benchhub.lib.api import error_body
from benchhub.lib.methods import page_methods
from benchhub.results.feeds import feed_url_for


@page_methods("GET")
def leaderboard_page(request: HttpRequest, name: str) -> HttpResponse:
    """/benchmarks/<name>/leaderboard/: best environment first; ?format=json as the API."""
    wanted = request.GET.get("format", "html")
    if wanted not in ("html", "json"):
        message = f"format {wanted!r}: html or json"
        return render(
            request, "leaderboards/leaderboard.html", {"errors": {"format": message}}, status=400
        )
    try:
        board = leaderboard_build(user=request.user, benchmark_name=name, params=request.GET)
    except InvalidLeaderboard as exc:
        if wanted == "json":
            details = [
                {"path": f"$.{key}", "message": message} for key, message in exc.errors.items()
            ]
            status = 404 if "benchmark" in exc.errors else 400
            return JsonResponse(error_body("invalid", str(exc), details), status=status)
        status = 404 if "benchmark" in exc.errors else 400
        context = {"errors": exc.errors, "name": name}
        return render(request, "leaderboards/leaderboard.html", context, status=status)
    if wanted == "json":
        return JsonResponse(leaderboard_as_data(board))
    feed = feed_url_for(
        [("benchmark", board.benchmark.name)]
        + [(key, value) for key, values in board.filters.items() for value in values]
    )
    return render(request, "leaderboards/leaderboard.html", {"board": board, "feed_url": feed})
