from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from benchhub.accounts.models import ApiToken


def api_token_list(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's live tokens, newest first."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at")
