"""Pages take the methods they say (benchhub.lib.methods, Django's View):
GET and HEAD, POST where there is a form or an action, OPTIONS answered with
the list; any other method is a 405 naming them, before the CSRF check."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from benchhub.lib.methods import PageView

READ = "GET, HEAD, OPTIONS"
FORM = "GET, POST, HEAD, OPTIONS"
ACTION = "POST, OPTIONS"
UUID = "3f1c7a52-8d1e-4b7a-9c0e-2b5d6f8a9e10"
# One address of each page route, and what it takes.
PAGES = {
    "/": READ,
    "/results/": READ,
    "/runs/1/": READ,
    f"/submissions/{UUID}/": READ,
    "/benchmarks/select-update/": READ,
    "/cpus/some-cpu/": READ,
    "/filesystems/ext4/": READ,
    "/servers/postgresql/16/": READ,
    "/compare/": READ,
    "/results/feed.atom": READ,
    "/runs/compare/": READ,
    "/compare/chart.svg": READ,
    "/benchmarks/select-update/leaderboard/": READ,
    "/benchmarks/select-update/history/": READ,
    "/changes/": READ,
    "/studies/": READ,
    f"/studies/{UUID}/": READ,
    "/imports/new/": FORM,
    f"/imports/{UUID}/": READ,
    "/accounts/signup/": FORM,
    "/accounts/login/": FORM,
    "/accounts/logout/": ACTION,
    "/accounts/password/change/": FORM,
    "/accounts/password/change/done/": READ,
    "/accounts/password/reset/": FORM,
    "/accounts/password/reset/sent/": READ,
    "/accounts/password/reset/MQ/set-password/": FORM,
    "/accounts/password/reset/done/": READ,
    "/accounts/tokens/": FORM,
    "/accounts/tokens/1/revoke/": ACTION,
    "/accounts/submissions/": READ,
    f"/accounts/submissions/{UUID}/": ACTION,
    "/moderation/": READ,
    "/moderation/act/": ACTION,
    "/moderation/report/00000000-0000-0000-0000-000000000000/": ACTION,
    "/moderation/audit/": READ,
    "/moderation/dimensions/": FORM,
    "/moderation/aliases/1/remove/": ACTION,
    "/healthz": READ,
    "/healthz/ready": READ,
    "/healthz/live": READ,
    "/csp-report": ACTION,
}


def page_routes(patterns=None, prefix: str = ""):
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(("api/", "^api/", "admin/")):
            continue  # DRF's views and the admin answer their own 405
        if isinstance(entry, URLResolver):
            yield from page_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield route, entry.callback


def test_every_page_route_says_which_methods_it_takes():
    routes = dict(page_routes())

    assert len(routes) == len(PAGES)  # a new page joins PAGES
    unsaid = [
        route
        for route, view in routes.items()
        if not issubclass(getattr(view, "view_class", object), PageView)
    ]
    assert unsaid == []


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "TRACE", "CONNECT", "BREW"])
@pytest.mark.parametrize("path", PAGES)
def test_a_method_a_page_does_not_take_is_a_405_naming_those_it_takes(db, path, method):
    """TRACE got the full page (200); PUT, DELETE and made-up methods the
    CSRF failure page (403), which blamed a token."""
    response = Client(enforce_csrf_checks=True).generic(method, path)

    assert response.status_code == 405
    assert response["Allow"] == PAGES[path]
    assert response["Content-Type"].startswith("text/html")
    assert f"does not take {method} requests; it takes {PAGES[path]}." in response.text
    assert 'href="/compare/"' in response.text  # the site's header: a way on


@pytest.mark.parametrize("path", PAGES)
def test_options_answers_the_methods_a_page_takes_without_the_page(db, path):
    response = Client().options(path)

    assert response.status_code == 200
    assert response["Allow"] == PAGES[path]
    assert response.content == b""


def test_a_get_on_an_action_is_a_405_too(db, alice):
    client = Client()
    client.force_login(alice)

    response = client.get("/accounts/tokens/1/revoke/")

    assert (response.status_code, response["Allow"]) == (405, ACTION)


def test_the_method_is_named_as_text(db):
    response = Client().generic("<B>", "/")

    assert response.status_code == 405
    assert "take &lt;B&gt; requests" in response.text


@pytest.mark.parametrize("path", ["/", "/results/", "/compare/", "/accounts/login/", "/healthz"])
def test_the_pages_still_answer_get_and_head(db, path):
    client = Client()

    assert client.get(path).status_code == 200
    assert client.head(path).status_code == 200


POSTED = [path for path, methods in PAGES.items() if "POST" in methods and path != "/csp-report"]


@pytest.mark.parametrize("path", POSTED)
def test_a_post_without_its_csrf_token_is_still_refused(db, path):
    """The page's view is exempt from CsrfViewMiddleware (the 405 comes
    first): its handlers check the token."""
    response = Client(enforce_csrf_checks=True).post(path, {"username": "a", "password": "b"})

    assert response.status_code == 403
    assert "CSRF" in response.text


def test_a_browser_reports_a_policy_violation_without_a_csrf_token(db):
    response = Client(enforce_csrf_checks=True).post(
        "/csp-report", b'{"csp-report": {"line-number": 7}}', content_type="application/csp-report"
    )

    assert response.status_code == 204
