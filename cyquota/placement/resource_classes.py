"""Which resource class names a device inventory or request may use.

The standard Placement classes (os-resource-classes), cyquota's built-in
accelerator classes (FPGA, GPU) and custom ones, ``CUSTOM_[A-Z0-9_]+``.
Unlike Placement, a custom class needs no separate creation call.
"""

import re

import os_resource_classes as orc

from cyquota import exception
from cyquota.quota import resources

_CUSTOM = re.compile(r'CUSTOM_[A-Z0-9_]+')


def check(name):
    """Return ``name`` if it is a known resource class.

    :raises ResourceClassNotFound: (400) otherwise.
    """
    if isinstance(name, str) and (name in resources.BUILTIN
                                  or name in orc.STANDARDS
                                  or _CUSTOM.fullmatch(name)):
        return name
    raise exception.ResourceClassNotFound(name=name)
