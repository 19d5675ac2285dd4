"""Aggregates: sets of providers, with optional name and metadata.

As in Placement, an aggregate exists as soon as a provider is put in it;
cyquota adds a name and metadata (``PUT /v1/aggregates/{uuid}``), whose keys
mark lease pools (see ``pools``). UUIDs are kept in canonical form.
"""

import uuid as uuidlib

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import placement_models
from cyquota import exception
from cyquota.placement import device_errors
from cyquota.placement import providers

_aggregates = placement_models.Aggregate.__table__
_metadata = placement_models.AggregateMetadata.__table__
_provider_aggs = placement_models.ProviderAggregate.__table__
_rp = placement_models.ResourceProvider.__table__


def canonical(uuid):
    return str(uuidlib.UUID(uuid))


def _ensure(session, uuids):
    """``{uuid: id}`` of aggregates, creating the missing ones (a lost race
    to create one is a duplicate entry, retried by the caller)."""
    found = dict(session.execute(
        sa.select(_aggregates.c.uuid, _aggregates.c.id)
        .where(_aggregates.c.uuid.in_(uuids))).all())
    for uuid in sorted(set(uuids) - set(found)):
        found[uuid] = session.execute(_aggregates.insert().values(
            uuid=uuid)).inserted_primary_key[0]
    return found


def _of_provider(session, provider_id):
    return sorted(session.execute(
        sa.select(_aggregates.c.uuid)
        .join(_provider_aggs,
              _provider_aggs.c.aggregate_id == _aggregates.c.id)
        .where(_provider_aggs.c.resource_provider_id == provider_id))
        .scalars())


def get_for_provider(context, uuid):
    """``(generation, [aggregate uuids])`` of provider ``uuid``."""
    return providers.read(context, uuid, _of_provider)


def set_for_provider(context, uuid, generation, aggregate_uuids):
    """Make provider ``uuid`` a member of exactly ``aggregate_uuids``.

    :returns: ``(new generation, [aggregate uuids])``.
    :raises ConcurrentUpdate: (409) stale ``generation``.
    """
    wanted = {canonical(agg) for agg in aggregate_uuids}

    def replace(session, provider_id):
        ids = _ensure(session, wanted)
        current = dict(session.execute(
            sa.select(_provider_aggs.c.aggregate_id, _aggregates.c.uuid)
            .join(_aggregates,
                  _aggregates.c.id == _provider_aggs.c.aggregate_id)
            .where(_provider_aggs.c.resource_provider_id == provider_id))
            .all())
        gone = [agg_id for agg_id, agg in current.items() if agg not in wanted]
        if gone:
            session.execute(_provider_aggs.delete().where(
                _provider_aggs.c.resource_provider_id == provider_id,
                _provider_aggs.c.aggregate_id.in_(gone)))
        for agg in sorted(wanted - set(current.values())):
            session.execute(_provider_aggs.insert().values(
                resource_provider_id=provider_id, aggregate_id=ids[agg]))

    return providers.write(context, uuid, generation, replace, _of_provider)


def _view(session, row):
    metadata = dict(session.execute(
        sa.select(_metadata.c.key, _metadata.c.value)
        .where(_metadata.c.aggregate_id == row.id)
        .order_by(_metadata.c.key)).all())
    return {'uuid': row.uuid, 'name': row.name, 'metadata': metadata}


def get(context, uuid):
    """``{uuid, name, metadata}`` of aggregate ``uuid``.

    :raises AggregateNotFound: (404)
    """
    with db_api.reader(context) as session:
        row = session.execute(sa.select(_aggregates).where(
            _aggregates.c.uuid == providers.canonical_uuid(uuid))).first()
        if row is None:
            raise device_errors.AggregateNotFound(uuid=uuid)
        return _view(session, row)


def get_all(context):
    """Every aggregate as ``{uuid, name, metadata}``, by uuid."""
    with db_api.reader(context) as session:
        rows = session.execute(
            sa.select(_aggregates).order_by(_aggregates.c.uuid)).all()
        return [_view(session, row) for row in rows]


@db_api.retry_on_conflict
def put(context, uuid, name=None, metadata=None):
    """Create or replace the name and metadata of aggregate ``uuid``.

    :returns: ``(created, {uuid, name, metadata})``.
    """
    uuid = canonical(uuid)
    with db_api.writer(context) as session:
        agg_id = session.execute(
            sa.select(_aggregates.c.id).where(_aggregates.c.uuid == uuid)
            .with_for_update()).scalar()
        created = agg_id is None
        if created:
            agg_id = session.execute(_aggregates.insert().values(
                uuid=uuid, name=name)).inserted_primary_key[0]
        else:
            session.execute(_aggregates.update().where(
                _aggregates.c.id == agg_id).values(name=name))
            session.execute(_metadata.delete().where(
                _metadata.c.aggregate_id == agg_id))
        try:
            for key, value in sorted((metadata or {}).items()):
                session.execute(_metadata.insert().values(
                    aggregate_id=agg_id, key=key, value=value))
        except db_exc.DBDuplicateEntry:
            # Only MySQL's collation, which ignores trailing spaces (its
            # binary one too), can see two of the caller's keys as one.
            raise exception.InvalidBody(detail=(
                'Aggregate metadata keys must differ in more than trailing '
                'spaces: %s' % ', '.join(sorted(metadata))))
        row = session.execute(sa.select(_aggregates).where(
            _aggregates.c.id == agg_id)).one()
        return created, _view(session, row)


@db_api.retry_on_conflict
def delete(context, uuid):
    """Delete aggregate ``uuid`` and its metadata.

    :raises AggregateNotFound: (404)
    :raises AggregateInUse: (409) providers are still members.
    """
    with db_api.writer(context) as session:
        agg_id = session.execute(
            sa.select(_aggregates.c.id)
            .where(_aggregates.c.uuid == providers.canonical_uuid(uuid))
            .with_for_update()).scalar()
        if agg_id is None:
            raise device_errors.AggregateNotFound(uuid=uuid)
        members = sorted(session.execute(
            sa.select(_rp.c.uuid)
            .join(_provider_aggs,
                  _provider_aggs.c.resource_provider_id == _rp.c.id)
            .where(_provider_aggs.c.aggregate_id == agg_id)).scalars())
        if members:
            raise device_errors.AggregateInUse(
                uuid=uuid, providers=', '.join(members))
        session.execute(_metadata.delete().where(
            _metadata.c.aggregate_id == agg_id))
        session.execute(_aggregates.delete().where(_aggregates.c.id == agg_id))


def with_metadata_key(session, keys=(), prefixes=()):
    """Uuids of aggregates with a metadata key in ``keys`` or starting with
    one of ``prefixes`` (compared exactly, whatever the database collation).

    :returns: ``{key: set(aggregate uuids)}`` of the matching keys.
    """
    conditions = [_metadata.c.key.in_(set(keys))] if keys else []
    conditions += [_metadata.c.key.startswith(prefix, autoescape=True)
                   for prefix in prefixes]
    if not conditions:
        return {}
    rows = session.execute(
        sa.select(_metadata.c.key, _aggregates.c.uuid)
        .join(_aggregates, _aggregates.c.id == _metadata.c.aggregate_id)
        .where(sa.or_(*conditions)))
    found = {}
    for key, agg in rows:
        if key in keys or key.startswith(tuple(prefixes)):
            found.setdefault(key, set()).add(agg)
    return found


TENANT_KEY = 'filter_tenant_id'


def _is_tenant_key(key):
    return key == TENANT_KEY or key.startswith(TENANT_KEY + '_')


def tenants_of(session, aggregate_uuids):
    """The projects each aggregate names in its ``filter_tenant_id`` and
    ``filter_tenant_id_<suffix>`` metadata (Nova's
    AggregateMultiTenancyIsolation keys, each a project id or several
    comma-separated).

    :returns: ``{aggregate uuid: frozenset(project ids)}``, without the
        aggregates that name no project.
    """
    if not aggregate_uuids:
        return {}
    rows = session.execute(
        sa.select(_aggregates.c.uuid, _metadata.c.key, _metadata.c.value)
        .join(_aggregates, _aggregates.c.id == _metadata.c.aggregate_id)
        .where(_aggregates.c.uuid.in_(sorted(aggregate_uuids)),
               _metadata.c.key.startswith(TENANT_KEY, autoescape=True)))
    named = {}
    for agg, key, value in rows:
        # The LIKE may ignore case (MySQL): compare the key exactly here.
        if not _is_tenant_key(key):
            continue
        projects = {item.strip() for item in value.split(',')}
        named.setdefault(agg, set()).update(projects - {''})
    return {agg: frozenset(projects) for agg, projects in named.items()
            if projects}
