"""An update of a lease: what it asks of devices, and its transaction.

An update that changes neither the window nor an amount (a rename) keeps
the lease's devices as they are: nothing is chosen, no key is carried.
One that does is judged with the rights of the caller making it: a
PENDING lease's devices are chosen anew for the new window, an ACTIVE
lease keeps its devices and, where it grows, takes devices for what it
adds over the rest of its window, in both cases carrying its member keys
as the caller may carry them now (``pools.Carrier.of``; an ACTIVE lease's
kept devices must still be in a pool the caller may carry the key of).
"""

import collections

from oslo_log import log as logging

from cyquota.budgets import lease_charges
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import write_batch
from cyquota import exception
from cyquota.lease_tables import calendar
from cyquota.leases import devices
from cyquota.leases import events
from cyquota.lease_tables import overlaps as overlaps_mod
from cyquota.lease_tables import records
from cyquota.leases import store
from cyquota import quota

LOG = logging.getLogger(__name__)


def moves(current, request):
    """Whether ``request`` (a ``LeaseRequest``) changes the window or an
    amount of ``current`` (the lease as stored)."""
    return ((request.start, request.end) != (current.start, current.end)
            or [r.amount for r in request.reservations]
            != [r.amount for r in current.reservations])


def added(current, request):
    """``{resource: amount}`` that ``request`` adds to ``current``'s
    reservations (a lease may only grow while ACTIVE), where it adds."""
    was = {r.id: r.amount for r in current.reservations}
    totals: collections.Counter = collections.Counter()
    for r in request.reservations:
        if r.amount > was[r.id]:
            totals[r.resource] += r.amount - was[r.id]
    return dict(totals)


def added_needs(current, request):
    """What the reservations that grow ask of devices besides what they
    hold (``devices.DeviceNeed``s, keyed by reservation id)."""
    was = {r.id: r.amount for r in current.reservations}
    return [devices.DeviceNeed(r.id, r.resource, r.amount - was[r.id],
                               r.parsed_member_of(), r.member_key)
            for r in request.reservations if r.amount > was[r.id]]


def kept(held):
    """``{(provider_id, rc): amount}`` of ``held`` (``{reservation id:
    [(provider_id, rc, amount)]}``, the devices an active lease keeps)."""
    totals: collections.Counter = collections.Counter()
    for parts in held.values():
        for provider_id, rc, amount in parts:
            totals[provider_id, rc] += amount
    return dict(totals)


def merged(held, chosen):
    """The devices of each reservation once those ``chosen`` for what it
    adds join those it ``held``."""
    return {key: list(held.get(key, ())) + list(chosen.get(key, ()))
            for key in sorted(set(held) | set(chosen))}


def grow_choice(conn, lease_id, current, request, carrier, now,
                overlaps=None):
    """For ACTIVE lease ``lease_id`` changed from ``current`` to
    ``request``: ``(held, choice)``, the devices it holds, their keys
    carried as ``carrier`` may carry them now (``devices.check_carried``),
    and a ``devices.Choice`` of devices, read without locks, for what it
    adds over ``[now, end)`` around those it keeps (None when it adds
    nothing). ``overlaps``: as for ``devices.choose``."""
    held = calendar.lease_devices(conn, [lease_id])
    devices.check_carried(conn, request.device_needs(), held, carrier, now,
                          request.end)
    needs = added_needs(current, request)
    if not needs:
        return held, None
    return held, devices.choose(conn, needs, now, request.end, carrier,
                                exclude_lease=lease_id, overlaps=overlaps,
                                kept=kept(held))


def devices_after(conn, row, current, request, carrier, now):
    """``{reservation id: [(provider_id, rc, amount)]}``: the devices lease
    ``row`` would hold once changed from ``current`` to ``request``,
    chosen without locks (what the filters are shown)."""
    if not moves(current, request):
        return calendar.lease_devices(conn, [row.id])
    if row.status != lease_models.ACTIVE:
        return devices.choose(conn, request.device_needs(), request.start,
                              request.end, carrier,
                              exclude_lease=row.id).parts
    held, choice = grow_choice(conn, row.id, current, request, carrier, now)
    return merged(held, choice.parts if choice else {})


@db_api.retry_on_conflict
def apply(context, lease_id, seen, current, request, carrier):
    """Store lease ``lease_id`` changed from ``current`` (as read when its
    ``updated_at`` was ``seen``) to ``request``, checked against quota and
    device capacity in one transaction, the devices chosen as ``carrier``
    may carry their keys; returns whether the (ACTIVE) lease grew.

    :raises LeaseConflict: (409) the lease changed since ``seen``.
    :raises OverQuota: (403) the window does not fit the quota.
    :raises NoValidAllocation: (409) no devices for it.
    """
    now = models.utcnow()
    with db_api.writer_connection(context) as conn:
        row = store.lock(conn, lease_id)
        if row.updated_at != seen:
            # Changed (or started) since the filters saw it.
            raise exception.LeaseConflict(
                action='change', lease_id=lease_id,
                status='%s, changed meanwhile; try again' % row.status)
        if not moves(current, request):
            # A rename keeps the devices: nothing to check again.
            records.change(conn, lease_id, request)
            return False
        amounts = request.amounts()
        holdings = quota.QUOTAS.lease_holdings(
            context, conn, row.project_id, list(amounts))
        active = row.status == lease_models.ACTIVE
        overlaps = overlaps_mod.Overlaps(conn)
        holdings.ask_windows(overlaps, amounts, max(request.start, now),
                             request.end, exclude_lease=lease_id)
        if active:
            held, choice = grow_choice(conn, lease_id, current, request,
                                       carrier, now, overlaps)
        else:
            choice = devices.choose(conn, request.device_needs(),
                                    request.start, request.end, carrier,
                                    exclude_lease=lease_id,
                                    overlaps=overlaps)
        overs = holdings.window_overs()
        if overs:
            raise exception.OverQuota(overs=overs)
        holdings.spend(
            lease_id,
            lease_charges.Plan(current.amounts(), current.start, current.end),
            lease_charges.Plan(amounts, request.start, request.end),
            context.user_id, lease_charges.CHANGED, now)
        if active:
            # It keeps its devices; what it adds it holds at once.
            devices.check(conn, held, now, request.end, lease_id)
            if choice is not None:
                _grow(conn, holdings, lease_id, current, request, choice)
            devices.retake(conn, held)
        else:
            records.drop_devices(conn, lease_id)
            batch = write_batch.WriteBatch(conn)
            devices.take(batch, choice)
            records.add_devices(batch, lease_id, choice.parts, request.start,
                                request.end, row.status)
            batch.send()
        records.change(conn, lease_id, request, move_devices=active)
        holdings.refresh(list(amounts), now)
        holdings.write()
    return active and choice is not None


def _grow(conn, holdings, lease_id, current, request, choice):
    """An ACTIVE lease takes the devices ``choice`` for what ``request``
    adds to ``current``, and their amounts into ``used``."""
    batch = write_batch.WriteBatch(conn)
    # Before ``retake`` moves the held providers' generations on.
    devices.take(batch, choice)
    records.add_devices(batch, lease_id, choice.parts, request.start,
                        request.end, lease_models.ACTIVE)
    devices.hold(batch, lease_id, choice.parts)
    batch.send()
    grown = added(current, request)
    for resource, amount in sorted(grown.items()):
        holdings.start(resource, amount, lease_id)
    events.record(conn, lease_id, events.GROWN)
    LOG.info('Lease %s of project %s grew by %s', lease_id,
             holdings.project_id, grown)
