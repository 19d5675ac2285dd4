"""cyquota's benchmarks (SPEC section 6): run them with ``python -m
benchmarks``; README.rst describes the interface of a benchmark module."""

from cyquota.conf import CONF
from tests import fixtures

_configured = False


def use_database(url, migrate=False):
    """Point cyquota in this process at ``url`` (and migrate it), parsing
    cyquota's configuration, without config files, on first use."""
    global _configured
    if not _configured:
        CONF([], project='cyquota', default_config_files=[])
        _configured = True
    fixtures.use_database(url, migrate=migrate)
