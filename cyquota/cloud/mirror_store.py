"""cyquota's copy of Placement's providers in its device tables: read it
for comparison, and write a sync's changes to it.

Everything here runs inside the sync's transaction (a session of
``db_api.writer``). Provider uuids are Placement's; generations are
cyquota's own, bumped under the providers' locks as cyquota's other
device writers do, so claims and leases running meanwhile see a
consistent copy.

Whose usage is whose: cyquota's own consumers (claims and leases) always
have a ``device_consumers`` row; the usage of Placement's other consumers
is written as ``device_allocations`` rows without one, which capacity and
candidates count like any other holding.
"""

import collections

import sqlalchemy as sa

from cyquota.cloud import mirror_diff
from cyquota.db import mirror_models
from cyquota.db import models
from cyquota.db import placement_models
from cyquota.lease_tables import calendar
from cyquota.leases import store
from cyquota.placement import capacity
from cyquota.placement import inventories as inventory_fields
from cyquota.placement import providers

_rp = placement_models.ResourceProvider.__table__
_inventories = placement_models.Inventory.__table__
_aggregates = placement_models.Aggregate.__table__
_provider_aggs = placement_models.ProviderAggregate.__table__
_traits = placement_models.ProviderTrait.__table__
_allocations = placement_models.DeviceAllocation.__table__
_consumers = placement_models.DeviceConsumer.__table__
_kept = mirror_models.KeptProvider.__table__

#: Why a provider is kept, as recorded and logged.
HELD = 'held by a live lease or reservation'
HAS_KEPT_CHILD = 'parent of a kept provider'


def own_consumers(session):
    """Consumer ids of cyquota's own claims and leases."""
    return (set(session.execute(sa.select(_consumers.c.consumer_id))
                .scalars())
            | set(store.every_id(session)))


def _others_usage(session):
    rows = session.execute(
        sa.select(_allocations.c.resource_provider_id,
                  _allocations.c.consumer_id, _allocations.c.resource_class,
                  _allocations.c.used)
        .outerjoin(_consumers,
                   _consumers.c.consumer_id == _allocations.c.consumer_id)
        .where(_consumers.c.id.is_(None)))
    usage = collections.defaultdict(dict)
    for provider_id, consumer, rc, used in rows:
        usage[provider_id][(consumer, rc)] = used
    return usage


def current(session):
    """``{uuid: Provider}`` of cyquota's copy, with the usage of the
    consumers that are not cyquota's own."""
    found = providers.in_trees(session, session.execute(
        sa.select(_rp.c.root_provider_id).distinct()).scalars())
    ids = [provider.id for provider in found]
    inventories = collections.defaultdict(dict)
    for row in session.execute(sa.select(_inventories)):
        inventories[row.resource_provider_id][row.resource_class] = {
            field: getattr(row, field)
            for field in inventory_fields.FIELDS}
    aggs = providers.aggregates_of(session, ids)
    traits = collections.defaultdict(set)
    for provider_id, name in session.execute(sa.select(_traits)):
        traits[provider_id].add(name)
    usage = _others_usage(session)
    return {p.uuid: mirror_diff.Provider(
        uuid=p.uuid, name=p.name, parent_uuid=p.parent_provider_uuid,
        root_uuid=p.root_provider_uuid, inventories=inventories[p.id],
        aggregates=aggs.get(p.id, frozenset()),
        traits=frozenset(traits[p.id]), usage=usage[p.id])
        for p in found}


def kept(session):
    """``{provider uuid: reason}`` of the providers kept so far."""
    return dict(session.execute(
        sa.select(_rp.c.uuid, _kept.c.reason)
        .join(_rp, _rp.c.id == _kept.c.resource_provider_id)).all())


def _ids(session):
    return dict(session.execute(sa.select(_rp.c.uuid, _rp.c.id)).all())


def _add(session, placement, uuids, ids):
    for uuid in uuids:
        wanted = placement[uuid]
        ids[uuid] = session.execute(_rp.insert().values(
            uuid=uuid, name=wanted.name, generation=0,
            parent_provider_id=ids.get(wanted.parent_uuid),
            created_at=models.utcnow())).inserted_primary_key[0]
    for uuid in uuids:
        session.execute(_rp.update().where(_rp.c.id == ids[uuid]).values(
            root_provider_id=ids[placement[uuid].root_uuid]))


def _move(session, moved, ids):
    for uuid, (name, parent, root) in sorted(moved.items()):
        session.execute(_rp.update().where(_rp.c.id == ids[uuid]).values(
            name=name, parent_provider_id=ids.get(parent),
            root_provider_id=ids[root], updated_at=models.utcnow()))


def _set_inventories(session, provider_id, changed, removed):
    if removed:
        session.execute(_inventories.delete().where(
            _inventories.c.resource_provider_id == provider_id,
            _inventories.c.resource_class.in_(removed)))
    for rc, fields in sorted(changed.items()):
        done = session.execute(_inventories.update().where(
            _inventories.c.resource_provider_id == provider_id,
            _inventories.c.resource_class == rc).values(
                updated_at=models.utcnow(), **fields)).rowcount
        if not done:
            session.execute(_inventories.insert().values(
                resource_provider_id=provider_id, resource_class=rc,
                created_at=models.utcnow(), **fields))


def _aggregate_ids(session, uuids):
    found = dict(session.execute(
        sa.select(_aggregates.c.uuid, _aggregates.c.id)
        .where(_aggregates.c.uuid.in_(sorted(uuids)))).all())
    for uuid in sorted(set(uuids) - set(found)):
        found[uuid] = session.execute(_aggregates.insert().values(
            uuid=uuid, created_at=models.utcnow())).inserted_primary_key[0]
    return found


def _set_aggregates(session, provider_id, added, removed):
    ids = _aggregate_ids(session, added | removed)
    if removed:
        session.execute(_provider_aggs.delete().where(
            _provider_aggs.c.resource_provider_id == provider_id,
            _provider_aggs.c.aggregate_id.in_(
                sorted(ids[agg] for agg in removed))))
    for agg in sorted(added):
        session.execute(_provider_aggs.insert().values(
            resource_provider_id=provider_id, aggregate_id=ids[agg]))


def _set_traits(session, provider_id, added, removed):
    if removed:
        session.execute(_traits.delete().where(
            _traits.c.resource_provider_id == provider_id,
            _traits.c.trait.in_(sorted(removed))))
    for name in sorted(added):
        session.execute(_traits.insert().values(
            resource_provider_id=provider_id, trait=name))


def _set_usage(session, provider_id, changed, removed):
    for consumer, rc in removed:
        session.execute(_allocations.delete().where(
            _allocations.c.resource_provider_id == provider_id,
            _allocations.c.consumer_id == consumer,
            _allocations.c.resource_class == rc))
    for (consumer, rc), used in sorted(changed.items()):
        done = session.execute(_allocations.update().where(
            _allocations.c.resource_provider_id == provider_id,
            _allocations.c.consumer_id == consumer,
            _allocations.c.resource_class == rc).values(
                used=used, updated_at=models.utcnow())).rowcount
        if not done:
            session.execute(_allocations.insert().values(
                resource_provider_id=provider_id, consumer_id=consumer,
                resource_class=rc, used=used, created_at=models.utcnow()))


def _held(session, provider_id):
    """Whether a live lease or one of cyquota's own consumers holds the
    provider."""
    return bool(calendar.promised_on(session, provider_id) or session.execute(
        sa.select(_allocations.c.id)
        .join(_consumers,
              _consumers.c.consumer_id == _allocations.c.consumer_id)
        .where(_allocations.c.resource_provider_id == provider_id).limit(1)
    ).first())


def _remove(session, removed, ids, already_kept):
    """Delete the providers gone from Placement, children first, keeping
    (and marking) those held.

    :returns: ``({uuid: reason} of the newly kept, {deleted uuids})``.
    """
    newly_kept, deleted = {}, set()
    for uuid in removed:
        provider_id = ids[uuid]
        reason = HELD if _held(session, provider_id) else None
        if reason is None and session.execute(
                sa.select(_rp.c.id).where(
                    _rp.c.parent_provider_id == provider_id).limit(1)
        ).first():
            reason = HAS_KEPT_CHILD
        if reason is not None:
            if uuid not in already_kept:
                session.execute(_kept.insert().values(
                    resource_provider_id=provider_id, reason=reason,
                    kept_at=models.utcnow()))
                # Gone from the cloud: what it holds stays, nothing new
                # lands there (all of it reserved, as an operator takes a
                # provider out of service in Placement).
                session.execute(
                    _inventories.update()
                    .where(_inventories.c.resource_provider_id
                           == provider_id)
                    .values(reserved=_inventories.c.total,
                            updated_at=models.utcnow()))
                newly_kept[uuid] = reason
            continue
        session.execute(_kept.delete().where(
            _kept.c.resource_provider_id == provider_id))
        providers.remove(session, provider_id)
        deleted.add(uuid)
    return newly_kept, deleted


def overcommitted(session, provider_ids):
    """``[(provider uuid, resource, held, capacity)]`` where what is held
    (ordinary holdings plus pending leases' peak) passes the capacity, or a
    class without inventory is still held."""
    if not provider_ids:
        return []
    uuids = dict(session.execute(
        sa.select(_rp.c.id, _rp.c.uuid)
        .where(_rp.c.id.in_(sorted(provider_ids)))).all())
    found = [(uuids[provider_id], rc, record.used + record.promised,
              record.capacity)
             for (provider_id, rc), record in capacity.load(
                 session, provider_ids=provider_ids).items()
             if record.used + record.promised > record.capacity]
    orphans = session.execute(
        sa.select(_allocations.c.resource_provider_id,
                  _allocations.c.resource_class,
                  sa.func.sum(_allocations.c.used))
        .outerjoin(_inventories, sa.and_(
            _inventories.c.resource_provider_id
            == _allocations.c.resource_provider_id,
            _inventories.c.resource_class == _allocations.c.resource_class))
        .where(_allocations.c.resource_provider_id.in_(
                   sorted(provider_ids)),
               _inventories.c.id.is_(None))
        .group_by(_allocations.c.resource_provider_id,
                  _allocations.c.resource_class))
    found += [(uuids[provider_id], rc, int(held), 0)
              for provider_id, rc, held in orphans]
    return sorted(found)


def apply(session, placement, changes):
    """Write ``changes`` (from ``mirror_diff.diff(placement, ...)``).

    :returns: ``(newly kept {uuid: reason}, {deleted uuids},
        overcommitted rows)``.
    """
    ids = _ids(session)
    existing = {ids[uuid] for uuid in (changes.touched() | set(
        changes.moved) | set(changes.removed)) if uuid in ids}
    providers.lock_ids(session, existing)
    already_kept = kept(session)
    back = set(already_kept) & set(placement)
    if back:
        session.execute(_kept.delete().where(_kept.c.resource_provider_id.in_(
            sorted(ids[uuid] for uuid in back))))
    _add(session, placement, changes.added, ids)
    _move(session, changes.moved, ids)
    for uuid, (changed, removed) in changes.inventories.items():
        _set_inventories(session, ids[uuid], changed, removed)
    for uuid, (added, removed) in changes.aggregates.items():
        _set_aggregates(session, ids[uuid], added, removed)
    for uuid, (added, removed) in changes.traits.items():
        _set_traits(session, ids[uuid], added, removed)
    for uuid, (changed, removed) in changes.usage.items():
        _set_usage(session, ids[uuid], changed, removed)
    newly_kept, gone = _remove(session, changes.removed, ids, already_kept)
    bumped = {ids[uuid] for uuid in changes.touched() - gone}
    if bumped:
        providers.bump(session, bumped)
    shrunk = overcommitted(session, {
        ids[uuid] for uuid in set(changes.inventories) | set(changes.usage)
        if uuid not in gone})
    return newly_kept, gone, shrunk
