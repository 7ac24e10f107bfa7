"""Limits that protect without locking people out: per-address limits read
REMOTE_ADDR (or what a configured proxy saw), never a client's own
X-Forwarded-For; failed sign-ins slow down per username *and* address with
growing waits, so nobody can lock an account's owner out from elsewhere;
wrong tokens and failed sign-ins are counted apart."""

from __future__ import annotations

import html

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from benchhub.accounts import services
from benchhub.accounts.services import signin_delay

PASSWORD = "correct horse battery 7"


def sign_in(address: str, password: str, **headers):
    return Client(REMOTE_ADDR=address).post(
        "/accounts/login/", {"username": "ann", "password": password}, headers=headers
    )


@pytest.fixture
def ann(db):
    return User.objects.create_user(username="ann", password=PASSWORD)


class Clock:
    now = 1_900_000_000.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(services.time, "time", clock.time)
    return clock


def test_the_wait_doubles_after_the_free_failures_up_to_its_cap(settings):
    settings.BENCHHUB_SIGNIN_MAX_DELAY = 40
    assert [signin_delay(n) for n in range(10)] == [0, 0, 0, 1, 2, 4, 8, 16, 32, 40]


def test_ten_wrong_passwords_from_one_address_do_not_lock_the_owner_out_elsewhere(ann, clock):
    for attempt in range(10):
        clock.now += 600  # however slowly the attacker goes
        sign_in("203.0.113.66", f"guess {attempt}")

    owner = sign_in("198.51.100.20", PASSWORD)

    assert owner.status_code == 302  # signed in from the owner's own address
    attacker = sign_in("203.0.113.66", PASSWORD)  # even with the password: wait first
    assert attacker.status_code == 429
    assert attacker["Retry-After"] == str(2 ** (10 - 3))


def test_one_address_trying_many_accounts_is_stopped_for_every_account(db, settings, clock):
    settings.BENCHHUB_SIGNIN_ADDRESS_FAILURES = 4
    for name in ("ann", "bob", "cyd", "dee"):
        User.objects.create_user(username=name, password=PASSWORD)
        Client(REMOTE_ADDR="203.0.113.70").post(
            "/accounts/login/", {"username": name, "password": "guess"}
        )
    User.objects.create_user(username="eve", password=PASSWORD)

    fifth = Client(REMOTE_ADDR="203.0.113.70").post(
        "/accounts/login/", {"username": "eve", "password": PASSWORD}
    )

    assert fifth.status_code == 429
    elsewhere = Client(REMOTE_ADDR="198.51.100.3").post(
        "/accounts/login/", {"username": "eve", "password": PASSWORD}
    )
    assert elsewhere.status_code == 302


def test_a_wait_ends_and_the_right_password_then_signs_in(ann, clock):
    for attempt in range(5):  # 3 free, then waits of 1 and 2 s
        clock.now += 3
        sign_in("203.0.113.5", f"guess {attempt}")
    too_soon = sign_in("203.0.113.5", PASSWORD)
    assert too_soon.status_code == 429
    assert too_soon["Retry-After"] == "4"  # the 5th failure: 2 ** (5 - 3)
    assert "try again in 4 seconds" in html.unescape(too_soon.content.decode())

    clock.now += 4
    assert sign_in("203.0.113.5", PASSWORD).status_code == 302


def test_a_spoofed_forwarded_for_changes_nothing(db, settings):
    settings.BENCHHUB_SIGNUPS_ALLOWED = 5
    answers = []
    for i in range(20):
        response = Client(REMOTE_ADDR="192.0.2.44").post(
            "/accounts/signup/",
            {"username": f"bot{i}", "email": f"b{i}@example.org", "password1": PASSWORD,
             "password2": PASSWORD},
            headers={"X-Forwarded-For": f"10.0.{i}.{i + 1}"},
        )  # fmt: skip
        answers.append(response.status_code)

    assert answers == [302] * 5 + [429] * 15
    assert User.objects.count() == 5


def test_nobody_can_lock_out_another_address_by_naming_it(alice, settings):
    from benchhub.accounts.services import api_token_create

    settings.BENCHHUB_AUTH_FAILURES_ALLOWED = 10
    attacker = APIClient(REMOTE_ADDR="203.0.113.9")
    attacker.credentials(HTTP_AUTHORIZATION="Token bh_wrong")
    for _ in range(10):
        attacker.get("/api/v1/submissions/", HTTP_X_FORWARDED_FOR="10.1.2.3")
    _, secret = api_token_create(user=alice, name="laptop")

    victim = APIClient(REMOTE_ADDR="10.1.2.3")
    victim.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert victim.get("/api/v1/submissions/").status_code == 200
    assert attacker.get("/api/v1/submissions/").status_code == 429  # the attacker's own address


def test_behind_a_configured_proxy_the_address_it_saw_counts(db, settings):
    settings.BENCHHUB_SIGNUPS_ALLOWED = 2
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}

    def sign_up(i: int, forwarded: str):
        return Client(REMOTE_ADDR="127.0.0.1").post(
            "/accounts/signup/",
            {"username": f"user{i}", "email": f"u{i}@example.org", "password1": PASSWORD,
             "password2": PASSWORD},
            headers={"X-Forwarded-For": forwarded},
        )  # fmt: skip

    # The proxy appends the address it saw; what the client wrote before it is not believed.
    statuses = [sign_up(i, f"6.6.6.{i}, 198.51.100.7").status_code for i in range(3)]
    assert statuses == [302, 302, 429]
    assert sign_up(9, "198.51.100.8").status_code == 302  # another client of the proxy


def test_wrong_tokens_and_failed_sign_ins_are_counted_apart(ann, settings):
    settings.BENCHHUB_AUTH_FAILURES_ALLOWED = 3
    api = APIClient(REMOTE_ADDR="203.0.113.77")
    api.credentials(HTTP_AUTHORIZATION="Token bh_wrong")
    assert [api.get("/api/v1/submissions/").status_code for _ in range(4)] == [401] * 3 + [429]

    assert sign_in("203.0.113.77", PASSWORD).status_code == 302


def test_behind_two_proxies_the_second_address_from_the_right_counts(alice, settings):
    """Two proxies: the outer one appended the client it saw, the inner one the
    outer's; whatever the client wrote before them is its own word."""
    settings.BENCHHUB_AUTH_FAILURES_ALLOWED = 3
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 2}

    def wrong_token(forwarded: str) -> int:
        api = APIClient(REMOTE_ADDR="10.0.0.4")
        api.credentials(HTTP_AUTHORIZATION="Token bh_not_this_one")
        return api.get("/api/v1/submissions/", HTTP_X_FORWARDED_FOR=forwarded).status_code

    spoofed = [f"6.6.{i}.{3 * i + 1}, 203.0.113.201, 10.0.0.3" for i in range(4)]
    assert [wrong_token(chain) for chain in spoofed] == [401, 401, 401, 429]
    assert wrong_token("203.0.113.201, 198.51.100.57, 10.0.0.3") == 401  # another client


@pytest.mark.slow
def test_the_number_of_trusted_proxies_comes_from_the_environment():
    import os
    import subprocess
    import sys

    read = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.REST_FRAMEWORK['NUM_PROXIES'])"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchhub.settings"}
    answers = {}
    for value in ("3", None):
        if value is None:
            environment.pop("BENCHHUB_TRUSTED_PROXIES", None)
        else:
            environment["BENCHHUB_TRUSTED_PROXIES"] = value
        done = subprocess.run(
            [sys.executable, "-c", read], env=environment, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        answers[value] = done.stdout.strip()
    assert answers == {"3": "3", None: "0"}
