"""Candidate devices a page at a time: the providers with inventory of
some resource classes, in id order, each page read in one query with
their generations, names, root uuids, inventories (with what is
allocated: ``capacity``) and whether each is outside every lease pool
(``pools``). ``windows.choose`` reads pages until its needs are served.
"""

import functools
import typing

import sqlalchemy as sa

from cyquota.db import backends
from cyquota.db import placement_models
from cyquota.db import prepared
from cyquota.placement import capacity
from cyquota.placement import pools

_rp = placement_models.ResourceProvider.__table__
_inventories = placement_models.Inventory.__table__

_PROVIDER_ORDER = 'uniq_provider_inventories0rp0rc'

#: The fewest providers of the first page read when devices are chosen;
#: each next page is twice the last.
PAGE = 4
#: Units asked for each provider of the first page: a device with room
#: most often has this many.
UNITS_PER_PROVIDER = 2


class Page(typing.NamedTuple):
    """A page of providers: ``{provider_id: generation}``, ``{provider_id:
    (uuid, name, root uuid)}``, their ``capacity.load`` records (without
    ``promised``) and the set of those outside every pool."""

    generations: dict
    names: dict
    limits: dict
    outside: set


@functools.lru_cache(maxsize=None)
def _page_statement(resource_classes, backend, pool_prefixes, size):
    """The statement of ``pages`` for a tuple of classes, built once per
    backend, ``pools.forbidden_prefixes()`` and page size: binds
    ``after``. It runs prepared (PostgreSQL keeps one plan for any
    ``after``), so what the plan depends on is written out: the classes
    and the size (for a LIMIT it does not know, PostgreSQL plans for a
    tenth of the rows)."""
    inv = _inventories.c
    classes = sa.bindparam('classes', resource_classes, expanding=True,
                           literal_execute=True)
    first = sa.and_(inv.resource_provider_id > sa.bindparam('after'),
                    inv.resource_class.in_(classes))
    limit = sa.literal_column(str(size))
    if len(resource_classes) == 1:
        # A provider has one row of a class (their unique index): the
        # page is a range of the index, read up to ``size``.
        rows = _inventories.join(_rp, _rp.c.id == inv.resource_provider_id)
        where, rows_limit = first, limit
    else:
        # The page's ids first, from the same index, then each one's rows
        # of the classes.
        ids = _in_provider_order(backend, (
            sa.select(inv.resource_provider_id.label('id')).where(first)
            .distinct().order_by(inv.resource_provider_id).limit(limit))
        ).subquery('ids')
        rows = _inventories.join(
            ids, ids.c.id == inv.resource_provider_id).join(
                _rp, _rp.c.id == ids.c.id)
        where, rows_limit = inv.resource_class.in_(classes), None
    root = _rp.alias('root')
    outside = pools.outside_every_pool(backend, _rp.c.id,
                                       _rp.c.root_provider_id)
    statement = _in_provider_order(backend, (
        sa.select(_rp.c.id, _rp.c.generation, _rp.c.uuid, _rp.c.name,
                  root.c.uuid.label('root_uuid'),
                  sa.case((outside, 1), else_=0).label('outside'),
                  *capacity.COLUMNS)
        .select_from(rows.join(root, root.c.id == _rp.c.root_provider_id))
        .where(where).order_by(inv.resource_provider_id).limit(rows_limit)))
    if rows_limit is not None:
        # One class: the inventories' range first, as written. MariaDB
        # would walk the providers in id order instead, the compute nodes
        # and every provider without the class too, for the few of the
        # page.
        statement = backend.as_written(statement)
    return statement


def _in_provider_order(backend, select):
    """``select`` reading ``provider_inventories`` through their unique
    index (provider, class): for a page of a few, MariaDB would read every
    row of the classes and sort them."""
    return backend.through_index(select, _inventories, _PROVIDER_ORDER)


def pages(session, resource_classes, units):
    """``Page``s of the providers with inventory of ``resource_classes``,
    in id order, each read in one query (the first of the page's reads),
    for ``units`` asked in all: a provider for every ``UNITS_PER_PROVIDER``
    units, at least ``PAGE``, then twice as many each time, as the first
    pages seldom lack room. Each provider read costs a read of its
    overlapping windows too, so the first page is no larger."""
    after, size = 0, max(PAGE, -(-units // UNITS_PER_PROVIDER))
    while True:
        statement = _page_statement(tuple(sorted(resource_classes)),
                                    backends.of(session),
                                    pools.forbidden_prefixes(), size)
        page = Page({}, {}, {}, set())
        for row in prepared.execute(session, statement, {'after': after}):
            page.generations[row.id] = row.generation
            page.names[row.id] = (row.uuid, row.name, row.root_uuid)
            if row.outside:
                page.outside.add(row.id)
            key, record = capacity.keyed(row)
            page.limits[key] = record
        if page.generations:
            yield page
        if len(page.generations) < size:
            return
        after, size = max(page.generations), size * 2
