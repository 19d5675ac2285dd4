"""The lease records' one writer.

A lease's status and window are stored three times: its row in
``leases``, each of its reservations in ``lease_reservations`` (what the
quota levels' calendar ranges over) and each device part chosen for it in
``lease_allocations`` (what the providers' calendar ranges over). The
copies must agree, so every insert, transition and move of a window of
any of them is written here, each the copies of one change together;
``calendar`` reads them, and ``cyquota-manage quota check`` reports a
copy that disagrees (``calendar.disagreements``).

Writes run in the caller's transaction, after the lease's row is locked
(``store.lock``; a new lease's providers taken first, ``devices.take``).
"""

import collections
import json

import sqlalchemy as sa

from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import placement_models
from cyquota.db import types

_leases = lease_models.Lease.__table__
_reservations = lease_models.LeaseReservation.__table__
_allocations = placement_models.LeaseAllocation.__table__

#: A lease's row as ``insert`` stored it (the columns a view shows).
StoredLease = collections.namedtuple('StoredLease', [
    'id', 'project_id', 'user_id', 'name', 'start_date', 'end_date',
    'status', 'status_reason', 'created_at', 'updated_at'])


def insert(batch, lease_id, project_id, user_id, request, status, root_ids,
           devices=None, status_reason=None):
    """Store a lease, its reservations (``request``: a LeaseRequest whose
    reservations have their ids; ``root_ids``: ``{resource: tree root}``)
    and the ``devices`` chosen for it (a ``devices.Choice``'s parts):
    writes of ``batch`` (a ``write_batch.WriteBatch``); returns the
    lease's row as stored."""
    now = models.utcnow()
    row = StoredLease(
        id=lease_id, project_id=project_id, user_id=user_id,
        name=request.name or lease_id, start_date=request.start,
        end_date=request.end, status=status, status_reason=status_reason,
        created_at=now, updated_at=None)
    batch.insert(_leases, [{key: value for key, value in row._asdict().items()
                            if key != 'updated_at'}])
    span = types.seconds(request.start, request.end)
    batch.insert(_reservations, [
        dict(id=r.id, lease_id=lease_id, position=index,
             project_id=project_id, root_id=root_ids[r.resource],
             resource=r.resource, amount=r.amount,
             member_of=json.dumps(r.member_of), member_key=r.member_key,
             start_date=request.start, end_date=request.end, status=status,
             span=span, created_at=now)
        for index, r in enumerate(request.reservations)])
    if devices is not None:
        add_devices(batch, lease_id, devices, request.start, request.end,
                    status)
    return row


def add_devices(batch, lease_id, devices, start, end, status):
    """Store the device parts ``devices`` (``{lease reservation id:
    [(provider_id, rc, amount)]}``) of lease ``lease_id`` in ``status``,
    with its window ``[start, end)``: a write of ``batch``."""
    now = models.utcnow()
    batch.insert(_allocations, [
        dict(lease_id=lease_id, lease_reservation_id=key,
             resource_provider_id=provider_id, resource_class=rc,
             amount=amount, start_date=start, end_date=end, status=status,
             span=types.seconds(start, end), created_at=now)
        for key, parts in sorted(devices.items())
        for provider_id, rc, amount in parts])


def drop_devices(conn, lease_id):
    """Drop a pending lease's device parts (before they are chosen
    anew)."""
    conn.execute(_allocations.delete().where(
        _allocations.c.lease_id == lease_id))


def start(conn, lease_id):
    """Lease ``lease_id`` (locked, PENDING) is ACTIVE: all three copies."""
    now = models.utcnow()
    for table, column in _COPIES:
        conn.execute(table.update().where(column == lease_id).values(
            status=lease_models.ACTIVE, updated_at=now))


def end(conn, row, end_date, status_reason):
    """Store lease ``row`` (locked) as ENDED at ``end_date`` for
    ``status_reason`` (``store.ending``), its reservations and devices
    kept as the history of the window it had; returns the row as
    stored."""
    now = models.utcnow()
    conn.execute(_leases.update().where(_leases.c.id == row.id).values(
        status=lease_models.ENDED, status_reason=status_reason,
        end_date=end_date, updated_at=now))
    for table, column in _COPIES[1:]:
        conn.execute(table.update().where(column == row.id).values(
            status=lease_models.ENDED, end_date=end_date,
            span=types.seconds(row.start_date, end_date), updated_at=now))
    return StoredLease(**dict(
        {field: getattr(row, field) for field in StoredLease._fields},
        status=lease_models.ENDED, status_reason=status_reason,
        end_date=end_date, updated_at=now))


def change(conn, lease_id, request, move_devices=False):
    """Store a lease's new name, window and amounts (``request``); its
    device parts take the new window too where ``move_devices`` (an
    ACTIVE lease's, which it keeps)."""
    now = models.utcnow()
    span = types.seconds(request.start, request.end)
    conn.execute(_leases.update().where(_leases.c.id == lease_id).values(
        name=request.name, start_date=request.start, end_date=request.end,
        updated_at=now))
    conn.execute(
        _reservations.update()
        .where(_reservations.c.id == sa.bindparam('reservation_id'))
        .values(amount=sa.bindparam('new_amount'), start_date=request.start,
                end_date=request.end, span=span, updated_at=now),
        [{'reservation_id': r.id, 'new_amount': r.amount}
         for r in request.reservations])
    if move_devices:
        conn.execute(_allocations.update()
                     .where(_allocations.c.lease_id == lease_id)
                     .values(start_date=request.start, end_date=request.end,
                             span=span, updated_at=now))


def set_refusal(conn, lease_id, refusal, before):
    """The cloud's Placement refused (``refusal``) or, with ``refusal``
    None, took the devices of ACTIVE lease ``lease_id``: its
    ``status_reason`` says so, or no longer says ``before`` (the refusal
    it said until now)."""
    query = _leases.update().where(_leases.c.id == lease_id,
                                   _leases.c.status == lease_models.ACTIVE)
    if refusal is None:
        query = query.where(_leases.c.status_reason == before)
    conn.execute(query.values(status_reason=refusal,
                              updated_at=models.utcnow()))


def drop_provider_history(conn, provider_id):
    """Drop the device parts of ended leases on a provider being deleted
    (no live lease holds it): history that goes with it."""
    conn.execute(_allocations.delete().where(
        _allocations.c.resource_provider_id == provider_id))


#: The three copies, each with its column naming the lease.
_COPIES = ((_leases, _leases.c.id),
           (_reservations, _reservations.c.lease_id),
           (_allocations, _allocations.c.lease_id))
