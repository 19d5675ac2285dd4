"""An optional limit cache in Redis, shared by every cyquota process.

Off by default: accuracy comes first (``doc/source/limits.rst``), and a cache
is only safe when a change is seen at once by every process. So the cache is
one shared Redis, never a per-process copy, and every entry carries the cache's
*generation*. A limit write bumps the generation after it commits; from
then on every older entry is a miss, in every process. A reader that
loaded a value before the write and stores it after the bump stores it
under the old generation, where nobody looks any more. Entries also expire
after ``[quota] limit_cache_ttl`` seconds, which bounds how stale a source
that cannot invalidate (Keystone) may be.

Redis trouble never fails a request: a lookup that cannot reach Redis is a
miss, and the source is read instead.
"""

import json

from oslo_log import log as logging
import redis

from cyquota.conf import CONF

LOG = logging.getLogger(__name__)

# A Redis that does not answer within this many seconds is treated as down.
_SOCKET_TIMEOUT = 0.5

#: Prefix of every key; a source's keys are under PREFIX:<source name>.
PREFIX = 'cyquota:limits'


class LimitCache:
    """Cached raw limit data of one limit source.

    :param client: a ``redis.Redis`` (or compatible) client.
    :param ttl: seconds an entry lives.
    :param namespace: key prefix; one per limit source.
    """

    def __init__(self, client, ttl, namespace):
        self._client = client
        self._ttl = ttl
        self._prefix = namespace + ':'
        self._generation_key = namespace + ':generation'

    def lookup(self, keys):
        """``(token, {key: value})`` for the current entries of ``keys``.

        Pass ``token`` to ``store`` with the values read from the source
        for the misses. The token is None when Redis could not be read.
        """
        try:
            raw = self._client.mget(
                [self._generation_key] + [self._prefix + k for k in keys])
        except redis.RedisError as error:
            LOG.warning('Limit cache unavailable, reading the source: %s',
                        error)
            return None, {}
        generation = int(raw[0] or 0)
        hits = {}
        for key, item in zip(keys, raw[1:]):
            if item is None:
                continue
            entry_generation, value = json.loads(item)
            if entry_generation == generation:
                hits[key] = value
        return generation, hits

    def store(self, token, values):
        """Cache ``values`` ({key: JSON-able value}) read after the
        ``lookup`` that returned ``token``."""
        if token is None or not values:
            return
        try:
            with self._client.pipeline(transaction=False) as pipe:
                for key, value in values.items():
                    pipe.set(self._prefix + key, json.dumps([token, value]),
                             ex=self._ttl)
                pipe.execute()
        except redis.RedisError as error:
            LOG.warning('Limit cache unavailable, not caching: %s', error)

    def invalidate(self):
        """Make every entry a miss for every process (after a write has
        committed)."""
        try:
            self._client.incr(self._generation_key)
        except redis.RedisError as error:
            LOG.error('Limit cache %s could not be invalidated: other '
                      'processes may use old limits for up to %d seconds: '
                      '%s', self._prefix, self._ttl, error)


def from_config(namespace):
    """The cache configured in ``[quota] limit_cache_url``, or None."""
    url = CONF.quota.limit_cache_url
    if not url:
        return None
    client = redis.Redis.from_url(
        url, socket_timeout=_SOCKET_TIMEOUT,
        socket_connect_timeout=_SOCKET_TIMEOUT)
    return LimitCache(client, CONF.quota.limit_cache_ttl,
                      '%s:%s' % (PREFIX, namespace))
