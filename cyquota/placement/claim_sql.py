"""The statements a claim reads its candidates with (``claim_candidates``).

A page is the inventory rows, of the requested classes, of the first few
trees (by root id) that have a row meeting necessary conditions of the
rules of ``candidates``:

* room for the amount of a group that asks for the class, as
  ``capacity.Capacity.fits`` has it but for the step size and the pending
  lease peaks, and a hair looser (MySQL keeps an allocation ratio in
  single precision);
* that group's ``member_of``, on the provider itself for a numbered group,
  on the provider or its root for the unnumbered one;
* the lease-pool rule, on the provider or its root.

The rows of a tree come whole (the rules decide on them, exactly), and
with the sharing providers' on the first page: a sharing provider serves
other trees than its own, whatever the conditions say of its root. The
database walks the trees in root order, a few index lookups a provider,
until it has its page: past every tree when none has room.

The statements are built once per shape of request (how many groups,
classes and ``member_of`` sets, which lease-pool constraints) and kept:
the request's values are parameters, so that SQLAlchemy compiles each
shape once too.
"""

import dataclasses
import functools

import sqlalchemy as sa

from cyquota.db import placement_models
from cyquota.lease_tables import calendar
from cyquota.placement import capacity
from cyquota.placement import traits

# Conditions compare capacity a hair looser than Capacity.fits, which
# decides: MySQL keeps allocation_ratio in single precision.
_SLACK = 1.000001

_inventories = placement_models.Inventory.__table__
_rp = placement_models.ResourceProvider.__table__
_provider_aggs = placement_models.ProviderAggregate.__table__
_aggregates = placement_models.Aggregate.__table__
_traits = placement_models.ProviderTrait.__table__

_OWN = (_rp.c.id,)
_TREE = (_rp.c.root_provider_id,)
_BOTH = _OWN + _TREE


@dataclasses.dataclass(frozen=True)
class Statements:
    """The statements of one shape of request; each takes the request's
    ``params`` and ``trees``, how many trees a page holds.

    :ivar first: the first page, then the sharing providers' rows
        (``shares`` 1).
    :ivar following: the page from root id ``start`` on.
    """

    first: object
    following: object


def for_request(request, pool_rule):
    """``(Statements, params)`` for ``request`` under ``pool_rule``."""
    params = {'classes': sorted(request.totals())}
    groups = []
    for index, group in enumerate(request.groups):
        for number, (rc, amount) in enumerate(sorted(
                group.resources.items())):
            params['rc_%d_%d' % (index, number)] = rc
            params['amount_%d_%d' % (index, number)] = amount
        member_of = group.member_of
        for number, aggs in enumerate(member_of.required):
            params['required_%d_%d' % (index, number)] = sorted(aggs)
        if member_of.forbidden:
            params['forbidden_%d' % index] = sorted(member_of.forbidden)
        groups.append((len(group.resources), group.use_same_provider,
                       len(member_of.required), bool(member_of.forbidden)))
    for number, aggs in enumerate(pool_rule.required):
        params['pool_required_%d' % number] = sorted(aggs)
    for name in ('forbidden', 'opened'):
        if getattr(pool_rule, name):
            params['pool_' + name] = sorted(getattr(pool_rule, name))
    return _statements(tuple(groups), len(pool_rule.required),
                       'pool_forbidden' in params,
                       'pool_opened' in params), params


def _in_any(columns, name):
    """SQL: one of the providers ``columns`` is directly in one of the
    aggregates of the parameter ``name``."""
    return sa.exists().where(
        sa.or_(*(_provider_aggs.c.resource_provider_id == column
                 for column in columns)),
        _provider_aggs.c.aggregate_id == _aggregates.c.id,
        _aggregates.c.uuid.in_(sa.bindparam(name, expanding=True))
    ).correlate_except(_provider_aggs, _aggregates)


def room(resource_class, amount):
    """SQL: an inventory row of ``resource_class`` with room for
    ``amount`` (SQL expressions), a hair looser than ``Capacity.fits``
    (no step size, no pending lease peaks)."""
    inv = _inventories.c
    return sa.and_(
        inv.resource_class == resource_class,
        inv.min_unit <= amount, inv.max_unit >= amount,
        (inv.total - inv.reserved) * inv.allocation_ratio * _SLACK
        >= capacity.USED + amount)


def _room(index, number):
    return room(
        sa.bindparam('rc_%d_%d' % (index, number), type_=sa.String),
        sa.bindparam('amount_%d_%d' % (index, number), type_=sa.Integer))


def _group(index, classes, same_provider, required, forbidden):
    """SQL: a row the group ``index`` may take (its ``member_of`` as
    ``candidates`` checks it: on the provider for a numbered group, on
    the provider or the root for the unnumbered one)."""
    conditions = [sa.or_(*(_room(index, number)
                           for number in range(classes)))]
    if forbidden:
        conditions.append(~_in_any(_OWN if same_provider else _BOTH,
                                   'forbidden_%d' % index))
    if required:
        own = sa.and_(*(_in_any(_OWN, 'required_%d_%d' % (index, number))
                        for number in range(required)))
        if not same_provider:
            own = sa.or_(own, sa.and_(*(
                _in_any(_TREE, 'required_%d_%d' % (index, number))
                for number in range(required))))
        conditions.append(own)
    return sa.and_(*conditions)


def _pools(required, forbidden, opened):
    """SQL of ``pools.PoolRule.allows`` on a provider and its root."""
    conditions = [_in_any(_BOTH, 'pool_required_%d' % number)
                  for number in range(required)]
    if forbidden:
        outside = ~_in_any(_BOTH, 'pool_forbidden')
        conditions.append(sa.or_(outside, _in_any(_BOTH, 'pool_opened'))
                          if opened else outside)
    return conditions


def _rows(source, sharing):
    """The inventory rows of the requested classes of ``source``
    (providers), with what the rules need: Capacity's fields, the root,
    the uuid, the generation (what the claim writes against), whether a
    pending lease allocation is on the row (``pending``: only then is its
    peak read) and whether they are the sharing providers' (``shares``)."""
    inv = _inventories.c
    return sa.select(
        inv.resource_provider_id.label('provider_id'), inv.resource_class,
        inv.total, inv.reserved, inv.min_unit, inv.max_unit, inv.step_size,
        inv.allocation_ratio, capacity.USED.label('used'),
        _rp.c.root_provider_id.label('root_id'), _rp.c.uuid,
        _rp.c.generation,
        calendar.pending_on(inv.resource_provider_id, inv.resource_class)
        .label('pending'), sa.literal(int(sharing)).label('shares'),
    ).select_from(source.join(
        _inventories, _inventories.c.resource_provider_id == _rp.c.id)
    ).where(inv.resource_class.in_(sa.bindparam('classes', expanding=True)))


def roots_served(serves):
    """SQL: the roots, in id order, of the trees with a provider's row
    meeting ``serves``: the database walks the roots in that order, a few
    index lookups a provider, until it has as many as it needs."""
    tree = _rp.alias('tree')
    # A subquery with a LIMIT, not an EXISTS: MariaDB makes an EXISTS a
    # semi-join, which reads every inventory row.
    served = sa.select(_inventories.c.id).select_from(_rp.join(
        _inventories, _inventories.c.resource_provider_id == _rp.c.id)
    ).where(_rp.c.root_provider_id == tree.c.id, serves).limit(1)
    return sa.select(tree.c.id).where(
        tree.c.id == tree.c.root_provider_id,
        served.scalar_subquery().isnot(None)).order_by(tree.c.id)


def _page(serves, following):
    """The rows of the first ``trees`` trees (from root ``start`` on,
    when ``following``) with a row meeting ``serves``."""
    roots = roots_served(serves)
    if following:
        roots = roots.where(roots.selected_columns.id
                            >= sa.bindparam('start', type_=sa.Integer))
    # A LIMIT sent as a parameter makes SQLite read every tree.
    roots = roots.limit(
        sa.bindparam('trees', type_=sa.Integer, literal_execute=True)
    ).subquery('page')
    return _rows(roots.join(_rp, _rp.c.root_provider_id == roots.c.id),
                 sharing=False)


@functools.lru_cache(maxsize=256)
def _statements(groups, pool_required, pool_forbidden, pool_opened):
    serves = sa.and_(
        sa.or_(*(_group(index, *group) for index, group in enumerate(groups))),
        *_pools(pool_required, pool_forbidden, pool_opened))
    sharing = _rows(_rp, sharing=True).where(_rp.c.id.in_(
        sa.select(_traits.c.resource_provider_id)
        .where(_traits.c.trait == traits.SHARING)))
    return Statements(sa.union_all(_page(serves, False), sharing),
                      _page(serves, True))
