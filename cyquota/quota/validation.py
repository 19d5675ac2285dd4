"""Checks of caller input, done before any database work.

Each check raises a specific ``cyquota.exception.Invalid`` subclass with a
message naming the bad value, so bad input changes nothing.
"""

import datetime
import re

from oslo_utils import timeutils

from cyquota.conf import CONF
from cyquota.db.models import MAX_COUNT
from cyquota import exception
from cyquota.quota import resources

# Keystone ids are 32 hex digits; names of test and legacy projects are
# also accepted, within the length of Keystone's id column.
_PROJECT_ID = re.compile(r'^[A-Za-z0-9_-]{1,64}$')
_ID = re.compile(r'^[\x21-\x7e]{1,255}$')
_UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}$')
# Ten years: far enough for any lease, near enough to stay a sane date.
_MAX_EXPIRE = datetime.timedelta(days=3650)


#: Why an aware date is refused when UTC has no room for it.
OUTSIDE_UTC = 'it leaves the years 1-9999 once moved to UTC'


def naive_utc(value):
    """The aware datetime ``value`` as naive UTC; ValueError
    (``OUTSIDE_UTC``) when UTC has no such date (``0001-01-01T00:00+01:00``,
    ``9999-12-31T23:30-01:00``)."""
    try:
        return timeutils.normalize_time(value)
    except OverflowError:
        raise ValueError(OUTSIDE_UTC)


def project_id(value):
    if not isinstance(value, str) or not _PROJECT_ID.match(value):
        raise exception.InvalidProjectId(
            project_id=value,
            reason='expected 1 to 64 letters, digits, "-" or "_"')
    return value


def optional_id(name, value):
    """A request or consumer id: None, or 1-255 printable ASCII chars."""
    if value is None:
        return None
    if not isinstance(value, str) or not _ID.match(value):
        raise exception.Invalid(
            reason='%s must be 1 to 255 printable ASCII characters without '
                   'spaces, got %r' % (name, value))
    return value


def amount(resource, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise exception.InvalidDelta(
            resource=resource, reason='%r is not an integer' % (value,))
    if value == 0:
        raise exception.InvalidDelta(resource=resource,
                                     reason='a delta may not be zero')
    if abs(value) > MAX_COUNT:
        raise exception.InvalidDelta(
            resource=resource,
            reason='%d is beyond the largest count, %d' % (value, MAX_COUNT))
    return value


def deltas(value, positive=False):
    """A non-empty {resource: non-zero int} dict, sorted by resource."""
    if not isinstance(value, dict) or not value:
        raise exception.Invalid(
            reason='deltas must be a non-empty object of resource: amount, '
                   'got %r' % (value,))
    result = {}
    for name in sorted(value, key=str):
        resources.check_resource(name)
        delta = amount(name, value[name])
        if positive and delta < 0:
            raise exception.InvalidDelta(
                resource=name, reason='%d: amounts to release must be '
                                      'positive' % delta)
        result[name] = delta
    return result


def expire(value, now=None):
    """When a reservation expires, as naive UTC.

    ``value``: None (the configured default), seconds from now (int or
    float), an aware datetime or an ISO 8601 string with a UTC offset.
    """
    now = now or timeutils.utcnow()
    if value is None:
        return now + datetime.timedelta(
            seconds=CONF.quota.reservation_expire)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not 0 < value <= _MAX_EXPIRE.total_seconds():
            raise exception.InvalidExpire(
                expire=value, reason='seconds from now must be above 0 and '
                'at most %d' % _MAX_EXPIRE.total_seconds())
        return now + datetime.timedelta(seconds=value)
    given = value.isoformat() if isinstance(value, datetime.datetime) \
        else value
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(
                value.replace('Z', '+00:00'))
        except ValueError:
            raise exception.InvalidExpire(
                expire=given, reason='not an ISO 8601 date and time')
    if not isinstance(value, datetime.datetime):
        raise exception.InvalidExpire(
            expire=given, reason='expected seconds, a datetime or an ISO '
                                 '8601 string')
    if value.tzinfo is None:
        raise exception.InvalidExpire(
            expire=given, reason='a date must carry its UTC offset')
    try:
        value = naive_utc(value)
    except ValueError as error:
        raise exception.InvalidExpire(expire=given, reason=str(error))
    if value <= now:
        raise exception.InvalidExpire(expire=given,
                                      reason='it is not in the future')
    if value - now > _MAX_EXPIRE:
        raise exception.InvalidExpire(expire=given,
                                      reason='more than ten years ahead')
    return value


def reservation_uuids(value):
    """A non-empty list of reservation uuids, duplicates dropped."""
    if not isinstance(value, (list, tuple)) or not value:
        raise exception.InvalidReservationList(
            reason='expected a non-empty list of uuids, got %r' % (value,))
    result = []
    for item in value:
        if not isinstance(item, str) or not _UUID.match(item):
            raise exception.InvalidReservationList(
                reason='%r is not a reservation uuid' % (item,))
        if item not in result:
            result.append(item)
    return result


def limit(resource, value):
    """A limit: -1 (unlimited) or 0 .. MAX_COUNT."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise exception.InvalidLimit(
            resource=resource, reason='%r is not an integer' % (value,))
    if not -1 <= value <= MAX_COUNT:
        raise exception.InvalidLimit(
            resource=resource,
            reason='%d is outside -1 (unlimited) .. %d' % (value, MAX_COUNT))
    return value


def device_request(request, deltas):
    """``request`` (a parsed device request) if its totals are the
    positive ``deltas``; raises Invalid naming the mismatch."""
    wanted = {r: d for r, d in deltas.items() if d > 0}
    if request.totals() != wanted:
        raise exception.Invalid(
            reason='devices ask for %s but the positive deltas are %s' % (
                _show(request.totals()), _show(wanted)))
    return request


def _show(amounts):
    return ', '.join('%s: %d' % kv for kv in sorted(amounts.items())) \
        or 'nothing'
