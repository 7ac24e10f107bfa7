from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from benchhub.lib.api import error_body
from benchhub.lib.methods import page_methods
from benchhub.releases.data import changes_as_data
from benchhub.releases.selectors import InvalidChanges, changes_build
from benchhub.results.feeds import feed_url_for


@page_methods("GET")
def changes_page(request: HttpRequest) -> HttpResponse:
    """/changes/?engine=postgresql&from=16&to=17: what changed between two releases,
    from machines that ran both; the form alone without a query; ?format=json."""
    query = {key: request.GET.get(key, "").strip() for key in ("engine", "from", "to")}
    wanted = request.GET.get("format", "html")
    context: dict = {"query": query}
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
    low, high = sorted((changes.before, changes.after), key=_version_key)
    feed = feed_url_for(
        [("engine", changes.engine), ("version_min", low), ("version_max", f"{high}.99999.99999")]
    )
    return render(
        request, "releases/changes.html", {**context, "changes": changes, "feed_url": feed}
    )


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
