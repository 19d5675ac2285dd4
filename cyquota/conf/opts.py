"""Entry points for oslo-config-generator."""

from cyquota.conf import api
from cyquota.conf import budgets
from cyquota.conf import conductor
from cyquota.conf import cyborg
from cyquota.conf import database
from cyquota.conf import enforcement
from cyquota.conf import leases
from cyquota.conf import metrics
from cyquota.conf import middleware
from cyquota.conf import placement
from cyquota.conf import quota

_MODULES = (quota, conductor, api, placement, enforcement, leases,
            budgets, metrics, cyborg)


def list_opts():
    """All cyquota options, grouped, for the sample config file."""
    result = []
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            result.append((group, opts))
    return result


def set_defaults():
    """Defaults that cyquota sets on options owned by libraries."""
    from cyquota.conf import CONF
    database.register_opts(CONF)
    middleware.set_defaults(CONF)
