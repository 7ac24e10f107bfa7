import datetime as dt

from django.conf import settings
from django.db.models import F
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.throttling import BaseThrottle

from benchhub.accounts.models import ApiToken
from benchhub.accounts.roles import group_names_remember
from benchhub.accounts.services import (
    auth_failure_record,
    auth_failures_exceeded,
    token_digest,
)

# Writing last_used_at on every request would turn each upload into two
# writes; once a minute is precise enough to tell a user what is in use.
_LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


def client_address(request) -> str:
    """The client's address as the throttles see it (NUM_PROXIES aware)."""
    return BaseThrottle().get_ident(request)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <secret>`` (``Bearer`` is accepted too)."""

    keywords = ("token", "bearer")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, secret = header.partition(" ")
        if keyword.lower() not in self.keywords:
            return None
        secret = secret.strip()
        address = client_address(request)
        if auth_failures_exceeded(address=address):
            raise exceptions.Throttled(
                wait=settings.BENCHHUB_AUTH_FAILURE_WINDOW,
                detail="Too many wrong API tokens from your address; wait before trying again.",
            )
        if not secret or " " in secret:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Token <your API token>'."
            )
        # digest is unique: one row per group of the user (one with none),
        # so that the roles an upload asks about (is_trusted) cost no second
        # query. No first(): its ORDER BY id cost more to compile than the
        # lookup took.
        rows = list(
            ApiToken.objects.select_related("user")
            .filter(digest=token_digest(secret), revoked_at__isnull=True)
            .annotate(group_name=F("user__groups__name"))
        )
        token = rows[0] if rows else None
        if token is None or not token.user.is_active:
            auth_failure_record(address=address)
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        group_names_remember(token.user, (row.group_name for row in rows if row.group_name))
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return "Token"


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Tells the OpenAPI schema how ApiTokenAuthentication is used."""

    target_class = "benchhub.accounts.auth.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "'Token <secret>'; create one with manage.py create_api_token USER",
        }
