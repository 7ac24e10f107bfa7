"""The cache on Redis, tolerant of Redis being away or refusing.

The cache holds counters (sign-in failures, request rates) and copies of what PostgreSQL
has (alias rules), never data of its own. When Redis does not answer, or answers with an
error (OOM at maxmemory, READONLY on a replica, any other), a read finds nothing and a
write is dropped, with a warning naming Redis's answer, instead of failing the request:
uploads and reads go on while Redis restarts or is full (tests/deploy/test_faults.py);
rate limits and sign-in counters start again from zero.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import RedisError

from benchhub.lib.ratelog import RateLimitedLog

logger = logging.getLogger(__name__)
# One line per kind of failure every ten seconds, not one per request.
warnings = RateLimitedLog(logger)


class _OneClientPerThread(RedisCacheClient):
    """Django's client builds a new redis.Redis for every command, and each
    one copies its table of some 200 reply callbacks: more CPU than the
    command's round trip. Here each thread keeps one redis.Redis per pool,
    holding a connection of its own (``single_connection_client``): a
    command no longer borrows one from the pool and gives it back, which
    polled the socket and ran the pool's bookkeeping and metric hooks on
    every command, 55-60 us of the 115-140 us of CPU a GET took
    (benchmarks/ingest.py). A forked child
    builds its own: a connection is never shared across a fork."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._local = threading.local()

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.pid, local.clients = os.getpid(), {}
        client = local.clients.get(index)
        if client is None:
            client = self._client(
                connection_pool=self._get_connection_pool(write), single_connection_client=True
            )
            local.clients[index] = client
        return client


# count_many's counters, each started with its expiry at its first count and
# then incremented, atomically as MULTI/EXEC did, in one command.
_COUNT_SCRIPT = """
local counts = {}
for i, key in ipairs(KEYS) do
    redis.call('SET', key, 0, 'EX', ARGV[i], 'NX')
    counts[i] = redis.call('INCR', key)
end
return counts
"""


class ThreadClientRedisCache(RedisCache):
    """Django's Redis cache with one client per thread (``_OneClientPerThread``),
    failing as Django's does: for callers that must know a write failed (the
    versions of kept comparison answers, benchhub/comparisons/kept.py)."""

    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = _OneClientPerThread


class TolerantRedisCache(ThreadClientRedisCache):
    def count_many(self, counters: list[tuple[str, int]], version=None) -> list[int]:
        """One more in each counter (key, timeout), which starts at its first
        count and expires ``timeout`` seconds later (later counts never extend
        it): the new counts, all in one round trip (add() then incr() took
        three each, incr() asking EXISTS first). Redis away or refusing: 1s,
        as add() would say."""
        keys = [(self.make_and_validate_key(key, version=version), t) for key, t in counters]
        if not keys:
            return []

        def count_on_redis() -> list[int]:
            # One EVAL: a MULTI/EXEC pipeline of the same commands cost the
            # client twice the CPU (its pipeline packs and parses each).
            client = self._cache.get_client(keys[0][0], write=True)
            return client.eval(
                _COUNT_SCRIPT, len(keys), *(k for k, _ in keys), *(t for _, t in keys)
            )

        return self._or([1] * len(keys), "count", count_on_redis)

    def _or(self, fallback: Any, operation: str, call, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except RedisError as exc:
            # ConnectionError/TimeoutError when Redis is away; a ResponseError such as
            # OutOfMemoryError or ReadOnlyError when it answers but refuses the command.
            # One line per operation and error every interval: an operator reads which
            # operations failed and how, not thousands of the same line.
            warnings.warning(
                (operation, type(exc).__name__),
                "cache %s skipped, Redis failed: %s: %s",
                operation,
                type(exc).__name__,
                exc,
            )
            return fallback

    def get(self, key, default=None, version=None):
        return self._or(default, "get", super().get, key, default, version)

    def get_many(self, keys, version=None):
        return self._or({}, "get_many", super().get_many, keys, version)

    def has_key(self, key, version=None):
        return self._or(False, "has_key", super().has_key, key, version)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        # True: callers that count with add() then incr() count nothing more.
        return self._or(True, "add", super().add, key, value, timeout, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._or(None, "set", super().set, key, value, timeout, version)

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        return self._or(list(data), "set_many", super().set_many, data, timeout, version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._or(False, "touch", super().touch, key, timeout, version)

    def incr(self, key, delta=1, version=None):
        return self._or(delta, "incr", super().incr, key, delta, version)

    def delete(self, key, version=None):
        return self._or(False, "delete", super().delete, key, version)

    def delete_many(self, keys, version=None):
        return self._or(None, "delete_many", super().delete_many, keys, version)

    def clear(self):
        return self._or(False, "clear", super().clear)
