"""What each consumer (an instance, an attachment) holds: the
``consumer_usages`` rows that repair trusts, changed under the
project's usage row locks so their reads, inserts and updates cannot race."""

import functools

import sqlalchemy as sa

from cyquota.db import backends
from cyquota.db import models
from cyquota.quota.ledger import binds
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows

_consumers = sql.CONSUMERS
_ADDING = binds.Binds(binds.names_of(sql.ADD_TO_CONSUMER),
                      sql.ConsumerChange)


def _where(project_id, resource, consumer_id):
    return sa.and_(_consumers.c.project_id == project_id,
                   _consumers.c.resource == resource,
                   _consumers.c.consumer_id == consumer_id)


def add(conn, project_id, resource, consumer_id, delta):
    """Add ``delta`` to what ``consumer_id`` (None: nobody in particular)
    holds, stopping at zero; what could not be taken is drift."""
    consumer = consumer_id or ''
    if conn.execute(sql.ADD_TO_CONSUMER, _ADDING(sql.ConsumerChange(
            project_id, resource, consumer, delta,
            models.utcnow()))).rowcount:
        return
    if delta > 0:
        conn.execute(_consumers.insert().values(
            project_id=project_id, resource=resource, consumer_id=consumer,
            used=delta, created_at=models.utcnow()))
        return
    where = _where(project_id, resource, consumer)
    held = conn.execute(sa.select(_consumers.c.used).where(where)).scalar()
    if held:
        conn.execute(_consumers.update().where(where).values(
            used=0, updated_at=models.utcnow()))
    usage_rows.record_drift(
        conn, project_id, resource, consumer_id,
        'consumer_release_below_zero', -delta, held or 0,
        'consumer %r held %d' % (consumer, held or 0))


def add_ended(conn, project_id, rows, together=False):
    """Add what the committed reservation ``rows`` took to what their
    consumers hold, by (resource, consumer), in that order: where every
    delta is positive, one upsert for all (``upsert``, where the backend
    has one); the others row by row, in creation order, as ``add``.
    ``together``: where every delta of several is negative, one
    conditional UPDATE for all, where the driver counts the rows of a
    batch; returns False if one would go below zero (the transaction
    must then roll back), else True."""
    backend = backends.of(conn)
    deltas: dict[tuple[str, str], list] = {}
    for row in rows:
        deltas.setdefault((row.resource, row.consumer_id or ''), []).append(
            row.delta)
    now = models.utcnow()
    adding = upsert(backend)
    held = [dict(project_id=project_id, resource=resource,
                 consumer_id=consumer, used=sum(group), created_at=now)
            for (resource, consumer), group in sorted(deltas.items())
            if min(group) > 0]
    if held and adding is not None:
        conn.execute(adding, held if len(held) > 1 else held[0])
    taken = [sql.ConsumerChange(project_id, resource, consumer,
                                sum(group), now)
             for (resource, consumer), group in sorted(deltas.items())
             if max(group) < 0]
    if (together and len(taken) > 1
            and backend.counts_batch_rows(conn.dialect)):
        # Each UPDATE changes at most its one consumer row.
        if conn.execute(sql.ADD_TO_CONSUMER, [
                _ADDING(change) for change in taken]
        ).rowcount != len(taken):
            return False
        taken = []
    steps = {(change.resource, change.consumer_id) for change in taken}
    if adding is None:
        steps.update((held_row['resource'], held_row['consumer_id'])
                     for held_row in held)
    for row in rows:
        key = (row.resource, row.consumer_id or '')
        if key in steps or min(deltas[key]) < 0 < max(deltas[key]):
            add(conn, project_id, row.resource, row.consumer_id, row.delta)
    return True


@functools.lru_cache(maxsize=None)
def upsert(backend):
    """The INSERT of a consumer's row that adds to the row where there is
    one already, on ``backend`` (``backends.Backend.insert_adding``);
    None where it has none."""
    return backend.insert_adding(
        _consumers, ('project_id', 'resource', 'consumer_id'), 'used',
        {'updated_at': 'created_at'})


def holds(conn, project_id, consumer_id):
    """Whether ``consumer_id`` still uses or has reserved anything."""
    used = conn.execute(
        sa.select(sa.func.coalesce(sa.func.sum(_consumers.c.used), 0))
        .where(_consumers.c.project_id == project_id,
               _consumers.c.consumer_id == consumer_id)).scalar()
    pending = conn.execute(
        sa.select(sa.func.count()).select_from(sql.RESERVATIONS)
        .where(sql.RESERVATIONS.c.project_id == project_id,
               sql.RESERVATIONS.c.consumer_id == consumer_id,
               sql.RESERVATIONS.c.status == models.RESERVED)).scalar()
    return bool(used or pending)


def set_held(conn, project_id, resource, consumer_id, amount):
    """Make what ``consumer_id`` holds ``amount``; returns the old amount,
    or None when it was already so."""
    where = _where(project_id, resource, consumer_id)
    old = conn.execute(sa.select(_consumers.c.used).where(where)).scalar()
    if old == amount or (old is None and amount == 0):
        return None
    if old is None:
        conn.execute(_consumers.insert().values(
            project_id=project_id, resource=resource,
            consumer_id=consumer_id, used=amount,
            created_at=models.utcnow()))
    else:
        conn.execute(_consumers.update().where(where).values(
            used=amount, updated_at=models.utcnow()))
    return old or 0
