"""Accelerator resource class names, shared by the quota ledger and device
selection.

A name is valid when it is one of cyquota's built-in accelerator classes
(FPGA, GPU), a standard Placement class (os-resource-classes) or a custom
one, ``CUSTOM_[A-Z0-9_]+``.
"""

import re

import os_resource_classes as orc

#: The classes cyquota always counts.
BUILTIN = ('FPGA', 'GPU')

# os_resource_classes.is_custom() only checks the prefix.
_CUSTOM = re.compile(r'CUSTOM_[A-Z0-9_]+')


def is_valid(name):
    """Whether ``name`` is a built-in, standard or custom class name."""
    return isinstance(name, str) and (
        name in BUILTIN or name in orc.STANDARDS
        or _CUSTOM.fullmatch(name) is not None)
