"""The HTTP methods a page takes, and a 405 for the others.

``@page_methods("GET")`` (``"GET", "POST"`` for a form, ``"POST"`` for an
action) makes the view a Django class-based view with those handlers: its
``dispatch`` answers HEAD with GET, OPTIONS with the list (``Allow``) and no
body, and any other method with a 405 naming the ones taken, here the site's
own page. That answer comes before the CSRF check, which would blame the
client's token (403) for a wrong method: the view is exempt from
CsrfViewMiddleware, and its handlers check the token themselves. The API's
views are DRF's, which answer their own JSON 405.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.views import View
from django.views.decorators.csrf import csrf_exempt, csrf_protect

ViewFunction = Callable[..., HttpResponse]


class PageView(View):
    def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any):
        allowed = self.options(request, *args, **kwargs)["Allow"]
        context = {"method": request.method or "", "allowed": allowed}
        # The site's own page (header, a way back), like the 403 and 404.
        response = render(request, "405.html", context, status=405)
        response["Allow"] = allowed
        return response


def page_methods(*methods: str) -> Callable[[ViewFunction], ViewFunction]:
    def decorator(view: ViewFunction) -> ViewFunction:
        checked = view if getattr(view, "csrf_exempt", False) else csrf_protect(view)

        def handle(self: PageView, request: HttpRequest, *args: Any, **kwargs: Any):
            return checked(request, *args, **kwargs)

        page = type(view.__name__, (PageView,), dict.fromkeys(map(str.lower, methods), handle))
        # wraps: login_required's login_url, read by page_anybody_may_open
        page_view = wraps(view)(csrf_exempt(page.as_view()))
        page_view.view_class = page
        return page_view

    return decorator


def page_anybody_may_open(path: str) -> bool:
    """Whether ``path`` is a page of the site that a visitor who is not
    signed in may GET: one that takes GET (not an action such as sign-out)
    and is not behind ``login_required`` (Django's decorator leaves
    ``login_url`` on the view, and ``wraps`` carries it through
    ``page_methods`` and ``moderator_required``). What the page shows may
    still be someone's own (a pending run): its view knows that, not its path."""
    try:
        view = resolve(path).func
    except Resolver404:
        return False
    page = getattr(view, "view_class", None)
    return hasattr(page, "get") and issubclass(page, PageView) and not hasattr(view, "login_url")
