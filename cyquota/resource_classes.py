"""Accelerator resource class names, shared by the quota ledger, device
selection, the options' check and the cloud's Placement.

A name is valid when it is one of cyquota's built-in accelerator classes
(FPGA, GPU), a standard Placement class (os-resource-classes) or a custom
one, ``CUSTOM_[A-Z0-9_]+``.

``[placement] class_map`` names the resources whose class has another name
in the cloud's Placement (``GPU:PGPU``); any other resource has the class of
its own name. The map must be one to one both ways, so that a usage
Placement reports belongs to exactly one resource (:class:`ClassMap`).
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


def _placement_class(name):
    return name in orc.STANDARDS or (
        name.startswith(orc.CUSTOM_NAMESPACE) and is_valid(name))


class ClassMap:
    """The resource <-> resource class correspondence of one ``class_map``
    value (``{resource: placement_class}``).

    :raises ValueError: with a one-line reason when an entry is not a
        cyquota resource, not a Placement class, or a class is named
        twice.
    """

    def __init__(self, mapping):
        self._to_placement = {}
        self._to_cyquota = {}
        for resource, rc in sorted(mapping.items()):
            if not is_valid(resource):
                raise ValueError('%r is not a cyquota resource name'
                                 % resource)
            if not _placement_class(rc):
                raise ValueError(
                    '%r (for %s) is not a Placement resource class (a '
                    'standard class or CUSTOM_[A-Z0-9_]+)' % (rc, resource))
            if rc in self._to_cyquota:
                raise ValueError('%s is the class of both %s and %s' % (
                    rc, self._to_cyquota[rc], resource))
            self._to_placement[resource] = rc
            self._to_cyquota[rc] = resource

    def to_placement(self, resource):
        """The Placement resource class that counts ``resource``."""
        return self._to_placement.get(resource, resource)

    def to_cyquota(self, placement_class):
        """The cyquota resource counted by ``placement_class``; None when
        the class is not a cyquota resource's: a mapped resource's own
        name, or not a resource name at all."""
        if placement_class in self._to_cyquota:
            return self._to_cyquota[placement_class]
        if (placement_class in self._to_placement
                or not is_valid(placement_class)):
            return None
        return placement_class


def class_map(conf):
    """The :class:`ClassMap` of ``conf.placement.class_map``."""
    return ClassMap(conf.placement.class_map)
