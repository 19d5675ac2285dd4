"""A device claim as steps of a caller's own statements.

The ledger's one-statement reserve (``quota.ledger.one_statement``)
claims devices inside its statement, so that a reserve that claims a
device costs one round trip as a plain reserve does; on SQLite its
conditional path runs the steps one statement each, in the transaction
that holds the database. It does so for the common
claim only (``for_request``): one group of one resource class, no
``member_of``, no member key, of which the first candidate is one
provider: the first, in root then provider order, whose row has room and
whom the lease-pool rule lets in (no member key: no pool). Any other
request is claimed as ``allocations`` claims it.

The steps, SQL for the caller to chain, its binds named as the ledger
names its own (``_device_class``, ``_device_amount``, ``_consumer_id``,
``_project_id``, ``_user_id``, ``_now``):

* ``chosen``: one row, the first provider whose row meets the SQL
  conditions of ``claim_sql`` (room, a hair loose; the pool rule), its
  generation, and ``decisive``: 1 where the rules of ``candidates``
  would take it exactly as read (room to the unit, step size, no pending
  lease on it, no sharing provider of the class that could serve a tree
  first). Where it is 0, or no row comes, the caller leaves the claim to
  ``allocations``, having written nothing.
* ``bump``: its generation moved on only if unchanged (the provider's row
  lock; no row changed: the read is stale), as ``allocations`` writes.
* ``consumer`` and ``allocation``: the rows of the claim.
"""

import sqlalchemy as sa

from cyquota.db import placement_models
from cyquota.lease_tables import calendar
from cyquota.placement import capacity
from cyquota.placement import claim_sql
from cyquota.placement import pools
from cyquota.placement import traits

#: The tables the steps write.
PROVIDERS = placement_models.ResourceProvider.__table__
CONSUMERS = placement_models.DeviceConsumer.__table__
ALLOCATIONS = placement_models.DeviceAllocation.__table__

_inventories = placement_models.Inventory.__table__
_rp = PROVIDERS
_traits = placement_models.ProviderTrait.__table__

RESOURCE_CLASS = sa.bindparam('_device_class', type_=sa.String)
AMOUNT = sa.bindparam('_device_amount', type_=sa.Integer)


def for_request(request):
    """``(resource class, amount)`` of a request these steps can claim,
    or None."""
    if request.member_keys or len(request.groups) != 1:
        return None
    [group] = request.groups
    if group.member_of or len(group.resources) != 1:
        return None
    [(resource_class, amount)] = group.resources.items()
    return resource_class, amount


#: The prefixes of the pools' keys that ``chosen`` keeps out of (the
#: ledger keys its statements by them).
pool_prefixes = pools.forbidden_prefixes


def chosen(backend):
    """The SELECT of the first provider with room: ``provider_id``,
    ``generation`` and ``decisive`` (see the module's docstring), one row
    or none, as ``backend`` (``cyquota.db.backends``) writes it."""
    inv = _inventories.c
    serves = sa.and_(claim_sql.room(RESOURCE_CLASS, AMOUNT),
                     pools.outside_every_pool(backend, _rp.c.id,
                                              _rp.c.root_provider_id))
    first_root = claim_sql.roots_served(serves).limit(1).scalar_subquery()
    shared = _inventories.alias('shared')
    sharing = sa.exists(
        sa.select(shared.c.id).join(
            _traits, _traits.c.resource_provider_id
            == shared.c.resource_provider_id)
        .where(_traits.c.trait == traits.SHARING,
               shared.c.resource_class == RESOURCE_CLASS))
    room = (inv.total - inv.reserved) * inv.allocation_ratio
    spelling = backend.spelling
    exact = sa.and_(
        spelling.remainder(AMOUNT, inv.step_size) == 0,
        capacity.USED + AMOUNT <= spelling.whole(room),
        ~calendar.pending_on(inv.resource_provider_id, inv.resource_class),
        ~sharing)
    return (
        sa.select(inv.resource_provider_id.label('provider_id'),
                  _rp.c.generation,
                  sa.case((exact, 1), else_=0).label('decisive'))
        .select_from(_rp.join(
            _inventories, inv.resource_provider_id == _rp.c.id))
        .where(_rp.c.root_provider_id == first_root, serves)
        .order_by(inv.resource_provider_id).limit(1))


def bump(provider_id, generation, *where):
    """The UPDATE moving provider ``provider_id``'s generation on if it
    is still ``generation`` (SQL expressions) and ``where`` holds."""
    return _rp.update().where(
        _rp.c.id == provider_id, _rp.c.generation == generation, *where
    ).values(generation=_rp.c.generation + 1,
             updated_at=sa.bindparam('_now', type_=_rp.c.updated_at.type))


def _bind(table, name):
    return sa.bindparam('_' + name, type_=table.c[name].type)


def _insert(table, columns, *from_):
    """The INSERT into ``table`` of ``columns`` (``{column: SQL}``) and
    its creation time, one row (each row of ``from_``, if given)."""
    columns = dict(columns, created_at=sa.bindparam(
        '_now', type_=table.c.created_at.type))
    return table.insert().from_select(
        list(columns), sa.select(*columns.values()).select_from(*from_))


def consumer(*from_):
    """The INSERT of the claim's consumer (from ``from_``, if given)."""
    return _insert(CONSUMERS, {
        name: _bind(CONSUMERS, name)
        for name in ('consumer_id', 'project_id', 'user_id')}, *from_)


def allocation(provider_id, *from_):
    """The INSERT of the claim's allocation on ``provider_id`` (from
    ``from_``, if given)."""
    return _insert(ALLOCATIONS, dict(
        resource_provider_id=provider_id,
        consumer_id=_bind(ALLOCATIONS, 'consumer_id'),
        resource_class=RESOURCE_CLASS, used=AMOUNT), *from_)
