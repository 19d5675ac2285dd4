"""The binds of the one statements: a reserve's per-resource binds, the
``i``-th resource's suffixed ``_i``, and a batch end's uuids
(``_uuid_<i>``)."""

import sqlalchemy as sa
from sqlalchemy.sql import visitors

#: The binds of a reserve that differ by resource; the ``i``-th resource's
#: are suffixed ``_i``.
PER_RESOURCE = ('_resource', '_delta', '_limit', '_uuid')


def bind_name(name, index):
    """The name of the per-resource bind ``name`` of resource ``index``."""
    return '%s_%d' % (name, index)


def per_resource(statement, index):
    """``statement`` with its per-resource binds renamed for ``index``."""
    def rename(element):
        if (isinstance(element, sa.BindParameter)
                and element.key in PER_RESOURCE):
            return sa.bindparam(bind_name(element.key, index),
                                type_=element.type)
        return None
    return visitors.replacement_traverse(statement, {}, rename)
