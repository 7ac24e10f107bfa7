"""More personas for the community features:

- ``trent``, a trusted submitter, whose uploads are approved on arrival;
- ``maud``, a moderator;
- ``root``, an admin (superuser).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from benchhub.accounts.roles import role_grant
from benchhub.results.models import Submission
from benchhub.results.services import submission_create
from tests.conftest import _client_for
from tests.factories import small_document


@pytest.fixture
def trent(db) -> User:
    user = User.objects.create_user(username="trent")
    role_grant(user=user, role="trusted")
    return user


@pytest.fixture
def maud(db) -> User:
    user = User.objects.create_user(username="maud")
    role_grant(user=user, role="moderator")
    return user


@pytest.fixture
def root(db) -> User:
    return User.objects.create_superuser(username="root", password="x" * 12)


@pytest.fixture
def maud_api(maud) -> APIClient:
    return _client_for(maud)


@pytest.fixture
def trent_api(trent) -> APIClient:
    return _client_for(trent)


def web(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def upload(user: User, value_at_20: float = 1500.0, status=None, **environment) -> Submission:
    """One small select-update run as ``user`` uploads it (pending, or
    approved on arrival for a trusted submitter) unless ``status`` says."""
    document = small_document(**environment)
    document["runs"][0]["measurements"][1]["value"] = value_at_20
    kwargs = {"status": status} if status else {}
    return submission_create(submitter=user, document=document, **kwargs).submission
