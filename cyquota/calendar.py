"""The calendar of leases: how much leases hold at once, for the ledger
and for device capacity alike.

Leases hold amounts for half-open windows ``[start, end)``. The checks ask
one question: the most that overlapping windows hold at any single instant
of a given span.
"""

import datetime

from oslo_utils import timeutils

# The least time a holding lasts past now.
_INSTANT = datetime.timedelta(microseconds=1)


def isotime(value):
    """A naive UTC datetime as ISO 8601 with its offset, as the API writes
    dates; None stays None."""
    if value is None:
        return None
    return value.replace(tzinfo=datetime.timezone.utc).isoformat()


def held_until(end, active, now=None):
    """When a lease's holding ends: its ``end``, or for an ``active`` lease
    past it, not before ``now`` (it holds until it is ended)."""
    if not active:
        return end
    now = now or timeutils.utcnow()
    return max(end, now + _INSTANT)


def peak(windows, start, end=None):
    """The largest sum of ``amount`` over ``windows`` (``(start, end,
    amount)`` triples, half-open) at any instant of ``[start, end)``
    (``end`` None: from ``start`` on).

    A sweep over the windows' edges, in O(n log n): at one instant a window
    that ends is gone before one that begins counts (half-open windows).
    """
    events = []
    for s, e, amount in windows:
        if e > start and (end is None or s < end):
            events.append((max(s, start), 1, amount))
            events.append((e, 0, -amount))
    held = best = 0
    for _instant, _begins, change in sorted(events):
        held += change
        best = max(best, held)
    return best
