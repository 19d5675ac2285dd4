"""What each consumer (an instance, an attachment) holds: the
``consumer_usages`` rows that repair trusts, changed under the
project's usage row locks so their reads, inserts and updates cannot race."""

import sqlalchemy as sa

from cyquota.db import models
from cyquota.quota.ledger import statements as sql
from cyquota.quota.ledger import usage as usage_rows

_consumers = sql.CONSUMERS


def _where(project_id, resource, consumer_id):
    return sa.and_(_consumers.c.project_id == project_id,
                   _consumers.c.resource == resource,
                   _consumers.c.consumer_id == consumer_id)


def add(conn, project_id, resource, consumer_id, delta):
    """Add ``delta`` to what ``consumer_id`` (None: nobody in particular)
    holds, stopping at zero; what could not be taken is drift."""
    consumer = consumer_id or ''
    if conn.execute(sql.ADD_TO_CONSUMER, dict(
            _project_id=project_id, _resource=resource,
            _consumer_id=consumer, _delta=delta,
            _now=models.utcnow())).rowcount:
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
