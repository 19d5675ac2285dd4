"""The lease document the usage-enforcement filters read
(``enforcement.payload``, Blazar's shape): a lease's name, window and
reservations, each with the devices it holds or would be given."""

from cyquota.enforcement import payload
from cyquota.lease_tables import calendar
from cyquota.leases import devices
from cyquota.leases import store


def of(conn, request, lease_id=None, carrier=None, chosen=None):
    """The document of ``request`` (a ``LeaseRequest``): with ``chosen``
    (``{reservation id: [(provider_id, rc, amount)]}``), those devices;
    with ``carrier`` (a ``pools.Carrier``), the devices chosen for it
    now, without locks (``lease_id``'s own left out); else those
    ``lease_id`` holds."""
    if chosen is None and carrier is None:
        chosen = calendar.lease_devices(conn, [lease_id])
    elif chosen is None:
        chosen = devices.choose(conn, request.device_needs(), request.start,
                                request.end, carrier,
                                exclude_lease=lease_id).parts
    shown = store.filter_allocations(conn, chosen)
    return payload.lease_payload(
        request.name, request.start, request.end,
        [{'resource_type': r.resource_type, 'amount': r.amount,
          'member_of': r.member_of, 'member_key': r.member_key,
          'allocations': shown.get(r.id, [])}
         for r in request.reservations])
