"""The HTTP methods a page takes, and a 405 for the others.

Each page view says which methods it takes (``@page_methods("GET")``, or
``"GET", "POST"`` for a form, ``"POST"`` for an action); HEAD goes with GET,
and OPTIONS is answered with the list (``Allow``) and no body. Any other
method is a 405 page naming the ones taken, also in ``Allow``.

Before, a page answered whatever it was sent: TRACE and OPTIONS got the full
page (200), and PUT, DELETE or a made-up method got the CSRF failure page
(403), which told a client its token was wrong when the method was.
``PageMethodsMiddleware`` runs before ``CsrfViewMiddleware`` for that: a
method a page does not take is refused before any token is looked at. The
API's views are DRF's, which answer their own JSON 405.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve

View = Callable[..., HttpResponse]


def page_methods(*methods: str) -> Callable[[View], View]:
    allowed = _with_implied(methods)

    def decorator(view: View) -> View:
        @wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return method_refusal(request, allowed) or view(request, *args, **kwargs)

        checked.allowed_page_methods = allowed  # read by PageMethodsMiddleware
        return checked

    return decorator


def _with_implied(methods: tuple[str, ...]) -> tuple[str, ...]:
    allowed = [method.upper() for method in methods]
    if "GET" in allowed and "HEAD" not in allowed:
        allowed.insert(allowed.index("GET") + 1, "HEAD")
    return (*allowed, "OPTIONS")


def method_refusal(request: HttpRequest, allowed: tuple[str, ...]) -> HttpResponse | None:
    """None when the page takes the request's method; else the answer."""
    if request.method in allowed and request.method != "OPTIONS":
        return None
    if request.method == "OPTIONS":
        response = HttpResponse(status=200)
    else:
        # The site's own page (header, a way back), like the 403 and 404.
        response = render(
            request,
            "405.html",
            {"method": request.method or "", "allowed": ", ".join(allowed)},
            status=405,
        )
    response["Allow"] = ", ".join(allowed)
    return response


class PageMethodsMiddleware:
    """Refuses a method before CsrfViewMiddleware asks for a token: it must
    come before it in MIDDLEWARE."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: View, args: Any, kwargs: Any
    ) -> HttpResponse | None:
        allowed = getattr(view, "allowed_page_methods", None)
        if allowed is None:  # DRF's views, the admin
            return None
        return method_refusal(request, allowed)


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
    return "GET" in getattr(view, "allowed_page_methods", ()) and not hasattr(view, "login_url")
