import hashlib
import math
import secrets
import time

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


# --- failed sign-ins and wrong tokens ---------------------------------------------
#
# Wrong API tokens: a counter per client address in the shared cache; after
# BENCHHUB_AUTH_FAILURES_ALLOWED of them within BENCHHUB_AUTH_FAILURE_WINDOW
# seconds, that address's token requests are refused until the window has
# passed, which turns guessing a token into a few attempts per window.
#
# Failed sign-ins are counted apart, per username *and* address: the first
# few are free, then each next attempt waits twice as long as the one before
# (up to BENCHHUB_SIGNIN_MAX_DELAY seconds). Guessing one account's password
# slows to a crawl, while nobody elsewhere can lock its owner out: a username
# is public, and a lockout per username alone would let anyone refuse its
# owner from anywhere. A per-address cap across usernames stops one address
# from trying many accounts.

SIGNIN_FREE_FAILURES = 3


def _token_failure_key(address: str) -> str:
    return f"tokenfail:addr:{address}"


def _count(key: str, *, window: int) -> None:
    """One more in a counter that starts with its first count and expires
    ``window`` seconds later (add() starts the window; incr() never extends it)."""
    if not cache.add(key, 1, timeout=window):
        try:
            cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.add(key, 1, timeout=window)


def token_failure_record(*, address: str) -> None:
    _count(_token_failure_key(address), window=settings.BENCHHUB_AUTH_FAILURE_WINDOW)


def token_failures_exceeded(*, address: str) -> bool:
    count = cache.get(_token_failure_key(address)) or 0
    return count >= settings.BENCHHUB_AUTH_FAILURES_ALLOWED


def _signin_key(*, username: str, address: str) -> str:
    return f"signin:{token_digest(username.lower())}:{address}"


def _signin_address_key(address: str) -> str:
    return f"signinfail:addr:{address}"


def signin_delay(failures: int) -> int:
    """Seconds the next sign-in waits after ``failures`` failed ones in a row."""
    if failures < SIGNIN_FREE_FAILURES:
        return 0
    return min(2 ** (failures - SIGNIN_FREE_FAILURES), settings.BENCHHUB_SIGNIN_MAX_DELAY)


def signin_wait(*, username: str, address: str) -> int:
    """Whole seconds before this username may try to sign in again from this
    address (0: now); the address's cap over all usernames counts too."""
    if (cache.get(_signin_address_key(address)) or 0) >= settings.BENCHHUB_SIGNIN_ADDRESS_FAILURES:
        return settings.BENCHHUB_AUTH_FAILURE_WINDOW
    failures, last = cache.get(_signin_key(username=username, address=address)) or (0, 0.0)
    return max(0, math.ceil(last + signin_delay(failures) - time.time()))


def signin_failure_record(*, username: str, address: str) -> None:
    key = _signin_key(username=username, address=address)
    failures, _ = cache.get(key) or (0, 0.0)
    failures += 1
    # kept while a wait can still apply, then forgotten: a user back after a day starts fresh
    keep = max(settings.BENCHHUB_AUTH_FAILURE_WINDOW, 2 * settings.BENCHHUB_SIGNIN_MAX_DELAY)
    cache.set(key, (failures, time.time()), timeout=keep)
    _count(_signin_address_key(address), window=settings.BENCHHUB_AUTH_FAILURE_WINDOW)


def signin_success_record(*, username: str, address: str) -> None:
    cache.delete(_signin_key(username=username, address=address))


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
