"""The cache on Redis (benchhub/lib/cache.py): what each command costs, and what it
does when Redis refuses."""

from __future__ import annotations

import logging

import redis
from django.conf import settings

from benchhub.lib import cache as cache_module
from benchhub.lib import ratelog
from benchhub.lib.cache import TolerantRedisCache
from benchhub.lib.ratelog import RateLimitedLog
from tests.deploy.servers import private_redis


def test_commands_share_one_redis_client_instead_of_building_one_each(monkeypatch):
    built = []
    build = redis.Redis.__init__

    def counting(self, *args, **kwargs):
        built.append(self)
        build(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counting)
    cache = TolerantRedisCache(settings.REDIS_URL, {"KEY_PREFIX": "test-one-client"})

    cache.set("k", 1)
    for _ in range(5):
        cache.incr("k")
    assert cache.get("k") == 6
    assert cache.count_many([("c", 60)]) == [1]
    cache.delete_many(["k", "c"])

    assert len(built) == 1


def test_a_redis_refusing_writes_is_a_cache_that_drops_them_and_says_why(caplog, monkeypatch):
    monkeypatch.setattr(cache_module, "warnings", RateLimitedLog(cache_module.logger))
    # Full, as real redis-server answers it: "-OOM command not allowed when used memory >
    # 'maxmemory'." to every write; reads still answer.
    with private_redis() as server:
        server.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
        server.command("CONFIG", "SET", "maxmemory", "1")
        cache = TolerantRedisCache(server.url, {"KEY_PREFIX": "test-refused"})

        with caplog.at_level(logging.WARNING, logger="benchhub.lib.cache"):
            answers = (
                cache.set("k", 1),
                cache.add("k", 1),
                cache.count_many([("c", 60)]),
                cache.count_many([("c", 60), ("d", 60)]),
                cache.get("k", "missing"),
            )

    assert answers == (None, True, [1], [1, 1], "missing")
    # One line per operation and kind of refusal within the interval (ratelog): the
    # second count is held back, every operation that failed is named once.
    assert [r.getMessage().partition(":")[0] for r in caplog.records] == [
        "cache set skipped, Redis failed",
        "cache add skipped, Redis failed",
        "cache count skipped, Redis failed",
    ]
    assert all("OutOfMemoryError: " in r.getMessage() for r in caplog.records)


def test_a_redis_away_is_one_warning_an_interval_saying_how_many_it_stands_for(caplog, monkeypatch):
    # Every request met Redis's absence: 3,876 warnings in 10 s buried the rest.
    now = [1000.0]
    monkeypatch.setattr(
        cache_module, "warnings", RateLimitedLog(cache_module.logger, clock=lambda: now[0])
    )
    with private_redis() as server:
        url = server.url
    cache = TolerantRedisCache(url, {"KEY_PREFIX": "test-away"})  # nothing listens there now

    with caplog.at_level(logging.WARNING, logger="benchhub.lib.cache"):
        answers = [cache.get(f"k{i}", "missing") for i in range(37)]
        now[0] += ratelog.INTERVAL_SECONDS - 0.5
        cache.get("late", "missing")  # still within the interval: counted, not said
        now[0] += 0.5
        cache.get("k", "missing")

    assert answers == ["missing"] * 37
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert messages[0].startswith("cache get skipped, Redis failed: ConnectionError")
    assert messages[1].startswith("cache get skipped, Redis failed: ConnectionError")
    assert messages[1].endswith("; 37 more like it since the last such line")


def test_a_thread_sends_its_commands_on_one_connection_without_borrowing_from_the_pool(
    monkeypatch,
):
    borrowed = []
    borrow = redis.ConnectionPool.get_connection

    def counting(self, *args, **kwargs):
        borrowed.append(self)
        return borrow(self, *args, **kwargs)

    monkeypatch.setattr(redis.ConnectionPool, "get_connection", counting)
    cache = TolerantRedisCache(settings.REDIS_URL, {"KEY_PREFIX": "test-own-connection"})
    cache.delete("c")

    cache.set("k", 1)
    for _ in range(5):
        cache.incr("k")
    assert cache.get("k") == 6
    assert cache.get_many(["k"]) == {"k": 6}
    assert cache.count_many([("c", 60)]) == [1]
    cache.delete_many(["k", "c"])

    assert len(borrowed) == 1


def test_a_forked_process_gets_a_connection_of_its_own(monkeypatch):
    cache = TolerantRedisCache(settings.REDIS_URL, {"KEY_PREFIX": "test-fork"})
    parent = cache._cache.get_client()
    assert cache._cache.get_client() is parent

    monkeypatch.setattr("benchhub.lib.cache.os.getpid", lambda: -1)  # as in a child

    assert cache._cache.get_client() is not parent


def test_counters_are_counted_in_one_command(monkeypatch):
    cache = TolerantRedisCache(settings.REDIS_URL, {"KEY_PREFIX": "test-one-command"})
    cache.delete_many(["one", "two"])
    client = cache._cache.get_client(write=True)
    sent = []
    send = client.execute_command

    def counting(*args, **kwargs):
        sent.append(args[0])
        return send(*args, **kwargs)

    monkeypatch.setattr(client, "execute_command", counting)

    assert cache.count_many([("one", 60), ("two", 5)]) == [1, 1]
    assert cache.count_many([("one", 60), ("two", 5)]) == [2, 2]

    assert sent == ["EVAL", "EVAL"]
