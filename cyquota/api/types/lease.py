"""Answers of ``/v1/leases``: one lease and the listing."""

from wsme import types as wtypes

from cyquota.api.types import base
from cyquota.api.types import link
from cyquota.db import lease_models

#: The statuses of a lease, in the order of its life.
STATUSES = lease_models.STATUSES


class LeaseAllocation(base.APIBase):
    """A device the lease holds: its resource provider and how much of
    it."""

    id = base.Field(wtypes.text, schema={'format': 'uuid'},
                    description="The device's resource provider uuid.")
    resource_provider_name = wtypes.text
    amount = base.Field(int, schema={'minimum': 1})


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
