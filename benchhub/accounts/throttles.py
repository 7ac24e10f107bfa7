"""Request rates of the API, counted in the shared cache (Redis in
production). Rates come from REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]; an
answer over the rate is a 429 with Retry-After in the API's error shape."""

from rest_framework import throttling

from benchhub.accounts.models import ApiToken


class TokenRateThrottle(throttling.SimpleRateThrottle):
    """Per API token: an agent that loops uploading is stopped by its own
    token's allowance."""

    scope = "token"

    def get_cache_key(self, request, view) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class UserRateThrottle(throttling.UserRateThrottle):
    """Per signed-in user, whatever token or session they use."""

    def get_cache_key(self, request, view) -> str | None:
        if not request.user or not request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class AnonRateThrottle(throttling.AnonRateThrottle):
    """Per client address, for requests without credentials."""
