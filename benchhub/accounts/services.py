import hashlib
import secrets

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.utils import timezone

from benchhub.accounts.models import ApiToken

TOKEN_PREFIX = "bh_"  # noqa: S105 -- a label, not a secret


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def api_token_create(*, user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """Create a token for ``user``; returns the row and the secret, which is
    shown once and never stored."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=secret[:10], digest=token_digest(secret)
    )
    return token, secret


def api_token_revoke(*, user: AbstractBaseUser, token_id: int) -> ApiToken | None:
    """Revoke one of ``user``'s tokens; authentication refuses it from the
    next request on. None when the user has no such live token."""
    token = ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).first()
    if token is not None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


# --- failed sign-ins and wrong tokens --------------------------------------------
#
# A counter per client address and per username in the shared cache: after
# BENCHHUB_AUTH_FAILURES_ALLOWED failures within BENCHHUB_AUTH_FAILURE_WINDOW
# seconds, further attempts are refused until the window has passed, which
# turns guessing a password or a token into a few attempts per window.


def _failure_keys(*, address: str, username: str = "") -> list[str]:
    keys = [f"authfail:addr:{address}"]
    if username:
        keys.append(f"authfail:user:{token_digest(username.lower())}")
    return keys


def _count(key: str, *, window: int) -> None:
    """One more in a counter that starts with its first count and expires
    ``window`` seconds later (add() starts the window; incr() never extends it)."""
    if not cache.add(key, 1, timeout=window):
        try:
            cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.add(key, 1, timeout=window)


def auth_failure_record(*, address: str, username: str = "") -> None:
    for key in _failure_keys(address=address, username=username):
        _count(key, window=settings.BENCHHUB_AUTH_FAILURE_WINDOW)


def auth_failures_exceeded(*, address: str, username: str = "") -> bool:
    counts = cache.get_many(_failure_keys(address=address, username=username))
    return any(count >= settings.BENCHHUB_AUTH_FAILURES_ALLOWED for count in counts.values())


# --- sign-ups ------------------------------------------------------------------------
#
# Accounts created from one client address, counted the same way: a script
# creating accounts by the thousand is stopped after a few per window.


def _signup_key(address: str) -> str:
    return f"signup:addr:{address}"


def signup_record(*, address: str) -> None:
    _count(_signup_key(address), window=settings.BENCHHUB_SIGNUP_WINDOW)


def signups_exceeded(*, address: str) -> bool:
    return (cache.get(_signup_key(address)) or 0) >= settings.BENCHHUB_SIGNUPS_ALLOWED
