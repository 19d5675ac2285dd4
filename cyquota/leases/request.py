"""A lease request's values, checked: bad input raises ``InvalidLease``
naming the field, before anything is read or written.

The REST layer has checked the JSON types, shape and bounds already (the
JSON schemas of ``cyquota.api.schemas.lease``: objects, required fields,
at least one reservation, strings, integers, lists of strings, and the
lengths of names and pool keys and the amounts, bounded by this module's
constants, which this checks again for the engine's Python callers). This
checks what the values mean, which a schema cannot say: dates with their
UTC offset (or ``"now"``), a start at most 60 s in the past, an end after
the start, ``accelerator:<RESOURCE>`` resource types of counted
resources, ``member_of`` values as Placement parses them, reservation ids
of the lease, and the bounds of ``[leases]``: at most
``max_reservations`` reservations, a window of ``min_duration`` to
``max_duration`` seconds, a ``member_of`` of at most
``max_member_of_entries`` values and ``max_member_of_bytes`` bytes.
"""

import dataclasses
import datetime

from cyquota.conf import CONF
from cyquota.db import models
from cyquota import exception
from cyquota.leases import devices
from cyquota.placement import member_of as member_of_mod
from cyquota.quota import resources as quota_resources
from cyquota.quota import validation

#: How far in the past a start may lie (a request's own travel time).
START_GRACE = datetime.timedelta(seconds=60)
RESOURCE_TYPE_PREFIX = 'accelerator:'
#: The longest name or pool key (the shortest is one character); the
#: REST schemas (``cyquota.api.schemas.lease``) take their bounds from here.
MAX_NAME_LENGTH = 255
#: The largest amount of a reservation (the smallest is one).
MAX_AMOUNT = models.MAX_COUNT


@dataclasses.dataclass
class ReservationRequest:
    """One reservation of a lease: ``amount`` of ``resource``."""

    resource: str
    amount: int
    member_of: list
    member_key: str | None = None
    id: str | None = None

    @property
    def resource_type(self):
        return RESOURCE_TYPE_PREFIX + self.resource

    def parsed_member_of(self):
        return member_of_mod.parse(self.member_of)


@dataclasses.dataclass
class LeaseRequest:
    """A lease's name, window (naive UTC) and reservations."""

    name: str
    start: datetime.datetime
    end: datetime.datetime
    reservations: list

    def amounts(self):
        """``{resource: amount}`` summed over the reservations."""
        totals: dict[str, int] = {}
        for r in self.reservations:
            totals[r.resource] = totals.get(r.resource, 0) + r.amount
        return totals

    def device_needs(self):
        """What each reservation asks of devices (``devices.choose``)."""
        return [devices.DeviceNeed(r.id, r.resource, r.amount,
                                   r.parsed_member_of(), r.member_key)
                for r in self.reservations]


def _invalid(field, reason):
    return exception.InvalidLease(field=field, reason=reason)


def parse_date(field, value, now):
    """A date of the request as naive UTC; ``"now"`` (or None) is
    ``now``."""
    if value is None or value == 'now':
        return now
    try:
        parsed = datetime.datetime.fromisoformat(value.replace('Z', '+00:00'))
    except ValueError:
        raise _invalid(field, '%r is not an ISO 8601 date and time' % value)
    if parsed.tzinfo is None:
        raise _invalid(field, '%r has no UTC offset' % value)
    try:
        return validation.naive_utc(parsed)
    except ValueError as error:
        raise _invalid(field, '%r: %s' % (value, error))


def _name(value, default):
    if value is None:
        return default
    if not 1 <= len(value) <= MAX_NAME_LENGTH:
        raise _invalid('name', 'expected 1 to %d characters, got %r'
                       % (MAX_NAME_LENGTH, value))
    return value


def _amount(field, value):
    if not 0 < value <= MAX_AMOUNT:
        raise _invalid(field, '%d is outside 1 .. %d' % (value, MAX_AMOUNT))
    return value


def _resource(field, value):
    if not value.startswith(RESOURCE_TYPE_PREFIX):
        raise _invalid(field, 'expected %s<RESOURCE>, got %r'
                       % (RESOURCE_TYPE_PREFIX, value))
    resource = value[len(RESOURCE_TYPE_PREFIX):]
    try:
        return quota_resources.check_resource(resource)
    except exception.UnknownResource as error:
        raise _invalid(field, error.message)


def _member_of(field, value):
    if value is None:
        return []
    # Bounded before it is parsed: it is stored, and shown with the lease.
    entries = CONF.leases.max_member_of_entries
    if len(value) > entries:
        raise _invalid(field, 'at most %d values ([leases] '
                       'max_member_of_entries), got %d'
                       % (entries, len(value)))
    size = sum(len(item.encode('utf-8')) for item in value)
    if size > CONF.leases.max_member_of_bytes:
        raise _invalid(field, 'at most %d bytes in all ([leases] '
                       'max_member_of_bytes), got %d'
                       % (CONF.leases.max_member_of_bytes, size))
    try:
        member_of_mod.parse(value)
    except exception.InvalidMemberOf as error:
        raise _invalid(field, error.message)
    return list(value)


def _member_key(field, value):
    if value is not None and not 1 <= len(value) <= MAX_NAME_LENGTH:
        raise _invalid(field, 'expected 1 to %d characters, got %r'
                       % (MAX_NAME_LENGTH, value))
    return value


def _reservation(index, item):
    where = 'reservations[%d]' % index
    return ReservationRequest(
        _resource(where + '.resource_type', item['resource_type']),
        _amount(where + '.amount', item['amount']),
        _member_of(where + '.member_of', item.get('member_of')),
        _member_key(where + '.member_key', item.get('member_key')))


def _duration(start, end):
    """Refuse a window shorter than ``[leases] min_duration`` or longer
    than ``max_duration`` (naming ``end_date``)."""
    seconds = (end - start).total_seconds()
    # Every digit a date gives (microseconds), none it does not.
    lasts = ('%f' % seconds).rstrip('0').rstrip('.')
    shortest, longest = CONF.leases.min_duration, CONF.leases.max_duration
    if seconds < shortest:
        raise _invalid('end_date', 'the lease would last %s s, less than '
                       '[leases] min_duration = %d s' % (lasts, shortest))
    if seconds > longest:
        raise _invalid('end_date', 'the lease would last %s s, more than '
                       '[leases] max_duration = %d s' % (lasts, longest))


def _window(start, end, now):
    if start < now - START_GRACE:
        raise _invalid('start_date', 'it lies more than %d s in the past'
                       % START_GRACE.total_seconds())
    if end <= start:
        raise _invalid('end_date', 'it is not after start_date')
    _duration(start, end)


def parse_create(lease, now):
    """The ``LeaseRequest`` of a create body's ``lease`` object."""
    start = parse_date('start_date', lease.get('start_date'), now)
    end = parse_date('end_date', lease['end_date'], now)
    _window(start, end, now)
    items = lease['reservations']
    if len(items) > CONF.leases.max_reservations:
        raise _invalid('reservations', 'a lease holds at most %d '
                       'reservations ([leases] max_reservations), got %d'
                       % (CONF.leases.max_reservations, len(items)))
    return LeaseRequest(_name(lease.get('name'), None), start, end,
                        [_reservation(i, item)
                         for i, item in enumerate(items)])


def parse_update(lease_id, changes, current, active, now):
    """``current`` (the ``LeaseRequest`` of lease ``lease_id``, with
    reservation ids) changed by ``changes`` (a partial ``lease`` object).
    An active lease's start is fixed and its amounts may only grow
    (LeaseConflict)."""
    name = _name(changes.get('name'), current.name)
    start, end = current.start, current.end
    if 'start_date' in changes:
        start = parse_date('start_date', changes['start_date'], now)
        if active and start != current.start:
            raise exception.LeaseConflict(
                action='change the start of', lease_id=lease_id,
                status='ACTIVE')
    if 'end_date' in changes:
        end = parse_date('end_date', changes['end_date'], now)
    if active:
        if end <= now:
            raise _invalid('end_date', 'it is not in the future (DELETE '
                                       'ends a lease now)')
        if end <= start:
            raise _invalid('end_date', 'it is not after start_date')
        if end != current.end:
            # Measured from its original start, as the filter does.
            _duration(start, end)
    elif start != current.start or end != current.end:
        _window(start, end, now)
    reservations = [dataclasses.replace(r) for r in current.reservations]
    by_id = {r.id: r for r in reservations}
    for index, item in enumerate(changes.get('reservations') or ()):
        where = 'reservations[%d]' % index
        if item['id'] not in by_id:
            raise _invalid(where + '.id', 'no reservation %r in this lease'
                           % (item['id'],))
        if 'amount' in item:
            amount = _amount(where + '.amount', item['amount'])
            if active and amount < by_id[item['id']].amount:
                # Its devices may be attached: it grows, never shrinks.
                raise exception.LeaseConflict(
                    action='lower the amounts of', lease_id=lease_id,
                    status='ACTIVE')
            by_id[item['id']].amount = amount
    return LeaseRequest(name, start, end, reservations)


#: What GET shows of a lease, and of each of its reservations, that a PUT
#: may repeat (a client sending back what it read) but never change.
FIXED_LEASE_FIELDS = ('id', 'project_id', 'user_id', 'status',
                      'status_reason', 'created_at', 'updated_at')
FIXED_RESERVATION_FIELDS = ('resource_type', 'member_of', 'member_key',
                            'allocations')


def repeats_fixed(changes):
    """Whether an update's ``changes`` name a field of the fixed ones."""
    return (any(field in changes for field in FIXED_LEASE_FIELDS)
            or any(field in item
                   for item in changes.get('reservations') or ()
                   for field in FIXED_RESERVATION_FIELDS))


def check_fixed(changes, view):
    """Refuse (InvalidLease naming the field) a fixed field of ``changes``
    whose value is not what the lease's ``view`` (its GET) shows."""
    for field in FIXED_LEASE_FIELDS:
        if field in changes and changes[field] != view[field]:
            raise _invalid(field, 'it cannot change (the lease has %r)'
                           % (view[field],))
    shown = {r['id']: r for r in view['reservations']}
    for index, item in enumerate(changes.get('reservations') or ()):
        # An unknown id is parse_update's to name.
        current = shown.get(item['id'])
        for field in FIXED_RESERVATION_FIELDS:
            if current and field in item and item[field] != current[field]:
                raise _invalid('reservations[%d].%s' % (index, field),
                               'it cannot change (the reservation has %r)'
                               % (current[field],))
