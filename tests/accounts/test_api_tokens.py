import io

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from benchhub.accounts.models import ApiToken
from benchhub.accounts.services import api_token_create, token_digest


def test_only_a_digest_of_the_token_is_stored(alice):
    token, secret = api_token_create(user=alice, name="laptop")

    assert secret.startswith("bh_")
    assert token.digest == token_digest(secret)
    assert secret not in {token.digest, token.prefix}
    assert token.prefix == secret[:10]


def test_the_command_prints_a_working_token(anonymous_api, alice):
    out = io.StringIO()
    call_command("create_api_token", "alice", "--name", "ci", stdout=out)
    secret = out.getvalue().strip()

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    response = client.get("/api/v1/submissions/")

    assert response.status_code == 200
    assert ApiToken.objects.get(name="ci").last_used_at is not None


def test_the_command_refuses_an_unknown_user_unless_asked_to_create_it(db):
    with pytest.raises(CommandError, match="--create-user"):
        call_command("create_api_token", "nobody", stdout=io.StringIO())

    call_command("create_api_token", "nobody", "--create-user", stdout=io.StringIO())
    assert ApiToken.objects.filter(user__username="nobody").count() == 1


def test_a_revoked_token_is_refused(alice):
    token, secret = api_token_create(user=alice, name="old")
    token.revoked_at = timezone.now()
    token.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")

    response = client.get("/api/v1/submissions/")

    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid or revoked API token."


def test_a_malformed_header_says_what_is_expected(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token two words")

    response = client.get("/api/v1/submissions/")

    assert response.status_code == 401
    assert "expected 'Token <your API token>'" in response.json()["error"]["message"]
