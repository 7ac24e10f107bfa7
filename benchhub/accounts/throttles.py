"""Request rates of the API, counted in the shared cache (Redis in
production). Rates come from settings.BENCHHUB_THROTTLE_RATES, read on
every request (DRF's own classes read theirs once, at import); an answer
over the rate is a 429 with Retry-After in the API's error shape.

Counting is a fixed window per key: one round trip to Redis per request
and throttle (SET NX with the expiry, then INCR, in one MULTI), whatever
the rate. (DRF's SimpleRateThrottle keeps every
request's time in one cached list, read and rewritten whole on each
request: its cost grows with the rate, and two processes writing the list
at once lose each other's requests.) A client may burst up to twice the
rate across a window boundary; Retry-After is the time left in the window.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import throttling

from benchhub.accounts.models import ApiToken


class _WindowThrottle(throttling.SimpleRateThrottle):
    scope: str

    def get_rate(self) -> str | None:
        # An empty rate (BENCHHUB_THROTTLE_TOKEN=) means no limit.
        return settings.BENCHHUB_THROTTLE_RATES.get(self.scope) or None

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        now = self.timer()
        start = int(now // self.duration) * self.duration
        window = f"{key}:{start}"
        if hasattr(self.cache, "count"):  # Redis: one round trip (lib/cache.py)
            count = self.cache.count(window, self.duration + 1)
        # add() starts the window's counter (and its expiry); incr() is atomic.
        elif self.cache.add(window, 1, self.duration + 1):
            count = 1
        else:
            try:
                count = self.cache.incr(window)
            except ValueError:  # expired between add() and incr()
                self.cache.add(window, 1, self.duration + 1)
                count = 1
        self._left = start + self.duration - now
        return count <= self.num_requests

    def wait(self) -> float:
        return max(1.0, self._left)


class TokenRateThrottle(_WindowThrottle):
    """Per API token: an agent that loops uploading is stopped by its own
    token's allowance."""

    scope = "token"

    def get_cache_key(self, request, view) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class UserRateThrottle(_WindowThrottle):
    """Per signed-in user, whatever token or session they use."""

    scope = "user"

    def get_cache_key(self, request, view) -> str | None:
        if not request.user or not request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class AnonRateThrottle(_WindowThrottle):
    """Per client address, for requests without credentials."""

    scope = "anon"

    def get_cache_key(self, request, view) -> str | None:
        if request.user and request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
