"""Request rates of the API, counted in the shared cache (Redis in
production). Rates come from settings.BENCHHUB_THROTTLE_RATES, read on
every request (DRF's own classes read theirs once, at import); an answer
over the rate is a 429 with Retry-After in the API's error shape.

Counting is a fixed window per key: one round trip to Redis per request
for all its throttles together (per window SET NX with the expiry, then
INCR, in one MULTI), whatever the rate. (DRF's SimpleRateThrottle keeps every
request's time in one cached list, read and rewritten whole on each
request: its cost grows with the rate, and two processes writing the list
at once lose each other's requests.) A client may burst up to twice the
rate across a window boundary; Retry-After is the time left in the window.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import throttling

from benchhub.accounts.models import ApiToken

# Where the first throttle of a request leaves the counts of the others.
_COUNTED = "_benchhub_window_counts"


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
        self._left = start + self.duration - now
        if hasattr(self.cache, "count_many"):  # Redis (lib/cache.py)
            return self._counted(request, view, window, now) <= self.num_requests
        # add() starts the window's counter (and its expiry); incr() is atomic.
        if self.cache.add(window, 1, self.duration + 1):
            count = 1
        else:
            try:
                count = self.cache.incr(window)
            except ValueError:  # expired between add() and incr()
                self.cache.add(window, 1, self.duration + 1)
                count = 1
        return count <= self.num_requests

    def _counted(self, request, view, window: str, now: float) -> int:
        """This window's new count. The first throttle of a request counts
        the windows of all the view's throttles in one round trip to Redis
        and leaves the others' counts on the request: DRF asks every
        throttle in turn (each counts, even after one refused), and a round
        trip each cost an upload more CPU than the counting."""
        counted = getattr(request, _COUNTED, None)
        if counted is None or window not in counted:
            windows = {window: self.duration + 1}
            for throttle in view.get_throttles() if view is not None else ():
                if isinstance(throttle, _WindowThrottle) and throttle.rate is not None:
                    key = throttle.get_cache_key(request, view)
                    if key is not None:
                        start = int(now // throttle.duration) * throttle.duration
                        windows.setdefault(f"{key}:{start}", throttle.duration + 1)
            counts = self.cache.count_many(list(windows.items()))
            counted = dict(zip(windows, counts, strict=True))
            setattr(request, _COUNTED, counted)
        return counted.pop(window)

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
