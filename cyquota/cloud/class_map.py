"""cyquota resources to the cloud's Placement resource classes and back.

``[placement] class_map`` names the resources whose class has another name
in Placement (``GPU:PGPU``); any other resource has the class of its own
name. The map must be one to one both ways, so that a usage Placement
reports belongs to exactly one resource.
"""

import os_resource_classes as orc

from cyquota import resource_classes


def _placement_class(name):
    return name in orc.STANDARDS or (
        name.startswith(orc.CUSTOM_NAMESPACE)
        and resource_classes.is_valid(name))


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
            if not resource_classes.is_valid(resource):
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
                or not resource_classes.is_valid(placement_class)):
            return None
        return placement_class


def from_conf(conf):
    """The :class:`ClassMap` of ``conf.placement.class_map``."""
    return ClassMap(conf.placement.class_map)
