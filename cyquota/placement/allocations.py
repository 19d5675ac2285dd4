"""Device allocations: claim devices for a consumer, free them again.

``claim`` picks the first allocation candidate of a DeviceRequest (the
rules of ``candidates`` and ``pools``) and writes it atomically; ``free``
gives everything a consumer holds back. A consumer holds at most one claim.

The candidate is read a page of trees at a time
(``claim_candidates``), in a fixed number of statements whatever the
number of devices.

Concurrency: the candidate search reads without locks, each provider with
its generation, in the same statement as its inventories and allocations.
Every writer that can take room on a provider (its inventories, device
allocations, pending lease allocations) increments its generation in the
same transaction; one that only gives room back (a pending lease dropped)
need not, as a stale view of it is only stricter. The
claim writes as Placement does, against the generations it read: one
statement increments them only where they are unchanged, taking the
providers' row locks; if any had moved on, the search's view is stale and
the claim raises AllocationRaced, a DBDeadlock, so that the whole
transaction is retried with a fresh view. A concurrent claimer of the same
provider waits on that row lock, then finds the generation moved. So two
claims can never together exceed a device's capacity, and nothing is read
again under the locks.

The ledger's one-statement reserve claims the common request itself, as
steps of its statement (``claim_steps``): the same first candidate,
written the same way against its generation; what those steps cannot
decide exactly comes here.

Transactions: called inside a caller's transaction (the ledger's reserve),
``claim`` and ``free`` join it, and the caller's ``db_api.retry_on_conflict``
retries the whole transaction after AllocationRaced or a deadlock. Called
alone, they run and retry their own transaction.
"""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import placement_models
from cyquota import exception
from cyquota.placement import capacity
from cyquota.placement import claim_candidates
from cyquota.placement import device_errors
from cyquota.placement import pools
from cyquota.placement import providers
from cyquota.placement import request as request_mod

_allocations = placement_models.DeviceAllocation.__table__
_consumers = placement_models.DeviceConsumer.__table__
_rp = placement_models.ResourceProvider.__table__


class AllocationRaced(db_exc.DBDeadlock):
    """The chosen devices filled up after the search read them: retry the
    transaction."""


def _in_transaction(context):
    try:
        context.transaction_ctx
    except db_exc.NoEngineContextEstablished:
        return False
    return True


def _check_id(name, value, optional=False):
    if optional and value is None:
        return
    if not isinstance(value, str) or not 0 < len(value) <= 255:
        raise exception.Invalid(reason='%s must be a string of 1 to 255 '
                                       'characters, got %r' % (name, value))


def _shaped(rows, uuids):
    """``{provider uuid: {"resources": {rc: amount}}}`` of allocation rows
    ``(provider_id, resource_class, used)``, ``uuids`` by provider id."""
    result = {}
    for provider_id, rc, used in rows:
        resources = result.setdefault(uuids[provider_id],
                                      {'resources': {}})['resources']
        resources[rc] = resources.get(rc, 0) + used
    return result


def _claim(context, consumer_id, project_id, request, user_id):
    # A Core connection, not a session: in the ledger's transaction (a
    # connection) a session's rollback on a refusal would end that
    # transaction under it, and SQLAlchemy warns when it ends again.
    with db_api.writer_connection(context) as session:
        try:
            session.execute(_consumers.insert().values(
                consumer_id=consumer_id, project_id=project_id,
                user_id=user_id))
        except db_exc.DBDuplicateEntry:
            raise device_errors.ConsumerExists(consumer_id=consumer_id)
        rule = pools.rule_for(session, request.member_keys,
                              pools.Carrier.of(context, project_id))
        found = claim_candidates.first(session, request, rule)
        if found is None:
            raise device_errors.NoValidAllocation(reason=(
                'no providers have room for %s within the requested '
                'aggregates' % ', '.join(
                    '%s:%d' % item for item in sorted(
                        request.totals().items()))))
        chosen, seen = found
        if not providers.bump_if_unchanged(session, {
                provider_id: provider.generation
                for provider_id, provider in seen.items()}):
            raise AllocationRaced()
        rows = [(provider_id, rc, amount)
                for provider_id, resources in sorted(
                    chosen.allocations.items())
                for rc, amount in sorted(resources.items())]
        session.execute(_allocations.insert(), [
            {'resource_provider_id': provider_id, 'consumer_id': consumer_id,
             'resource_class': rc, 'used': amount}
            for provider_id, rc, amount in rows])
        return _shaped(rows, {provider_id: provider.uuid
                              for provider_id, provider in seen.items()})


def _free(context, consumer_id):
    # A Core connection, as _claim's.
    with db_api.writer_connection(context) as session:
        held = session.execute(
            sa.select(_consumers.c.id)
            .where(_consumers.c.consumer_id == consumer_id)
            .with_for_update()).scalar()
        if held is None:
            return {}
        rows = session.execute(
            sa.select(_allocations.c.resource_provider_id,
                      _allocations.c.resource_class, _allocations.c.used,
                      _rp.c.uuid)
            .join(_rp, _rp.c.id == _allocations.c.resource_provider_id)
            .where(_allocations.c.consumer_id == consumer_id)).all()
        if rows:
            # The generations moved on first: that locks the providers.
            providers.bump(session, {row.resource_provider_id
                                     for row in rows})
            session.execute(_allocations.delete().where(
                _allocations.c.consumer_id == consumer_id))
        session.execute(_consumers.delete().where(_consumers.c.id == held))
        return _shaped([row[:3] for row in rows],
                       {row.resource_provider_id: row.uuid for row in rows})


def _run(function, context, *args):
    if _in_transaction(context):
        return function(context, *args)
    try:
        return db_api.retry_on_conflict(function)(context, *args)
    except AllocationRaced:
        raise device_errors.NoValidAllocation(
            reason='concurrent claims kept taking the chosen devices; '
                   'try again')


def claim(context, consumer_id, project_id, request, user_id=None):
    """Choose devices for ``request`` and allocate them to ``consumer_id``.

    :param request: a ``request.DeviceRequest`` (``request.from_params``
        builds one from Placement-style query parameters); its member keys
        drive the lease-pool rule, carried by ``context``'s roles acting
        for ``project_id``.
    :returns: ``{provider_uuid: {"resources": {rc: amount}}}``, the body of
        Placement's allocations for the chosen candidate.
    :raises ConsumerExists: (409) the consumer already holds a claim.
    :raises NoValidAllocation: (409) no candidate fits (or, run alone,
        concurrent claims kept winning).
    :raises AllocationRaced: inside a caller's transaction, when the chosen
        devices filled up meanwhile (a DBDeadlock: retry the transaction).
    """
    _check_id('consumer_id', consumer_id)
    _check_id('project_id', project_id)
    _check_id('user_id', user_id, optional=True)
    if not isinstance(request, request_mod.DeviceRequest):
        raise exception.Invalid(reason='request must be a DeviceRequest, '
                                       'got %r' % (request,))
    return _run(_claim, context, consumer_id, project_id, request, user_id)


def free(context, consumer_id):
    """Give back every device allocation of ``consumer_id``.

    :returns: what was freed, shaped as ``claim`` returns it (``{}`` when
        the consumer held nothing: freeing twice is harmless).
    """
    _check_id('consumer_id', consumer_id)
    return _run(_free, context, consumer_id)


def holds_any(context, consumer_id):
    """Whether ``consumer_id`` has any device allocation (one cheap query,
    for the ledger's release)."""
    with db_api.reader(context) as session:
        return session.execute(
            sa.select(_allocations.c.consumer_id)
            .where(_allocations.c.consumer_id == consumer_id)
            .limit(1)).first() is not None


def _consumer_statement():
    """The read of ``get_for_consumer``, binding ``consumer_id``: the
    consumer's row and its allocations, one row of NULLs if neither."""
    asked = sa.select(sa.bindparam('consumer_id', type_=sa.String)
                      .label('id')).subquery('asked')
    return (sa.select(_consumers.c.project_id, _consumers.c.user_id,
                      _allocations.c.resource_provider_id, _rp.c.uuid,
                      _allocations.c.resource_class, _allocations.c.used)
            .select_from(asked.outerjoin(
                _consumers, _consumers.c.consumer_id == asked.c.id
            ).outerjoin(
                _allocations, _allocations.c.consumer_id == asked.c.id
            ).outerjoin(
                _rp, _rp.c.id == _allocations.c.resource_provider_id)))


#: Built once: a claim's REST answer reads it.
_FOR_CONSUMER = _consumer_statement()


def get_for_consumer(context, consumer_id):
    """``{"allocations": {provider_uuid: {"resources"}}, "project_id",
    "user_id"}`` of ``consumer_id`` (empty allocations if none), in one
    query."""
    with db_api.one_read_connection(context) as conn:
        rows = conn.execute(_FOR_CONSUMER,
                            {'consumer_id': consumer_id}).all()
    held = [row for row in rows if row.resource_provider_id is not None]
    return {'allocations': _shaped(
                [(row.resource_provider_id, row.resource_class, row.used)
                 for row in held],
                {row.resource_provider_id: row.uuid for row in held}),
            'project_id': rows[0].project_id, 'user_id': rows[0].user_id}


def _held_on(session, provider_id):
    held = {}
    for consumer_id, rc, used in session.execute(
            sa.select(_allocations.c.consumer_id,
                      _allocations.c.resource_class, _allocations.c.used)
            .where(_allocations.c.resource_provider_id == provider_id)):
        resources = held.setdefault(consumer_id,
                                    {'resources': {}})['resources']
        resources[rc] = resources.get(rc, 0) + used
    return held


def get_for_provider(context, uuid):
    """``(generation, {consumer_id: {"resources": {rc: amount}}})`` of
    provider ``uuid``."""
    return providers.read(context, uuid, _held_on)


def _used_on(session, provider_id):
    return {rc: record.used for (_id, rc), record in sorted(
        capacity.load(session, provider_ids=[provider_id]).items())}


def usages(context, uuid):
    """``(generation, {rc: used})`` of provider ``uuid``, for every class
    it has inventory of."""
    return providers.read(context, uuid, _used_on)
