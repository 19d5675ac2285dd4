"""The outbox of the leases written back to the cloud's Placement: one
``placement_lease_writes`` row per lease, saying what Placement should
hold for it, read and written in short transactions of their own (none of
them spans a call to Placement).

A row's life: recorded held (version 1) in the transaction that starts the
lease, held again (a version more) in each that grows it, released (a
version more) in the one that ends it; taken by a process
(``attempted_at``) to apply it; settled (``applied``) by that process only
if its version is still the one applied; forgotten once a release has
settled and been swept. ``cyquota.cloud.lease_writeback`` drives it.
"""

import dataclasses
import datetime

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import mirror_models
from cyquota.db import models
from cyquota.lease_tables import calendar
from cyquota.leases import devices
from cyquota.lease_tables import records
from cyquota.leases import store

_writes = mirror_models.LeaseWrite.__table__


def allocations(parts, names, classes):
    """A lease's devices as Placement takes them: ``{provider uuid:
    {placement class: amount}}``.

    :param parts: ``[(provider_id, resource, amount)]``.
    :param names: ``{provider_id: (uuid, name, ...)}``.
    :param classes: a ``resource_classes.ClassMap``.
    """
    found = {}
    for provider_id, resource, amount in parts:
        held = found.setdefault(names[provider_id][0], {})
        rc = classes.to_placement(resource)
        held[rc] = held.get(rc, 0) + amount
    return found


def record_held(conn, lease_id):
    """In the lease's start transaction: Placement should hold its
    devices."""
    conn.execute(_writes.insert().values(
        lease_id=lease_id, held=True, version=1, applied=False,
        created_at=models.utcnow()))


def record_grown(conn, lease_id):
    """In the transaction that grows an active lease: Placement should
    hold its devices as they are now, the new ones with the kept (a
    lease started before write-back was on gets its first row)."""
    # A new state, not tried yet: any process may take it at once.
    if not conn.execute(_writes.update().where(_writes.c.lease_id == lease_id)
                        .values(held=True, version=_writes.c.version + 1,
                                applied=False, attempted_at=None,
                                updated_at=models.utcnow())).rowcount:
        record_held(conn, lease_id)


def record_released(conn, lease_id):
    """In the lease's end transaction: Placement should hold nothing of
    it (no row, so nothing, for a lease never written)."""
    # A new state, not tried yet: any process may take it at once.
    conn.execute(_writes.update().where(_writes.c.lease_id == lease_id)
                 .values(held=False, version=_writes.c.version + 1,
                         applied=False, attempted_at=None,
                         updated_at=models.utcnow()))


def outstanding(now, interval):
    """Conditions of the rows not applied, and not taken by a process in
    the ``interval / 2`` seconds before ``now``."""
    before = now - datetime.timedelta(seconds=interval / 2)
    return (_writes.c.applied == sa.false(),
            sa.or_(_writes.c.attempted_at.is_(None),
                   _writes.c.attempted_at < before))


def settled(now, after):
    """Conditions of the releases applied more than ``after`` (a
    timedelta) before ``now``."""
    return (_writes.c.applied == sa.true(), _writes.c.held == sa.false(),
            _writes.c.applied_at < now - after)


def lease_ids(context, where, batch):
    """Lease ids of the rows meeting ``where``, ``batch`` at a time in id
    order."""
    last = ''
    while True:
        with db_api.reader(context) as session:
            ids = session.execute(
                sa.select(_writes.c.lease_id)
                .where(_writes.c.lease_id > last, *where)
                .order_by(_writes.c.lease_id).limit(batch)).scalars().all()
        yield from ids
        if len(ids) < batch:
            return
        last = ids[-1]


@dataclasses.dataclass
class Job:
    """A row taken to be applied, with what its call needs.

    :ivar lease: the lease's row.
    :ivar providers: ``{uuid: name}`` of the lease's devices (held).
    :ivar allocations: what Placement should hold (held).
    """

    lease_id: str
    version: int
    held: bool
    lease: object
    providers: dict
    allocations: dict


@db_api.retry_on_conflict
def take(context, lease_id, where, classes):
    """Take the lease's row if it meets ``where`` (any row when empty);
    its :class:`Job` (classes mapped by ``classes``), or None."""
    with db_api.writer_connection(context) as conn:
        if not conn.execute(
                _writes.update()
                .where(_writes.c.lease_id == lease_id, *where)
                .values(attempted_at=models.utcnow())).rowcount:
            return None
        row = conn.execute(sa.select(_writes).where(
            _writes.c.lease_id == lease_id)).one()
        lease = store.read(conn, lease_id)
        providers, wanted = {}, {}
        if row.held:
            parts = [part for found
                     in calendar.lease_devices(conn, [lease_id])
                     .values() for part in found]
            names = devices.names(conn, {part[0] for part in parts})
            providers = {uuid: name for uuid, name, _root in names.values()}
            wanted = allocations(parts, names, classes)
    return Job(lease_id, row.version, row.held, lease, providers, wanted)


@db_api.retry_on_conflict
def settle(context, job, refusal=None):
    """Record the outcome of ``job``'s call if the row still wants what it
    applied: applied (``refusal`` None: a refusal recorded before is
    cleared from the lease's ``status_reason``) or refused for
    ``refusal`` (which becomes the ACTIVE lease's ``status_reason``).

    :returns: ``(current, refusal before)``; ``current`` is false when the
        lease changed meanwhile (or its row went).
    """
    now = models.utcnow()
    with db_api.writer_connection(context) as conn:
        # The lease's row first, as its start and end lock them.
        store.lock(conn, job.lease_id)
        row = conn.execute(sa.select(_writes).where(
            _writes.c.lease_id == job.lease_id).with_for_update()).first()
        if row is None or row.version != job.version:
            return False, None
        this_row = _writes.update().where(_writes.c.lease_id == job.lease_id)
        if refusal is None:
            conn.execute(this_row.values(applied=True, applied_at=now,
                                         refusal=None, updated_at=now))
            if row.refusal is not None:
                records.set_refusal(conn, job.lease_id, None, row.refusal)
        elif refusal != row.refusal:
            conn.execute(this_row.values(refusal=refusal, updated_at=now))
            records.set_refusal(conn, job.lease_id, refusal, row.refusal)
        return True, row.refusal


@db_api.retry_on_conflict
def forget(context, job):
    """Delete a swept row (if still at ``job``'s version)."""
    with db_api.writer_connection(context) as conn:
        conn.execute(_writes.delete().where(
            _writes.c.lease_id == job.lease_id,
            _writes.c.version == job.version))
