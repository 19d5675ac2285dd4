"""Bodies of ``/v1/leases``: create, update, one lease and the listing.

A request's lease goes to the LeaseEngine as ``lease.to_json()``: the keys
the client sent, as plain data (a key left out stays out, so an update
changes only what it names).
"""

import wsme
from wsme.rest import json as wsme_json
from wsme import types as wtypes

from cyquota.api.types import base
from cyquota.api.types import link
from cyquota.db import lease_models

#: The statuses of a lease, in the order of its life.
STATUSES = lease_models.STATUSES


class Amount(wtypes.UserType):
    """A JSON integer, strictly: the JSON schema gate takes ``2.0`` for an
    integer, but an amount of accelerators is whole in the JSON too.
    Its range is the LeaseEngine's to check."""

    basetype = int
    name = 'amount'

    def validate(self, value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError('expected an integer, got %r' % (value,))
        return value


AMOUNT = Amount()


@wsme_json.fromjson.when_object(AMOUNT)
def _amount_fromjson(datatype, value):
    # As sent: WSME's own conversion would make 2.0 an int before
    # validate() sees it.
    return value


class ReservationRequest(base.APIBase):
    """A resource the lease holds: ``accelerator:<RESOURCE>``, how many,
    and where (Placement ``member_of`` values, ANDed; a pool key)."""

    resource_type = wsme.wsattr(wtypes.text, mandatory=True)
    amount = wsme.wsattr(AMOUNT, mandatory=True)
    member_of = [wtypes.text]
    member_key = wtypes.text


class LeaseRequest(base.APIBase):
    """The lease of ``POST /v1/leases``; ``start_date`` null, ``"now"`` or
    absent is now; ``project_id`` (an admin's) defaults to the caller's."""

    name = wtypes.text
    project_id = wtypes.text
    start_date = wtypes.text
    end_date = wsme.wsattr(wtypes.text, mandatory=True)
    reservations = wsme.wsattr([ReservationRequest], mandatory=True)


class CreateRequest(base.APIBase):
    """Body of ``POST /v1/leases``."""

    lease = wsme.wsattr(LeaseRequest, mandatory=True)


class LeaseAllocation(base.APIBase):
    """A device the lease holds: its resource provider and how much of
    it."""

    id = base.Field(wtypes.text, schema={'format': 'uuid'},
                    description="The device's resource provider uuid.")
    resource_provider_name = wtypes.text
    amount = base.Field(int, schema={'minimum': 1})


class ReservationChange(base.APIBase):
    """A new amount for the lease's reservation ``id``; what else GET
    shows of the reservation may be repeated, unchanged."""

    id = wsme.wsattr(wtypes.text, mandatory=True)
    amount = AMOUNT
    resource_type = wtypes.text
    member_of = [wtypes.text]
    member_key = wtypes.text
    allocations = [LeaseAllocation]


class LeaseChanges(base.APIBase):
    """The lease of ``PUT /v1/leases/{id}``: what changes; what else GET
    shows of the lease may be repeated, unchanged."""

    name = wtypes.text
    start_date = wtypes.text
    end_date = wtypes.text
    reservations = [ReservationChange]
    id = wtypes.text
    project_id = wtypes.text
    user_id = wtypes.text
    status = wtypes.text
    status_reason = wtypes.text
    created_at = wtypes.text
    updated_at = wtypes.text


class UpdateRequest(base.APIBase):
    """Body of ``PUT /v1/leases/{id}``."""

    lease = wsme.wsattr(LeaseChanges, mandatory=True)


class LeaseReservation(base.APIBase):
    """A resource of a lease, with the devices chosen for it (empty once
    the lease has ended)."""

    id = wtypes.text
    resource_type = base.Field(
        wtypes.text,
        description='``accelerator:<RESOURCE>``, e.g. ``accelerator:FPGA``.')
    amount = base.Field(int, schema={'minimum': 1})
    member_of = [wtypes.text]
    member_key = base.Field(wtypes.text, nullable=True)
    allocations = [LeaseAllocation]


_DATE = {'format': 'date-time'}


class Lease(base.APIBase):
    """Accelerators a project holds for ``[start_date, end_date)``; dates
    are ISO 8601 with their UTC offset, as the LeaseEngine renders them."""

    id = wtypes.text
    name = wtypes.text
    project_id = wtypes.text
    user_id = base.Field(wtypes.text, nullable=True)
    start_date = base.Field(wtypes.text, schema=_DATE)
    end_date = base.Field(wtypes.text, schema=_DATE)
    status = wtypes.Enum(wtypes.text, *STATUSES)
    status_reason = base.Field(
        wtypes.text, nullable=True,
        description="Why the lease is in ERROR (the filter's message).")
    created_at = base.Field(wtypes.text, schema=_DATE)
    updated_at = base.Field(wtypes.text, nullable=True, schema=_DATE)
    reservations = [LeaseReservation]


class LeaseResponse(base.APIBase):
    """Answer of ``POST``, ``GET`` and ``PUT /v1/leases/{id}``."""

    lease = Lease


class LeasesResponse(base.APIBase):
    """Answer of ``GET /v1/leases``: a page of leases, newest first, and a
    ``next`` link in ``leases_links`` when the page is full."""

    leases = [Lease]
    leases_links = base.Field([link.Link], optional=True)
