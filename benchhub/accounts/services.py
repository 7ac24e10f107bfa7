import hashlib
import secrets

from django.contrib.auth.models import AbstractBaseUser

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
