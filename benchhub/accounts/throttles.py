"""Request rates of the API, counted in the shared cache (Redis in
production). Rates come from settings.BENCHHUB_THROTTLE_RATES, read on
every request (DRF's own classes read theirs once, at import); an answer
over the rate is a 429 with Retry-After in the API's error shape."""

from django.conf import settings
from rest_framework import throttling

from benchhub.accounts.models import ApiToken


class _RateFromSettings:
    scope: str

    def get_rate(self) -> str | None:
        return settings.BENCHHUB_THROTTLE_RATES.get(self.scope)


class TokenRateThrottle(_RateFromSettings, throttling.SimpleRateThrottle):
    """Per API token: an agent that loops uploading is stopped by its own
    token's allowance."""

    scope = "token"

    def get_cache_key(self, request, view) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class UserRateThrottle(_RateFromSettings, throttling.UserRateThrottle):
    """Per signed-in user, whatever token or session they use."""

    def get_cache_key(self, request, view) -> str | None:
        if not request.user or not request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class AnonRateThrottle(_RateFromSettings, throttling.AnonRateThrottle):
    """Per client address, for requests without credentials."""
