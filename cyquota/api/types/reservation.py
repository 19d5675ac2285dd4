"""Answers of ``/v1/reservations``: a reserve (or its dry run) and the
listing."""

from wsme import types as wtypes

from cyquota.api.types import attributes
from cyquota.api.types import base
from cyquota.api.types import link
from cyquota.db import models


class Over(base.APIBase):
    """What refused a reserve: the limit of one resource for a project
    (scope ``project``) or for the whole tree under its root (scope
    ``tree``, ``project_id`` the root), with the counts it was checked
    against."""

    project_id = wtypes.text
    resource = wtypes.text
    scope = wtypes.Enum(wtypes.text, 'project', 'tree')
    limit = int
    used = int
    reserved = int
    requested = int


class ProviderAllocation(base.APIBase):
    """The devices one resource provider gives a consumer, as Placement
    shows them: ``{"resources": {resource class: amount}}``."""

    resources = base.Field({wtypes.text: int}, optional=True)


class ReserveResponse(base.APIBase):
    """Answer of ``POST /v1/reservations``.

    A reserve: ``reservations`` and ``expire``, and with ``devices`` the
    ``allocations`` made. A dry run: ``dry_run``, ``allowed`` and the
    ``overs`` that refused it, ``reservations`` empty.
    """

    dry_run = base.Field(bool, optional=True)
    allowed = base.Field(bool, optional=True)
    overs = base.Field([Over], optional=True)
    reservations = base.Field(
        [wtypes.text], schema={'items': {'type': 'string', 'format': 'uuid'}},
        description='The reservations made (their uuids); '
        'a dry run: empty, or those of an earlier reserve with the same '
        'request_id.')
    expire = attributes.DATETIME
    allocations = base.Field(
        {wtypes.text: ProviderAllocation}, optional=True,
        description="With ``devices``, the devices allocated, as Placement "
                    "shows a consumer's allocations.")


class Reservation(base.APIBase):
    """One row of the ledger's reservations."""

    uuid = base.Field(wtypes.text, schema={'format': 'uuid'})
    project_id = wtypes.text
    resource = wtypes.text
    delta = int
    status = wtypes.Enum(wtypes.text, *models.STATUSES)
    request_id = base.Field(wtypes.text, nullable=True)
    consumer_id = base.Field(wtypes.text, nullable=True)
    expire = base.Field(attributes.DATETIME, nullable=True)
    created_at = attributes.DATETIME
    updated_at = base.Field(attributes.DATETIME, nullable=True)


class ReservationsResponse(base.APIBase):
    """Answer of ``GET /v1/reservations``: a page of reservations, newest
    first, and a ``next`` link in ``reservations_links`` when the page is
    full."""

    reservations = [Reservation]
    reservations_links = base.Field([link.Link], optional=True)
