"""The parameters of the ledger's statements, named by the statements.

A bind of the ledger is ``_`` and the name of the field it holds
(``_project_id``); in a statement of several resources (or reservations)
a field that differs by resource is suffixed with the resource's index
(``_delta_0``: ``per_resource``). The fields are typed: a
``typing.NamedTuple`` of ``statements`` for what a statement shares
(``statements.Reserve``), one for what differs by resource
(``statements.Resource``).

``Binds`` reads the names a statement takes from the statement itself,
once, as the statement is built, and finds each one's field, raising
where there is none (the meter's binds, ``_now_s`` and ``_period_s``,
are derived from the shared ``now``: ``cyquota.db.meter.binds``); each
call then builds the dict of exactly those names from the fields'
values. A bind renamed in one place fails where
its statement is built, on every backend, not at run time on one
(tests/unit/test_ledger_binds.py holds every statement to it).
"""

import operator
import re

import sqlalchemy as sa
from sqlalchemy.sql import visitors

from cyquota.db import meter
from cyquota.quota.ledger import statements as sql

# A bind of a field of one resource: ``_<field>_<index>``.
_OF_ONE = re.compile(r'_(\w+)_(\d+)$')
# The meter's binds (``meter.binds``), read from the shared fields' now.
_METER = {'_now_s': lambda shared: meter.seconds(shared.now),
          '_period_s': lambda shared: meter.period_seconds(shared.now)}


def bind_name(field, index=None):
    """The bind of ``field``, of the resource ``index`` if one is given."""
    if index is None:
        return '_' + field
    return '_%s_%d' % (field, index)


def per_resource(statement, index):
    """``statement`` with its binds of the fields of a resource
    (``statements.Resource``) renamed for the resource ``index``."""
    renamed = {bind_name(field): bind_name(field, index)
               for field in sql.Resource._fields}

    def rename(element, **_kw):
        if (isinstance(element, sa.BindParameter)
                and element.key in renamed):
            return sa.bindparam(renamed[element.key], type_=element.type)
        return None
    return visitors.replacement_traverse(statement, {}, rename)


def names_of(*statements, dialect=None):
    """The names of the binds that ``statements`` (SQLAlchemy constructs,
    compiled for ``dialect``) take from their caller: all but their
    literals'."""
    return frozenset(
        name for statement in statements
        for name, bind in statement.compile(dialect=dialect).binds.items()
        if not bind.unique)


class Binds:
    """The dict of the binds ``names`` of a statement, built from typed
    fields; raises ``ValueError`` if a bind has no field.

    :param names: the binds the statement takes (``names_of``).
    :param shared: the NamedTuple type of what every resource shares:
        the binds named after its fields.
    :param each: the NamedTuple type of what differs by resource: the
        binds named after its fields and an index (``_delta_0``), or
        without one for a statement run once for each resource.
    """

    def __init__(self, names, shared, each=None):
        #: The names of the binds of each dict built.
        self.names = frozenset(names)
        # (bind, which value: the shared one (0) or a resource's (1 +
        # its index), what reads it there), for each bind.
        self._plan = tuple((name, *_field(name, shared, each))
                           for name in sorted(self.names))

    def __call__(self, shared, *each):
        """The binds' dict: of the fields of ``shared`` and of ``each``
        resource's (one, or one a resource in index order)."""
        values = (shared, *each)
        return {name: read(values[which])
                for name, which, read in self._plan}


def _field(name, shared, each):
    """Where bind ``name`` is found: (0, what reads it from ``shared``),
    or (1 + the index of its resource, what reads it from ``each``)."""
    field = name[1:] if name.startswith('_') else ''
    if field in shared._fields:
        return 0, operator.attrgetter(field)
    if name in _METER and 'now' in shared._fields:
        return 0, _METER[name]
    if each is not None:
        of_one = _OF_ONE.match(name)
        if of_one and of_one.group(1) in each._fields:
            return (1 + int(of_one.group(2)),
                    operator.attrgetter(of_one.group(1)))
        if field in each._fields:
            return 1, operator.attrgetter(field)
    raise ValueError('no field of %s holds the bind %s' % (
        ' or '.join(kind.__name__ for kind in (shared, each) if kind),
        name))
