"""The shared limit cache (on fakeredis): generations, TTL, Redis trouble,
and the local source's invalidation on every write, through the cache put
in front of the loaded source."""

import logging

import fakeredis
import pytest

from cyquota.conf import CONF
from cyquota import exception
from cyquota import quota
from cyquota.quota import limits
from cyquota.quota.limits import cache as limit_cache

R = 'FPGA'


@pytest.fixture
def server():
    # With DEBUG on (another test may have left it so), redis 8 describes a
    # failed connection by str(), which a fakeredis connection made on a
    # given server cannot give: the emulated outage would raise
    # AttributeError instead of ConnectionError.
    client_log = logging.getLogger('redis.client')
    level = client_log.level
    client_log.setLevel(logging.INFO)
    yield fakeredis.FakeServer()
    client_log.setLevel(level)


def new_cache(server, ttl=60):
    return limit_cache.LimitCache(fakeredis.FakeRedis(server=server), ttl,
                                  'test:limits')


def test_lookup_store_and_hit(server):
    cache = new_cache(server)
    token, hits = cache.lookup(['a', 'b'])
    assert hits == {}
    cache.store(token, {'a': {'x': 1}})
    assert new_cache(server).lookup(['a', 'b'])[1] == {'a': {'x': 1}}


def test_invalidate_misses_everywhere_and_drops_late_stores(server):
    mine, theirs = new_cache(server), new_cache(server)
    token, _ = mine.lookup(['a'])
    mine.store(token, {'a': 1})
    # Another process read the source before a write and stores after it.
    late_token, _ = theirs.lookup(['b'])
    theirs.invalidate()
    theirs.store(late_token, {'b': 'stale'})
    assert mine.lookup(['a', 'b'])[1] == {}


def test_entries_live_for_the_ttl(server):
    cache = new_cache(server, ttl=7)
    token, _ = cache.lookup(['a'])
    cache.store(token, {'a': 1})
    assert 0 < fakeredis.FakeRedis(server=server).ttl('test:limits:a') <= 7


def test_redis_trouble_is_a_miss_never_an_error(server):
    cache = new_cache(server)
    token, _ = cache.lookup(['a'])
    cache.store(token, {'a': 1})
    server.connected = False
    assert cache.lookup(['a']) == (None, {})
    cache.store(None, {'a': 2})
    cache.invalidate()


def test_off_by_default():
    assert CONF.quota.limit_cache_url is None
    assert limit_cache.from_config('local') is None


@pytest.fixture(params=['flat', 'strict-two-level'])
def sources(request, sqlite_db, server, monkeypatch):
    """The store of this process and of another one, sharing a cache."""
    monkeypatch.setattr(limit_cache.redis.Redis, 'from_url',
                        lambda url, **kwargs: fakeredis.FakeRedis(
                            server=server))
    CONF.set_override('limit_cache_url', 'redis://127.0.0.1:1/0', 'quota')
    CONF.set_override('enforcement_model', request.param, 'quota')
    quota.QUOTAS.reset()
    return quota.QUOTAS.limits, limits.load_source()


def test_a_write_is_seen_at_once_by_a_cache_holder(sources, ctx):
    mine, theirs = sources
    mine.set_registered_limit(ctx, R, 10)
    mine.set_project_limit(ctx, 'A', R, 5)
    assert theirs.get_limits(ctx, 'A', [R]) == ({R: 10}, {R: 5})
    token, hits = theirs._cache.lookup(['project:A'])
    assert hits['project:A']['own'] == {R: 5}
    mine.set_project_limit(ctx, 'A', R, 2)
    assert theirs.get_limits(ctx, 'A', [R]) == ({R: 10}, {R: 2})
    mine.delete_project_limit(ctx, 'A', R)
    assert theirs.get_limits(ctx, 'A', [R]) == ({R: 10}, {})
    mine.set_registered_limit(ctx, R, 3)
    assert theirs.get_limits(ctx, 'A', [R]) == ({R: 3}, {})


def test_cached_limits_are_enforced_after_a_lower_write(sources, ctx):
    mine, _ = sources
    mine.set_project_limit(ctx, 'A', R, 10)
    quota.QUOTAS.reserve(ctx, 'A', {R: 1})   # caches 10
    mine.set_project_limit(ctx, 'A', R, 2)
    with pytest.raises(exception.OverQuota) as caught:
        quota.QUOTAS.reserve(ctx, 'A', {R: 2})
    assert caught.value.overs[0]['limit'] == 2


def test_project_writes_invalidate_the_tree(sources, ctx):
    mine, theirs = sources
    mine.set_project(ctx, 'A')
    mine.set_project_limit(ctx, 'A', R, 4)
    assert theirs.get_tree_limits(ctx, 'B', [R]).parent_id is None
    mine.set_project(ctx, 'B', parent_id='A')
    tree = theirs.get_tree_limits(ctx, 'B', [R])
    assert (tree.parent_id, tree.parent_own) == ('A', {R: 4})


def test_an_unknown_project_is_registered_despite_the_cache(sources, ctx):
    mine, theirs = sources
    theirs.get_tree_limits(ctx, 'P', [R])       # cached as unknown
    mine.source.get_tree_limits(ctx, 'P', [R], register=True)
    assert mine.source.get_project(ctx, 'P')['parent_id'] is None
