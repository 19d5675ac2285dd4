"""Limits: the hook into limit sources and the enforcement models.

``source.LimitSource`` is the hook interface: sources read and store raw
data (registered limits, explicit project limits, a project's parent and
children). ``local`` is the embedded store, ``keystone`` reads Keystone
unified limits through oslo.limit. The models judge, through the protocol
of ``model``: ``flat`` holds each project to its own limit,
``strict_two_level`` also holds each tree of a root and its children to
the root's limit (``tree_usage`` keeps the tree's aggregate usage).
``cache`` is the optional shared Redis cache of raw limit data, put in
front of the loaded source by ``cached_source``, and ``facade.Limits`` is
what the API and commands see.
"""

import typing

from stevedore import driver as stevedore_driver

from cyquota.conf import CONF
from cyquota import exception
from cyquota.quota.limits import flat
from cyquota.quota.limits import model as model_protocol
from cyquota.quota.limits import source as limit_source
from cyquota.quota.limits import strict_two_level

#: The models by name, each made with the source it reads.
MODELS: dict[str, typing.Callable[[limit_source.LimitSource],
                                  model_protocol.EnforcementModel]] = {
    model.name: model
    for model in (flat.FlatModel, strict_two_level.StrictTwoLevelModel)}


def load_source() -> limit_source.LimitSource:
    """The configured limit source (entry point ``cyquota.limit_sources``),
    read through the shared limit cache when ``[quota] limit_cache_url``
    sets one."""
    manager: stevedore_driver.DriverManager[limit_source.LimitSource] = (
        stevedore_driver.DriverManager(
            'cyquota.limit_sources', CONF.quota.limit_source,
            invoke_on_load=True))
    # Invoked on load: the driver is the source made, not its class.
    source = typing.cast(limit_source.LimitSource, manager.driver)
    if not CONF.quota.limit_cache_url:
        return source
    # Imported with a cache only: they import the Redis client, a tenth
    # of a second of every command's start-up.
    from cyquota.quota.limits import cache as limit_cache
    from cyquota.quota.limits import cached_source
    return cached_source.CachedLimitSource(
        source, limit_cache.from_config(source.name))


def load_model(
        source: limit_source.LimitSource) -> model_protocol.EnforcementModel:
    """The enforcement model the source names (``[quota]
    enforcement_model`` for the local source, Keystone's for keystone),
    reading its limits from the source."""
    name = source.model_name()
    if name not in MODELS:
        raise exception.CyquotaException(
            'Limit source %s reports the enforcement model %r; cyquota '
            'enforces %s.' % (source.name, name, ', '.join(sorted(MODELS))))
    return MODELS[name](source)
