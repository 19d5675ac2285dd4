"""The documents filters receive, exactly as Blazar defined them.

``context``: ``{user_id, project_id, auth_url, region_name}``, where
``project_id`` is the lease's project (its owner, as Blazar's
``format_context`` names it) and ``user_id`` the user acting.
``lease``: ``{id, name, start_date, end_date, reservations:
[{resource_type, amount, member_of, member_key, allocations: [{id,
resource_provider_name, extra}]}]}``, ``id`` being the lease's uuid (the
chain sets it: :func:`with_lease_id`). Nothing else: no reservation ids, no
timestamps, no token, so that a filter decides on what the user asked and
what cyquota chose, and an external service learns nothing more. Dates are
ISO 8601 strings with an explicit UTC offset
(``2020-05-13T00:00:00+00:00``).
"""

import copy
import datetime

from cyquota.conf import CONF


def context_payload(request_context, conf=None, project_id=None):
    """The ``context`` document of a request context (an
    ``oslo_context.context.RequestContext``): the caller's user, the
    lease's project ``project_id`` (the caller's when None: a lease of its
    own), and ``[enforcement] auth_url`` / ``region_name`` (None when
    unset)."""
    conf = CONF if conf is None else conf
    if project_id is None:
        project_id = request_context.project_id
    return {
        'user_id': request_context.user_id,
        'project_id': project_id,
        'auth_url': conf.enforcement.auth_url,
        'region_name': conf.enforcement.region_name,
    }


def format_date(value):
    """ISO 8601 with an explicit UTC offset, from an aware datetime or a
    naive one in UTC."""
    if not isinstance(value, datetime.datetime):
        raise TypeError('a lease date must be a datetime, not %r' % (value,))
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc).isoformat()


def parse_date(value):
    """The aware datetime of a payload date (:func:`format_date`)."""
    parsed = datetime.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError('lease date %r has no UTC offset' % (value,))
    return parsed


def allocation_payload(allocation):
    """``{id, resource_provider_name, extra}`` of an allocation mapping:
    ``id`` is the device's resource provider uuid, ``extra`` an object
    (root provider, aggregates, traits; empty when missing)."""
    return {
        'id': allocation['id'],
        'resource_provider_name': allocation.get('resource_provider_name'),
        'extra': copy.deepcopy(dict(allocation.get('extra') or {})),
    }


def reservation_payload(reservation):
    """``{resource_type, amount, member_of, member_key, allocations}`` of
    a reservation mapping; any other key (its id, timestamps) is left out.
    ``member_of`` defaults to an empty list, ``member_key`` to None."""
    return {
        'resource_type': reservation['resource_type'],
        'amount': reservation['amount'],
        'member_of': list(reservation.get('member_of') or []),
        'member_key': reservation.get('member_key'),
        'allocations': [allocation_payload(allocation) for allocation
                        in reservation.get('allocations') or []],
    }


def lease_payload(name, start_date, end_date, reservations):
    """The ``lease`` document but its ``id``: ``start_date`` and
    ``end_date`` are aware datetimes (or naive ones in UTC),
    ``reservations`` mappings as taken by :func:`reservation_payload`."""
    return {
        'name': name,
        'start_date': format_date(start_date),
        'end_date': format_date(end_date),
        'reservations': [reservation_payload(reservation)
                         for reservation in reservations],
    }


def with_lease_id(lease, lease_id):
    """A copy of the ``lease`` document whose ``id`` is ``lease_id`` (when
    None: the document's own ``id``, else None), first among its keys as
    in the contract."""
    document = {'id': lease.get('id') if lease_id is None else lease_id}
    document.update((key, value) for key, value in lease.items()
                    if key != 'id')
    return document
