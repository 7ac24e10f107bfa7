"""Accounts in BenchHub's own pages: sign up, API tokens. Sign in, sign out
and the password pages are Django's views with BenchHub's templates
(accounts/urls.py)."""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from benchhub.accounts import selectors, services
from benchhub.accounts.auth import client_address
from benchhub.accounts.forms import ApiTokenForm, SignUpForm
from benchhub.lib.methods import page_anybody_may_open, page_methods

User = get_user_model()


@page_methods("GET", "POST")
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("accounts:tokens")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and services.signups_exceeded(address=client_address(request)):
        form.add_error(
            None,
            "Too many accounts were created from your address recently; "
            "try again in an hour, or sign in to the account you have.",
        )
        return render(request, "accounts/signup.html", {"form": form}, status=429)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                user = form.save()
        except IntegrityError:
            # The name was free when the form checked it and taken before the
            # insert: two sign-ups at once (a double click). Was a 500.
            form.add_error("username", User._meta.get_field("username").error_messages["unique"])
            return render(request, "accounts/signup.html", {"form": form})
        services.signup_record(address=client_address(request))
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(
            request, f"Welcome, {user.username}. Create an API token to upload with the agent."
        )
        return redirect("accounts:tokens")
    return render(request, "accounts/signup.html", {"form": form})


class SignInView(auth_views.LoginView):
    """Django's sign-in; a refused attempt (too many failures) is a 429 with
    Retry-After, the page saying when to try again."""

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if getattr(form, "wait", 0):
            response.status_code = 429
            response["Retry-After"] = str(form.wait)
        return response


class SignOutView(auth_views.LogoutView):
    """Django's sign-out, saying so on the page it leads to, where only the
    header's links had changed: the page it was clicked on (``next``, which
    the header gives only on a page anybody may see), or the home page.
    Django refuses a ``next`` on another site (url_has_allowed_host_and_scheme);
    a page only a signed-in user may open would send the visitor on to the
    sign-in form, and the sign-out itself has nothing to show: home too."""

    def get_redirect_url(self) -> str:
        url = super().get_redirect_url()
        return url if url and page_anybody_may_open(urlsplit(url).path) else ""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.success(request, "You are signed out.")
        return response


# The forms this session already created a token with (their "once" field),
# so that sending one again (a reload of the answer) creates no second token.
# Only these random values are kept, never a secret; the latest few suffice.
SENT_FORMS = "api_token_forms_sent"
SENT_FORMS_KEPT = 20


@page_methods("GET", "POST")
@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    """List the user's tokens; POST creates one, whose secret is shown on
    this answer only."""
    form = ApiTokenForm(request.POST or None)
    created = secret = None
    if request.method == "POST" and form.is_valid():
        once = request.POST.get("once", "")[:64]
        sent = request.session.get(SENT_FORMS, [])
        if once and once in sent:
            messages.info(
                request,
                "That form was sent before: its token was already created and its secret "
                "shown then, once. If you did not copy it, revoke it and create another.",
            )
            return redirect("accounts:tokens")
        created, secret = services.api_token_create(
            user=request.user, name=form.cleaned_data["name"]
        )
        if once:
            request.session[SENT_FORMS] = [*sent, once][-SENT_FORMS_KEPT:]
        form = ApiTokenForm()
    response = render(
        request,
        "accounts/tokens.html",
        {
            "form": form,
            "tokens": selectors.api_token_list(user=request.user),
            "created": created,
            "secret": secret,
            "server_url": request.build_absolute_uri("/").rstrip("/"),
            "once": secrets.token_urlsafe(16),
        },
    )
    # The secret must not linger in a shared cache or the back button.
    response["Cache-Control"] = "no-store"
    return response


@page_methods("POST")
@login_required
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = services.api_token_revoke(user=request.user, token_id=pk)
    if token is None:
        messages.error(request, "No such token of yours; nothing revoked.")
    else:
        messages.success(request, f"Token {token.name!r} ({token.prefix}…) revoked.")
    return redirect("accounts:tokens")
