"""Request rates counted on the real Redis (REDIS_URL): 429 with
Retry-After in the API's error shape once a token, a user or an address
is over its rate."""

from __future__ import annotations

import pytest
import redis
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from benchhub.accounts import throttles
from tests.conftest import _client_for
from tests.factories import small_document


class Clock:
    """The throttles' clock, fixed 30 s into a minute so that no test
    straddles a window by chance."""

    now = 1_800_000_030.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(throttles._WindowThrottle, "timer", lambda self: clock())
    return clock


def test_the_cache_is_redis(db):
    # the suite runs with REDIS_URL set: these counters are shared by processes
    assert isinstance(caches["default"], RedisCache)


def test_uploads_beyond_the_token_rate_are_429_with_retry_after(alice, settings):
    settings.BENCHHUB_THROTTLE_RATES = {
        "token": "5/minute",
        "user": "100/minute",
        "anon": "100/minute",
    }
    api = _client_for(alice)

    answers = [api.post("/api/v1/submissions/", small_document(), format="json") for _ in range(7)]

    assert [a.status_code for a in answers] == [201] * 5 + [429] * 2
    refused = answers[-1]
    assert refused.json()["error"]["code"] == "throttled"
    assert refused["Retry-After"] == "30"  # the rest of the minute
    # nothing of a refused upload is stored
    assert alice.submissions.count() == 5


def test_a_second_token_of_the_same_user_shares_the_user_rate(alice, settings):
    settings.BENCHHUB_THROTTLE_RATES = {
        "token": "3/minute",
        "user": "5/minute",
        "anon": "100/minute",
    }
    first, second = _client_for(alice), _client_for(alice)

    by_first = [first.get("/api/v1/submissions/").status_code for _ in range(4)]
    by_second = [second.get("/api/v1/submissions/").status_code for _ in range(2)]

    assert by_first == [200, 200, 200, 429]  # the token's own rate
    # the user's rate: every request the token let through or not counts
    assert by_second == [200, 429]


def test_anonymous_readers_are_counted_per_address(anonymous_api, db, settings):
    settings.BENCHHUB_THROTTLE_RATES = {
        "token": "100/minute",
        "user": "100/minute",
        "anon": "3/minute",
    }

    answers = [anonymous_api.get("/api/v1/runs/").status_code for _ in range(4)]

    assert answers == [200, 200, 200, 429]


def test_the_next_window_allows_again(alice, settings, clock):
    settings.BENCHHUB_THROTTLE_RATES = {"token": "2/minute", "user": "9/minute", "anon": "9/minute"}
    api = _client_for(alice)

    now = [api.get("/api/v1/submissions/").status_code for _ in range(3)]
    clock.now += 30
    later = [api.get("/api/v1/submissions/").status_code for _ in range(3)]

    assert (now, later) == ([200, 200, 429], [200, 200, 429])


def test_the_throttles_of_a_request_cost_one_redis_round_trip(alice, settings, monkeypatch, clock):
    settings.BENCHHUB_THROTTLE_RATES = {"token": "9/minute", "user": "9/minute", "anon": "9/minute"}
    api = _client_for(alice)
    assert api.get("/api/v1/benchmarks/").status_code == 200  # the window's counters exist
    sent = []
    send = redis.connection.AbstractConnection.send_packed_command
    monkeypatch.setattr(
        redis.connection.AbstractConnection,
        "send_packed_command",
        lambda self, command, check_health=True: (
            sent.append(command) or send(self, command, check_health)
        ),
    )

    assert api.get("/api/v1/benchmarks/").status_code == 200

    # the token's failed attempts (one MGET), then the token's and the user's
    # counts together
    assert len(sent) == 2
    start = int(clock.now // 60) * 60
    token = alice.api_tokens.get()
    cache = caches["default"]
    assert cache.get(f"throttle_token_{token.pk}:{start}") == 2
    assert cache.get(f"throttle_user_{alice.pk}:{start}") == 2


def test_a_counter_expires_its_timeout_after_its_first_count(db):
    cache = caches["default"]
    cache.delete("counted")

    assert [cache.count_many([("counted", 60)]) for _ in range(3)] == [[1], [2], [3]]
    client = cache._cache.get_client()
    key = cache.make_key("counted")
    client.expire(key, 5)  # as if 55 s had passed: later counts do not extend it
    assert cache.count_many([("counted", 60)]) == [4]
    assert 0 < client.ttl(key) <= 5
    assert cache.get("counted") == 4


def test_counters_counted_together_count_each_and_expire_each(db):
    cache = caches["default"]
    cache.delete_many(["one", "two"])
    assert cache.count_many([("one", 60)]) == [1]

    assert cache.count_many([("one", 60), ("two", 5)]) == [2, 1]
    client = cache._cache.get_client()
    assert 55 < client.ttl(cache.make_key("one")) <= 60
    assert 0 < client.ttl(cache.make_key("two")) <= 5
    assert cache.count_many([]) == []
