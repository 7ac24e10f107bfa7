from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A per-user secret for the REST API.

    Only a SHA-256 digest of the token is stored: a leaked database does not
    leak working tokens. ``prefix`` (the first characters) lets a user tell
    their tokens apart.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
