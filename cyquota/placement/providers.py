"""Resource providers: trees of compute nodes and accelerator devices.

A provider without a parent is a root; a child records its parent and the
root of its tree. Writers that change a provider's inventories, aggregates,
traits or allocations first lock the provider row (``lock``), check the
generation the caller last saw, and increment it (``bump``): the
generation is the provider's optimistic concurrency token, as in Placement.
"""

import dataclasses
import functools
import uuid as uuidlib

from oslo_db import exception as db_exc
from oslo_utils import uuidutils
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import placement_models
from cyquota.lease_tables import calendar
from cyquota.lease_tables import records
from cyquota.placement import capacity
from cyquota.placement import device_errors

_rp = placement_models.ResourceProvider.__table__
_inventories = placement_models.Inventory.__table__
_allocations = placement_models.DeviceAllocation.__table__
_provider_aggs = placement_models.ProviderAggregate.__table__
_aggregates = placement_models.Aggregate.__table__
_traits = placement_models.ProviderTrait.__table__


@dataclasses.dataclass(frozen=True)
class ResourceProvider:
    """A provider as the API shows it, plus its internal id."""

    id: int
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str
    root_provider_uuid: str


def canonical_uuid(value):
    """A provider UUID from a URL or query in canonical form, or None when
    it is not a UUID at all (so it matches no provider)."""
    if isinstance(value, str) and uuidutils.is_uuid_like(value):
        return str(uuidlib.UUID(value))
    return None


def _select():
    parent = _rp.alias('parent')
    root = _rp.alias('root')
    return sa.select(
        _rp.c.id, _rp.c.uuid, _rp.c.name, _rp.c.generation,
        parent.c.uuid.label('parent_provider_uuid'),
        root.c.uuid.label('root_provider_uuid'),
    ).select_from(
        _rp.outerjoin(parent, _rp.c.parent_provider_id == parent.c.id)
        .outerjoin(root, _rp.c.root_provider_id == root.c.id)
    ).order_by(_rp.c.id)


def _provider(row):
    return ResourceProvider(**row._mapping)


def _get(session, uuid):
    row = session.execute(
        _select().where(_rp.c.uuid == canonical_uuid(uuid))).first()
    if row is None:
        raise device_errors.ResourceProviderNotFound(uuid=uuid)
    return _provider(row)


def get(context, uuid):
    """The provider ``uuid``.

    :raises ResourceProviderNotFound: (404)
    """
    with db_api.reader(context) as session:
        return _get(session, uuid)


@db_api.retry_on_conflict
def create(context, name, uuid=None, parent_provider_uuid=None):
    """Create a provider (a root, or a child of ``parent_provider_uuid``).

    :raises ResourceProviderExists: (409) the name or uuid is taken.
    :raises InvalidParentProvider: (400) the parent does not exist.
    """
    uuid = str(uuidlib.UUID(uuid)) if uuid else uuidutils.generate_uuid()
    with db_api.writer(context) as session:
        parent_id = root_id = None
        if parent_provider_uuid is not None:
            # A shared lock: the parent cannot be deleted under its new child.
            parent = session.execute(
                sa.select(_rp.c.id, _rp.c.root_provider_id)
                .where(_rp.c.uuid == canonical_uuid(parent_provider_uuid))
                .with_for_update(read=True)).first()
            if parent is None:
                raise device_errors.InvalidParentProvider(
                    name=name, uuid=uuid,
                    reason='parent provider UUID does not exist.')
            parent_id, root_id = parent.id, parent.root_provider_id
        try:
            provider_id = session.execute(_rp.insert().values(
                uuid=uuid, name=name, generation=0,
                parent_provider_id=parent_id,
                root_provider_id=root_id)).inserted_primary_key[0]
        except db_exc.DBDuplicateEntry as error:
            given = {'uuid': uuid, 'name': name}
            raise device_errors.ResourceProviderExists(duplicate=', '.join(
                '%s: %s' % (column, given[column])
                for column in sorted(error.columns) if column in given)
                or 'uuid: %s, name: %s' % (uuid, name))
        if root_id is None:
            session.execute(_rp.update().where(_rp.c.id == provider_id)
                            .values(root_provider_id=provider_id))
        return _get(session, uuid)


def get_all(context, name=None, uuid=None, in_tree=None, member_of=None,
            resources=None):
    """Providers matching every given filter, in creation order.

    :param member_of: a MemberOf, checked against each provider's *own*
        aggregates (``GET /resource_providers`` semantics).
    :param resources: ``{rc: amount}`` the provider must have room for.
    """
    query = _select()
    if name is not None:
        query = query.where(_rp.c.name == name)
    if uuid is not None:
        query = query.where(_rp.c.uuid == canonical_uuid(uuid))
    with db_api.reader(context) as session:
        if in_tree is not None:
            tree = session.execute(
                sa.select(_rp.c.root_provider_id)
                .where(_rp.c.uuid == canonical_uuid(in_tree))).scalar()
            query = query.where(_rp.c.root_provider_id == tree)
        found = [_provider(row) for row in session.execute(query)]
        if member_of:
            aggs = aggregates_of(session, [p.id for p in found])
            found = [p for p in found
                     if member_of.required_by(aggs.get(p.id, frozenset()))
                     and not member_of.forbids(aggs.get(p.id, frozenset()))]
        if resources:
            room = capacity.providers_with_room(session, resources)
            found = [p for p in found if p.id in room]
    return found


def in_trees(session, root_ids):
    """Every provider of the trees rooted at ``root_ids``."""
    return [_provider(row) for row in session.execute(_select().where(
        _rp.c.root_provider_id.in_(sorted(set(root_ids)))))]


def aggregates_of(session, provider_ids):
    """``{provider_id: frozenset(aggregate uuids)}`` (direct membership)."""
    result = {}
    if not provider_ids:
        return result
    rows = session.execute(
        sa.select(_provider_aggs.c.resource_provider_id, _aggregates.c.uuid)
        .join(_aggregates,
              _aggregates.c.id == _provider_aggs.c.aggregate_id)
        .where(_provider_aggs.c.resource_provider_id.in_(
            set(provider_ids))))
    for provider_id, agg_uuid in rows:
        result.setdefault(provider_id, set()).add(agg_uuid)
    return {key: frozenset(value) for key, value in result.items()}


@db_api.retry_on_conflict
def delete(context, uuid):
    """Delete a provider without children or allocations, with its
    inventories, aggregate links and traits.

    :raises ResourceProviderInUse: (409)
    """
    with db_api.writer(context) as session:
        provider_id, _generation = lock(session, uuid)
        if session.execute(sa.select(_rp.c.id).where(
                _rp.c.parent_provider_id == provider_id).limit(1)).first():
            raise device_errors.ResourceProviderInUse(
                uuid=uuid, reason='It has child resource providers.')
        if session.execute(sa.select(_allocations.c.id).where(
                _allocations.c.resource_provider_id == provider_id)
                .limit(1)).first():
            raise device_errors.ResourceProviderInUse(
                uuid=uuid, reason='Resource provider has allocations.')
        if calendar.promised_on(session, provider_id):
            raise device_errors.ResourceProviderInUse(
                uuid=uuid, reason='Resource provider is promised to leases.')
        remove(session, provider_id)


def remove(session, provider_id):
    """Delete provider ``provider_id``, which nothing live holds, with
    its inventories, aggregate links, traits and holdings of consumers
    that are not cyquota's; ended leases' devices on it are history that
    goes with it (``records.drop_provider_history``)."""
    for table in (_inventories, _provider_aggs, _traits, _allocations):
        session.execute(table.delete().where(
            table.c.resource_provider_id == provider_id))
    records.drop_provider_history(session, provider_id)
    session.execute(_rp.delete().where(_rp.c.id == provider_id))


def read(context, uuid, reader):
    """``(generation, reader(session, provider_id))`` of provider ``uuid``,
    in one transaction.

    :raises ResourceProviderNotFound: (404)
    """
    with db_api.reader(context) as session:
        provider = _get(session, uuid)
        return provider.generation, reader(session, provider.id)


@db_api.retry_on_conflict
def write(context, uuid, generation, change, reader):
    """Change provider ``uuid`` under its lock, as of ``generation``.

    Locks the provider, checks ``generation``, runs ``change(session,
    provider_id)``, increments the generation.

    :returns: ``(new generation, reader(session, provider_id))``.
    :raises ConcurrentUpdate: (409) ``generation`` is stale.
    """
    with db_api.writer(context) as session:
        provider_id, current = lock(session, uuid, generation)
        change(session, provider_id)
        bump(session, [provider_id])
        # Locked: nobody else moved it.
        return current + 1, reader(session, provider_id)


def lock(session, uuid, generation=None):
    """Lock provider ``uuid`` for update as the transaction's first step.

    :param generation: the generation the caller last saw, if it must match.
    :returns: ``(provider_id, generation)``.
    :raises ResourceProviderNotFound: (404)
    :raises ConcurrentUpdate: (409) ``generation`` is stale.
    """
    row = session.execute(
        sa.select(_rp.c.id, _rp.c.generation)
        .where(_rp.c.uuid == canonical_uuid(uuid))
        .with_for_update()).first()
    if row is None:
        raise device_errors.ResourceProviderNotFound(uuid=uuid)
    if generation is not None and generation != row.generation:
        raise device_errors.ConcurrentUpdate(
            uuid=uuid, current=row.generation, given=generation)
    return row.id, row.generation


def lock_ids(session, provider_ids):
    """Lock providers by id, in id order so that lockers queue instead of
    deadlocking."""
    session.execute(sa.select(_rp.c.id)
                    .where(_rp.c.id.in_(sorted(provider_ids)))
                    .order_by(_rp.c.id).with_for_update()).all()


def bump(session, provider_ids):
    """Increment the generation of (locked) providers."""
    session.execute(_rp.update().where(
        _rp.c.id.in_(sorted(set(provider_ids)))).values(
            generation=_rp.c.generation + 1))


def bump_if_unchanged(session, seen):
    """Increment the generation of the providers ``{provider_id:
    generation}`` that are still at the generation a read saw, locking
    them: Placement's way of writing allocations against a read.

    :returns: whether every one was (else nothing that read decided may
        be written: the caller rolls back).
    """
    done = session.execute(*_bumping_if_unchanged(seen))
    return done.rowcount == len(seen)


def batch_bump_if_unchanged(batch, seen, error):
    """``bump_if_unchanged`` as a write of ``batch`` (a ``write_batch.
    WriteBatch``), which raises ``error()`` unless every one was."""
    batch.add(*_bumping_if_unchanged(seen), expect=len(seen), error=error)


def _bumping_if_unchanged(seen):
    """The template of ``bump_if_unchanged`` for as many providers as
    ``seen`` has, and its binds."""
    values = dict(now=models.utcnow())
    for index, (provider_id, generation) in enumerate(sorted(seen.items())):
        values['id_%d' % index] = provider_id
        values['seen_%d' % index] = generation
    return _bump_if_unchanged(len(seen)), values


@functools.lru_cache(maxsize=64)
def _bump_if_unchanged(count):
    ids = [sa.bindparam('id_%d' % index) for index in range(count)]
    # The ids alone too: MariaDB ranges over the primary key for them,
    # but scans the table for the pairs.
    return _rp.update().where(
        _rp.c.id.in_(ids),
        sa.tuple_(_rp.c.id, _rp.c.generation).in_([
            sa.tuple_(ids[index], sa.bindparam('seen_%d' % index))
            for index in range(count)])
    ).values(generation=_rp.c.generation + 1, updated_at=sa.bindparam('now'))
