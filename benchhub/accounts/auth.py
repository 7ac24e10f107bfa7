import datetime as dt
import functools
import re
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.throttling import BaseThrottle

from benchhub.accounts.models import ApiToken
from benchhub.accounts.roles import group_names_remember
from benchhub.accounts.services import (
    token_digest,
    token_failure_record,
    token_failures_exceeded,
)
from benchhub.lib.prepared import prepared_cursor

# Writing last_used_at on every request would turn each upload into two
# writes; once a minute is precise enough to tell a user what is in use.
_LAST_USED_RESOLUTION = dt.timedelta(minutes=1)

User = get_user_model()


def client_address(request) -> str:
    """The client's address as the throttles see it: REMOTE_ADDR, or behind
    BENCHHUB_TRUSTED_PROXIES proxies the address the nearest of them saw
    (DRF's NUM_PROXIES). A client's own X-Forwarded-For is never believed."""
    return BaseThrottle().get_ident(request)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <secret>`` (``Bearer`` is accepted too)."""

    keywords = ("token", "bearer")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header.strip():
            return None
        keyword, _, secret = header.partition(" ")
        if keyword.lower() not in self.keywords:
            # Passed over, a GET with Basic credentials was answered as
            # anonymous (only a POST, refused, said why): a client that
            # sent credentials is told on every method that they count for
            # nothing, and which ones do.
            raise exceptions.NotAuthenticated(_foreign_scheme_message(header))
        secret = secret.strip()
        address = client_address(request)
        if token_failures_exceeded(address=address):
            raise exceptions.Throttled(
                wait=settings.BENCHHUB_AUTH_FAILURE_WINDOW,
                detail="Too many wrong API tokens from your address; wait before trying again.",
            )
        if not secret or " " in secret:
            raise exceptions.AuthenticationFailed(
                "Malformed Authorization header: expected 'Token <your API token>'."
            )
        token, group_names = _token_with_user(token_digest(secret))
        if token is None or not token.user.is_active:
            token_failure_record(address=address)
            raise exceptions.AuthenticationFailed("Invalid or revoked API token.")
        group_names_remember(token.user, group_names)
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > _LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return "Token"


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,19}")


def _foreign_scheme_message(header: str) -> str:
    """Why an Authorization header of another scheme (Basic, Digest), or a
    token pasted without one, authenticates nobody. A word that may be the
    token itself is not repeated."""
    first, _, rest = header.strip().partition(" ")
    if rest and _SCHEME.fullmatch(first) and not first.lower().startswith("bh_"):
        why = f"the Authorization header's scheme is {first!r}"
    else:
        why = "the Authorization header has no scheme"
    return f"Not signed in: {why}; send 'Authorization: Token <your API token>' (or Bearer)"


def _token_with_user(digest: str) -> tuple[ApiToken | None, list[str]]:
    """The unrevoked token of this digest with its user, and the user's
    group names, read on every request: a revoked token or a deactivated
    user is refused from the next request on, in every process.

    digest is unique: one row per group of the user (one with none), so that
    the roles an upload asks about (is_trusted) cost no second query. Raw SQL
    of fixed text: the ORM compiled the same select_related join for every
    request, which cost more than PostgreSQL's answer (docs/performance.md,
    Ingest), and on SQLite, the embedded default, about a twentieth of an
    upload's CPU in its one process. Each column read goes through the
    converters the ORM applies (SQLite returns times as text)."""
    with prepared_cursor() as cursor:
        cursor.execute(_token_statement(), [digest])
        rows = cursor.fetchall()
    if not rows:
        return None, []
    token_fields, user_fields = _token_fields()
    first = _converted(rows[0])
    token = ApiToken.from_db(connection.alias, token_fields, first[: len(token_fields)])
    token.user = User.from_db(connection.alias, user_fields, first[len(token_fields) :])
    return token, [row[-1] for row in rows if row[-1]]


def _converted(row: tuple) -> list:
    """The token's and user's columns of a row as the ORM reads them."""
    values = list(row[:-1])
    for index, converters in _token_converters():
        expression, functions = converters
        for function in functions:
            values[index] = function(values[index], expression, connection)
    return values


@functools.cache
def _token_converters() -> list[tuple[int, tuple[Any, list[Any]]]]:
    """(column index, (its Col, the ORM's converters)) of the columns that
    have any: none on PostgreSQL, the times and booleans on SQLite."""
    columns = [
        field.get_col(model._meta.db_table)
        for model in (ApiToken, User)
        for field in model._meta.concrete_fields
    ]
    found = []
    for index, column in enumerate(columns):
        functions = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if functions:
            found.append((index, (column, functions)))
    return found


@functools.cache
def _token_fields() -> tuple[list[str], list[str]]:
    return (
        [field.attname for field in ApiToken._meta.concrete_fields],
        [field.attname for field in User._meta.concrete_fields],
    )


_LOOKUP_BY_DIGEST = """
SELECT {token_columns}, {user_columns}, g.name
FROM {token} t
JOIN {user} u ON u.id = t.user_id
LEFT JOIN {membership} ug ON ug.user_id = u.id
LEFT JOIN {group} g ON g.id = ug.group_id
WHERE t.digest = %s AND t.revoked_at IS NULL
"""


@functools.cache
def _token_statement() -> str:
    quote = connection.ops.quote_name
    groups = User._meta.get_field("groups")

    def columns(model: type, alias: str) -> str:
        return ", ".join(f"{alias}.{quote(f.column)}" for f in model._meta.concrete_fields)

    return _LOOKUP_BY_DIGEST.format(
        token_columns=columns(ApiToken, "t"),
        user_columns=columns(User, "u"),
        token=quote(ApiToken._meta.db_table),
        user=quote(User._meta.db_table),
        membership=quote(groups.remote_field.through._meta.db_table),
        group=quote(groups.related_model._meta.db_table),
    )


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
