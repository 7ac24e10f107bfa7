"""An API token on the embedded default (SQLite, `make run`) reads as the
ORM reads it: authentication's statement of fixed text (accounts/auth.py)
with the ORM's converters, checked in a process of its own, since the suite
runs on PostgreSQL."""

from __future__ import annotations

import pytest

from tests.baselines.embedded import run_embedded

# A token of a user in a group, used once (last_used_at set), read by the
# authentication's statement and by the ORM: the same values, of the same
# types (SQLite answers times as text and booleans as integers).
SAME_TOKEN = """
import django
django.setup()
from django.core.management import call_command
from django.contrib.auth import get_user_model
from django.utils import timezone
from benchhub.accounts.auth import _token_with_user
from benchhub.accounts.models import ApiToken
from benchhub.accounts.roles import role_grant
from benchhub.accounts.services import api_token_create

call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user(username="embedded", last_login=timezone.now())
role_grant(user=user, role="trusted")
role_grant(user=user, role="moderator")
token, _ = api_token_create(user=user, name="laptop")
ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())

read, groups = _token_with_user(token.digest)
orm = ApiToken.objects.select_related("user").get(pk=token.pk)


def values(instance):
    return {f.attname: (getattr(instance, f.attname), type(getattr(instance, f.attname)))
            for f in instance._meta.concrete_fields}


print(values(read) == values(orm), values(read.user) == values(orm.user),
      read._state.adding, sorted(groups), _token_with_user("no such digest"))
"""


@pytest.mark.slow
def test_an_api_token_reads_on_the_embedded_default_as_the_orm_reads_it(tmp_path):
    done = run_embedded(tmp_path, SAME_TOKEN)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("[", 1)[0].split() == ["True", "True", "False"], done.stdout
    assert "['moderators', 'trusted submitters'] (None, [])" in done.stdout, done.stdout
