"""Which resource class names a device inventory or request may use.

The standard Placement classes (os-resource-classes), cyquota's built-in
accelerator classes (FPGA, GPU) and custom ones, ``CUSTOM_[A-Z0-9_]+``.
Unlike Placement, a custom class needs no separate creation call.
"""

from cyquota.placement import device_errors
from cyquota import resource_classes


def check(name):
    """Return ``name`` if it is a known resource class.

    :raises ResourceClassNotFound: (400) otherwise.
    """
    if resource_classes.is_valid(name):
        return name
    raise device_errors.ResourceClassNotFound(name=name)
