"""The accelerator resource classes that quotas count.

FPGA and GPU are always counted; operators add others with ``[quota]
resources``: standard Placement resource class names (os-resource-classes)
or custom ones, ``CUSTOM_[A-Z0-9_]+``.
"""

from cyquota.conf import CONF
from cyquota import exception
from cyquota import resource_classes

BUILTIN = resource_classes.BUILTIN


def _check_name(name):
    if resource_classes.is_valid(name):
        return name
    raise exception.Invalid(
        reason="[quota] resources: '%s' is neither a standard resource "
               "class nor CUSTOM_[A-Z0-9_]+" % name)


def known_resources():
    """Every counted resource class, built-in first, in a stable order."""
    extra = [_check_name(name) for name in CONF.quota.resources
             if name not in BUILTIN]
    return BUILTIN + tuple(sorted(set(extra)))


def check_resource(name):
    """Return ``name`` if it is counted, else raise UnknownResource."""
    known = known_resources()
    if not isinstance(name, str) or name not in known:
        raise exception.UnknownResource(resource=name,
                                        known=', '.join(known))
    return name
