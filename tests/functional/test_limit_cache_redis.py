"""The shared limit cache on the real Redis: a limit lowered through the
local API is enforced on the very next reservation of another process that
had the old value cached."""

import multiprocessing
import os
import uuid

import pytest
import redis

from cyquota.conf import CONF
from cyquota import context
from cyquota import exception
from cyquota import quota
from cyquota.quota.limits import cache as limit_cache
from tests import fixtures

REDIS_URL = os.environ.get('CYQUOTA_TEST_REDIS_URL',
                           'redis://127.0.0.1:6379/0')
R = 'FPGA'


def _configure(url, prefix):
    CONF.set_override('limit_cache_url', REDIS_URL, 'quota')
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    limit_cache.PREFIX = prefix
    fixtures.use_database(url, migrate=False)


def _other_process(url, prefix, steps, answers):
    """Reserve once (caching the limit), then again when told."""
    CONF([], project='cyquota', default_config_files=[])
    _configure(url, prefix)
    ctx = context.get_admin_context()
    for amount in iter(steps.get, None):
        try:
            quota.QUOTAS.reserve(ctx, 'child', {R: amount})
            answers.put(('reserved', None))
        except exception.OverQuota as error:
            answers.put(('over', error.overs))


@pytest.fixture
def prefix():
    """A key prefix of this test alone on the shared Redis."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.RedisError as error:
        message = 'Redis at %s is not reachable: %s' % (REDIS_URL, error)
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    name = 'cyquota-test-%s:limits' % uuid.uuid4().hex
    saved = limit_cache.PREFIX
    yield name
    limit_cache.PREFIX = saved
    keys = list(client.scan_iter(name + ':*'))
    if keys:
        client.delete(*keys)


def test_lowered_limit_is_enforced_by_a_process_that_cached_it(
        backend, db_url, ctx, prefix):
    _configure(db_url, prefix)
    store = quota.QUOTAS.limits
    store.set_project(ctx, 'root')
    store.set_project_limit(ctx, 'root', R, 100)
    store.set_project(ctx, 'child', parent_id='root')
    store.set_project_limit(ctx, 'child', R, 10)

    spawn = multiprocessing.get_context('spawn')
    steps, answers = spawn.Queue(), spawn.Queue()
    other = spawn.Process(target=_other_process,
                          args=(db_url, prefix, steps, answers))
    other.start()
    try:
        steps.put(1)
        assert answers.get(timeout=120) == ('reserved', None)
        # The other process holds child's limit of 10 in the cache.
        _, hits = limit_cache.from_config('local').lookup(['project:child'])
        assert hits['project:child']['own'] == {R: 10}

        store.set_project_limit(ctx, 'child', R, 2)
        steps.put(3)
        state, overs = answers.get(timeout=60)
        assert state == 'over'
        assert overs == [dict(project_id='child', resource=R,
                              scope='project', limit=2, used=0, reserved=1,
                              requested=3)]
    finally:
        steps.put(None)
        other.join(timeout=60)
    assert other.exitcode == 0
    assert quota.QUOTAS.get_project_usage(ctx, 'child')[R]['reserved'] == 1
