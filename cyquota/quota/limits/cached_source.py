"""The shared limit cache in front of a limit source.

``load_source`` puts a ``CachedLimitSource`` in front of the configured
source when ``[quota] limit_cache_url`` is set, so every source is cached
the same way and none knows of the cache. An entry holds what the source
read for every known resource, so one entry serves any request:

``registered``
    ``{resource: default_limit}``.
``project:<id>``
    ``{own}`` (the project's own limits), and once the project's tree has
    been read also ``{known, parent_id, grandparent_id, parent_own}``.

A write through the source invalidates every entry, in every process, once
it has committed (``cache.LimitCache``); reads the source does not name
here (its children, its project names) are not cached.
"""

import dataclasses
import typing

from cyquota.quota.limits import cache as limit_cache
from cyquota.quota.limits import source as limit_source
from cyquota.quota import resources as quota_resources

REGISTERED = 'registered'

# The keys a tree entry holds beyond ``own``.
_TREE_KEYS = ('known', 'parent_id', 'grandparent_id', 'parent_own')


def project_key(project_id: str) -> str:
    """The cache key of ``project_id``'s entry."""
    return 'project:' + project_id


def _pick(limits: dict[str, int],
          resources: typing.Iterable[str]) -> dict[str, int]:
    return {r: limits[r] for r in resources if r in limits}


class CachedLimitSource(limit_source.LimitSource):
    """``source`` read through ``cache``.

    :param source: the ``LimitSource`` that reads the backend.
    :param cache: the ``cache.LimitCache`` of that source.
    """

    def __init__(self, source: limit_source.LimitSource,
                 cache: limit_cache.LimitCache):
        self.source = source
        self._cache = cache
        self.name = source.name
        self.writable = source.writable

    def __getattr__(self, name: str) -> typing.Any:
        # The source's reads beyond the hook interface (the embedded
        # store's get_project, say), uncached. ``source`` itself is only
        # missing before __init__ (a copy): no lookup through it then.
        if name == 'source':
            raise AttributeError(name)
        return getattr(self.source, name)

    @staticmethod
    def _every_resource() -> list[str]:
        return list(quota_resources.known_resources())

    # -- reads that go to the source ------------------------------------------

    def model_name(self) -> str:
        return self.source.model_name()

    @property
    def unregistered_limit(self) -> int:
        return self.source.unregistered_limit

    def sql_limits(self):
        return self.source.sql_limits()

    def sql_parent(self):
        return self.source.sql_parent()

    def project_names(self, context, project_id):
        return self.source.project_names(context, project_id)

    def get_children(self, context, project_id):
        return self.source.get_children(context, project_id)

    def list_project_limits(self, context, project_id=None):
        return self.source.list_project_limits(context, project_id)

    # -- cached reads ---------------------------------------------------------

    def get_registered_limits(self, context, resources):
        token, hits = self._cache.lookup([REGISTERED])
        if REGISTERED not in hits:
            hits[REGISTERED] = self.source.get_registered_limits(
                context, self._every_resource())
            self._cache.store(token, hits)
        return _pick(hits[REGISTERED], resources)

    def get_project_limits(self, context, project_id, resources):
        key = project_key(project_id)
        token, hits = self._cache.lookup([key])
        if key not in hits:
            hits[key] = {'own': self.source.get_project_limits(
                context, project_id, self._every_resource())}
            self._cache.store(token, hits)
        return _pick(hits[key]['own'], resources)

    def get_limits(self, context, project_id, resources):
        key = project_key(project_id)
        token, hits = self._cache.lookup([REGISTERED, key])
        if REGISTERED not in hits or key not in hits:
            registered, own = self.source.get_limits(
                context, project_id, self._every_resource())
            loaded = {REGISTERED: registered, key: {'own': own}}
            # A tree entry already cached stays: it holds these too.
            self._cache.store(token, {k: v for k, v in loaded.items()
                                      if k not in hits})
            hits = loaded
        return (_pick(hits[REGISTERED], resources),
                _pick(hits[key]['own'], resources))

    def get_parent(self, context, project_id):
        return self.get_tree_limits(context, project_id, ()).parent_id

    def get_tree_limits(self, context, project_id, resources,
                        register=False):
        key = project_key(project_id)
        token, hits = self._cache.lookup([REGISTERED, key])
        entry = hits.get(key, {})
        if (REGISTERED in hits and 'known' in entry
                and (entry['known'] or not register)):
            return limit_source.TreeLimits(
                project_id, entry['parent_id'], entry['grandparent_id'],
                _pick(hits[REGISTERED], resources),
                _pick(entry['own'], resources),
                _pick(entry['parent_own'], resources), known=entry['known'])
        tree = self.source.get_tree_limits(
            context, project_id, self._every_resource(), register=register)
        # A project registered just now commits only with the caller's
        # transaction: cached, it would be known before it is.
        if tree.known or not register:
            entry = {name: getattr(tree, name) for name in _TREE_KEYS}
            entry['own'] = tree.own
            self._cache.store(token, {REGISTERED: tree.registered,
                                      key: entry})
        return dataclasses.replace(
            tree, registered=_pick(tree.registered, resources),
            own=_pick(tree.own, resources),
            parent_own=_pick(tree.parent_own, resources))

    # -- writes, then every entry is a miss -----------------------------------

    def set_registered_limit(self, context, resource, default_limit):
        self.source.set_registered_limit(context, resource, default_limit)
        self._cache.invalidate()

    def set_project_limit(self, context, project_id, resource,
                          resource_limit, rules=None):
        self.source.set_project_limit(context, project_id, resource,
                                      resource_limit, rules=rules)
        self._cache.invalidate()

    def delete_project_limit(self, context, project_id, resource,
                             rules=None):
        self.source.delete_project_limit(context, project_id, resource,
                                         rules=rules)
        self._cache.invalidate()

    def set_project(self, context, project_id, parent_id=None, name=None,
                    rules=None):
        project = self.source.set_project(context, project_id,
                                          parent_id=parent_id, name=name,
                                          rules=rules)
        self._cache.invalidate()
        return project
