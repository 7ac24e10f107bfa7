"""The cache on Redis (benchhub/lib/cache.py): what each command costs."""

from __future__ import annotations

import redis
from django.conf import settings

from benchhub.lib.cache import TolerantRedisCache


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
    assert cache.count("c", 60) == 1
    cache.delete_many(["k", "c"])

    assert len(built) == 1
