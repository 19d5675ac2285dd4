"""Limits: the hook into limit sources and the enforcement models.

``source.LimitSource`` is the hook interface; ``local`` is the embedded
store. ``flat`` turns a source's raw limits into the limit each project is
held to.
"""

from stevedore import driver as stevedore_driver

from cyquota.conf import CONF
from cyquota.quota.limits import flat


def load_source():
    """The configured limit source (entry point ``cyquota.limit_sources``)."""
    return stevedore_driver.DriverManager(
        'cyquota.limit_sources', CONF.quota.limit_source,
        invoke_on_load=True).driver


def load_model(source):
    """The enforcement model for ``source`` (``[quota] enforcement_model``)."""
    return flat.FlatModel(source)
