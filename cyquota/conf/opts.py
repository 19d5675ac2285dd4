"""Entry points for oslo-config-generator."""

from cyquota.conf import database
from cyquota.conf import quota

_MODULES = (quota,)


def list_opts():
    """All cyquota options, grouped, for the sample config file."""
    result = []
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            result.append((group, opts))
    return result


def set_defaults(conf=None):
    """Defaults that cyquota sets on options owned by libraries."""
    from cyquota import conf as cyquota_conf
    database.register_opts(conf or cyquota_conf.CONF)
