import io

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.test import APIClient

from benchhub.accounts.auth import ApiTokenAuthentication
from benchhub.accounts.models import ApiToken
from benchhub.accounts.roles import user_roles
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


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("Basic YWxpY2U6cHc=", "the Authorization header's scheme is 'Basic'"),
        ("Digest username=alice", "the Authorization header's scheme is 'Digest'"),
        ("bh_a-token-pasted-without-its-scheme", "the Authorization header has no scheme"),
        ("bh_a-token pasted", "the Authorization header has no scheme"),
    ],
)
@pytest.mark.parametrize("method", ["get", "post", "options"])
def test_an_authorization_header_of_another_scheme_says_what_is_expected(db, header, said, method):
    """It was 'Authentication credentials were not provided.', to a client
    that had sent some, and a GET (which needs no token) was answered as
    anonymous, the credentials ignored without a word; a token pasted alone
    is not repeated in the answer."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)

    response = getattr(client, method)("/api/v1/submissions/", {}, format="json")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    error = response.json()["error"]
    assert error["code"] == "not_authenticated"
    assert said in error["message"]
    assert "send 'Authorization: Token <your API token>'" in error["message"]
    assert "bh_" not in error["message"]


def test_without_an_authorization_header_the_answer_says_none_was_given(db):
    response = APIClient().post("/api/v1/submissions/", {}, format="json")

    assert response.json()["error"]["message"] == "Authentication credentials were not provided."


def test_a_token_revoked_after_use_is_refused_on_the_next_request(alice):
    token, secret = api_token_create(user=alice, name="laptop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert client.get("/api/v1/submissions/").status_code == 200

    ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())

    assert client.get("/api/v1/submissions/").status_code == 401


def test_a_deactivated_users_token_is_refused_on_the_next_request(alice):
    _, secret = api_token_create(user=alice, name="laptop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert client.get("/api/v1/submissions/").status_code == 200

    User.objects.filter(pk=alice.pk).update(is_active=False)

    response = client.get("/api/v1/submissions/")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid or revoked API token."


def test_the_token_brings_its_whole_user_and_the_users_groups(alice):
    """One statement reads the token, its user and the user's groups: every
    field as the ORM would read it."""
    alice.first_name, alice.email, alice.is_staff = "Alice", "alice@example.org", True
    alice.last_login = timezone.now()
    alice.save()
    for name in ("trusted submitters", "moderators"):
        alice.groups.add(Group.objects.get_or_create(name=name)[0])
    token, secret = api_token_create(user=alice, name="laptop")
    request = RequestFactory().get("/", HTTP_AUTHORIZATION=f"Token {secret}")
    stored = ApiToken.objects.get(pk=token.pk)  # before its use is noted

    user, authenticated = ApiTokenAuthentication().authenticate(request)

    def fields(instance) -> dict:
        return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.fields}

    assert fields(user) == fields(User.objects.get(pk=alice.pk))
    assert fields(authenticated) == fields(stored)
    assert authenticated.user is user
    assert user._benchhub_groups == {"trusted submitters", "moderators"}
    assert user_roles(user) == ["submitter", "trusted", "moderator"]
