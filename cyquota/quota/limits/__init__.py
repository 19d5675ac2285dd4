"""Limits: the hook into limit sources and the enforcement models.

``source.LimitSource`` is the hook interface: sources read and store raw
data (registered limits, explicit project limits, a project's parent and
children). ``local`` is the embedded store, ``keystone`` reads Keystone
unified limits through oslo.limit. The models judge, through the protocol
of ``model``: ``flat`` holds each project to its own limit,
``strict_two_level`` also holds each tree of a root and its children to
the root's limit (``tree_usage`` keeps the tree's aggregate usage).
``cache`` is the optional shared Redis cache of raw limit data, and
``facade.Limits`` is what the API and commands see.
"""

from stevedore import driver as stevedore_driver

from cyquota.conf import CONF
from cyquota import exception
from cyquota.quota.limits import flat
from cyquota.quota.limits import strict_two_level

MODELS = {model.name: model
          for model in (flat.FlatModel, strict_two_level.StrictTwoLevelModel)}


def load_source():
    """The configured limit source (entry point ``cyquota.limit_sources``)."""
    return stevedore_driver.DriverManager(
        'cyquota.limit_sources', CONF.quota.limit_source,
        invoke_on_load=True).driver


def load_model(source):
    """The enforcement model the source names (``[quota]
    enforcement_model`` for the local source, Keystone's for keystone),
    reading its limits from the source."""
    name = source.model_name()
    if name not in MODELS:
        raise exception.CyquotaException(
            'Limit source %s reports the enforcement model %r; cyquota '
            'enforces %s.' % (source.name, name, ', '.join(sorted(MODELS))))
    return MODELS[name](source)
