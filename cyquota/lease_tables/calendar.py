"""The calendar of leases: the one reader of lease windows, for the ledger
and for device capacity alike.

Leases hold amounts for half-open windows ``[start, end)``: a lease's
resources in ``lease_reservations`` (by project and by tree root), its
devices in ``lease_allocations`` (by provider). Both carry the lease's
window and status (``records`` writes them), and the calendar alone reads
them by time and status; callers get ``Window`` tuples and peaks, never
rows or statuses.

The checks ask one question: the most that overlapping windows hold at
any single instant of a new window. One event's reads, each quota
level's and the devices', go as one query (``overlaps.Overlaps``).
``promised`` asks for the peak of pending windows from now on; the
database computes it (a running sum over the windows' edges), so no
window travels.
"""

import collections
import datetime
import functools

from oslo_utils import timeutils
import sqlalchemy as sa

from cyquota.db import lease_models
from cyquota.db import placement_models
from cyquota.db import types

_reservations = lease_models.LeaseReservation.__table__
_allocations = placement_models.LeaseAllocation.__table__

#: The least time a holding lasts past now.
INSTANT = datetime.timedelta(microseconds=1)

#: A lease's holding over ``[start, end)``; ``pending``: not started yet.
Window = collections.namedtuple('Window', 'start end amount pending')


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
    return max(end, now + INSTANT)


def peak(windows, start, end=None):
    """The largest sum of ``amount`` over ``windows`` (``(start, end,
    amount, ...)`` tuples, half-open) at any instant of ``[start, end)``
    (``end`` None: from ``start`` on)."""
    return peak_at(windows, start, end)[0]


def peak_at(windows, start, end=None):
    """``(peak, instant)``: ``peak`` and the first instant that holds it
    (None when nothing does).

    A sweep over the windows' edges, in O(n log n): at one instant a window
    that ends is gone before one that begins counts (half-open windows).
    """
    events = []
    for s, e, amount, *_rest in windows:
        if e > start and (end is None or s < end):
            events.append((max(s, start), 1, amount))
            events.append((e, 0, -amount))
    held = best = 0
    at = None
    for instant, _begins, change in sorted(events):
        held += change
        if held > best:
            best, at = held, instant
    return best, at


@functools.lru_cache(maxsize=None)
def _peaks_statement(table, groups, equal, within):
    """The statement of ``_pending_peaks``, built once per shape: bound
    ``now``, ``<column>`` for each of ``equal`` and an expanding
    ``<column>_in`` for each of ``within``."""
    c = table.c
    now = sa.bindparam('now', type_=types.DateTime)
    where = ([c.status == lease_models.PENDING, c.end_date > now]
             + [c[name] == sa.bindparam(name) for name in equal]
             + [c[name].in_(sa.bindparam(name + '_in', expanding=True))
                for name in within])
    begins = sa.case((c.start_date < now, now), else_=c.start_date)
    columns = [c[name] for name in groups]
    edges = sa.union_all(
        sa.select(*columns, begins.label('at'), sa.literal(1).label('opens'),
                  c.amount.label('change')).where(*where),
        sa.select(*columns, c.end_date.label('at'),
                  sa.literal(0).label('opens'),
                  (sa.literal(0) - c.amount).label('change')).where(*where),
    ).subquery()
    keys = [edges.c[name] for name in groups]
    running = sa.select(*keys, edges.c.at, sa.func.sum(edges.c.change).over(
        partition_by=keys, order_by=(edges.c.at, edges.c.opens),
        rows=(None, 0)).label('held')).subquery()
    keys = [running.c[name] for name in groups]
    ranked = sa.select(*keys, running.c.held, running.c.at,
                       sa.func.row_number().over(
                           partition_by=keys,
                           order_by=(running.c.held.desc(), running.c.at))
                       .label('rank')).subquery()
    return (sa.select(*[ranked.c[name] for name in groups], ranked.c.held,
                      ranked.c.at).where(ranked.c.rank == 1))


def _pending_peaks(conn, table, groups, now, equal=None, within=None):
    """``{group values: (peak, instant)}``: the most that pending rows of
    ``table`` hold at one instant from ``now`` on, per ``groups`` (column
    names), and the first instant that holds it, of the rows whose columns
    ``equal`` (``{column: value}``) and are ``within`` (``{column:
    values}``); computed by the database: a running sum of the windows'
    edges, ends before starts at one instant."""
    equal, within = equal or {}, within or {}
    statement = _peaks_statement(table, groups, tuple(sorted(equal)),
                                 tuple(sorted(within)))
    params = dict(equal, now=now)
    params.update((name + '_in', sorted(values))
                  for name, values in within.items())
    return {tuple(row[:-2]): (int(row[-2]), _instant(row[-1]))
            for row in conn.execute(statement, params)}


def _instant(value):
    # MySQL types a CASE of a column and a parameter as text.
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


def promised(conn, key, holder_id, resources, now=None):
    """``{resource: (peak, instant)}`` of the pending lease reservations
    of one level from ``now`` on (``(0, None)`` when none), in one
    query."""
    peaks = _pending_peaks(conn, _reservations, ('resource',),
                           now or timeutils.utcnow(), equal={key: holder_id},
                           within={'resource': resources})
    return {resource: peaks.get((resource,), (0, None))
            for resource in resources}


def device_promised(conn, provider_ids, now=None):
    """``{(provider_id, resource_class): peak}`` of the pending lease
    allocations on ``provider_ids`` from ``now`` on, in one query."""
    if not provider_ids:
        return {}
    return {key: found[0] for key, found in _pending_peaks(
        conn, _allocations, ('resource_provider_id', 'resource_class'),
        now or timeutils.utcnow(),
        within={'resource_provider_id': provider_ids}).items()}


def pending_on(provider_id, resource_class):
    """SQL: whether a pending lease allocation of ``resource_class`` is on
    provider ``provider_id`` (columns of the caller's statement), an index
    lookup; where none is, ``device_promised`` has no peak to read."""
    c = _allocations.c
    return sa.exists().where(c.resource_provider_id == provider_id,
                             c.resource_class == resource_class,
                             c.status == lease_models.PENDING)


def lease_devices(conn, lease_ids):
    """``{lease reservation id: [(provider_id, rc, amount)]}``: the devices
    chosen for ``lease_ids``, in one query (in the order they were
    chosen), a device's parts summed (a lease that grew can hold two on
    one device)."""
    c = _allocations.c
    found = collections.defaultdict(dict)
    for key, provider_id, rc, amount in conn.execute(
            sa.select(c.lease_reservation_id, c.resource_provider_id,
                      c.resource_class, c.amount)
            .where(c.lease_id.in_(lease_ids)).order_by(c.id)):
        parts = found[key]
        parts[provider_id, rc] = parts.get((provider_id, rc), 0) + amount
    return {key: [(provider_id, rc, amount)
                  for (provider_id, rc), amount in parts.items()]
            for key, parts in found.items()}


def lease_reservations(conn, lease_ids):
    """The reservation rows of ``lease_ids``, in one query, each lease's
    in request order."""
    c = _reservations.c
    return conn.execute(sa.select(_reservations)
                        .where(c.lease_id.in_(lease_ids))
                        .order_by(c.lease_id, c.position)).all()


def promised_on(conn, provider_id):
    """Whether a live lease holds or is promised the provider."""
    c = _allocations.c
    return conn.execute(
        sa.select(c.id).where(c.resource_provider_id == provider_id,
                              c.status.in_(lease_models.LIVE)).limit(1)
    ).first() is not None


def active_leases():
    """A subquery of the ids of active leases (consumers of their own
    quota)."""
    leases = lease_models.Lease.__table__
    return sa.select(leases.c.id).where(
        leases.c.status == lease_models.ACTIVE)


#: A copy of a lease's status or window that is not the lease's own:
#: ``copy`` names its table and ``row`` its id there; ``lease_says`` is
#: None where no lease has the copy's ``lease_id``.
Disagreement = collections.namedtuple('Disagreement', [
    'lease_id', 'project_id', 'copy', 'row', 'field', 'lease_says',
    'copy_says'])

#: What each copy repeats of its lease.
_COPIED = ('status', 'start_date', 'end_date')


def disagreements(conn, project_id=None):
    """Every ``Disagreement`` of the lease records (``project_id``'s only
    when given), in lease order: each copy of a lease's status and window
    in ``lease_reservations`` and ``lease_allocations`` that is not the
    one in ``leases``, or whose lease is gone; two queries."""
    leases = lease_models.Lease.__table__
    found = []
    for copy, project in ((_reservations, _reservations.c.project_id),
                          (_allocations, leases.c.project_id)):
        c = copy.c
        query = (sa.select(c.lease_id, c.id, project.label('project_id'),
                           leases.c.id.label('lease'),
                           *[leases.c[name].label('lease_' + name)
                             for name in _COPIED],
                           *[c[name] for name in _COPIED])
                 .select_from(copy.outerjoin(leases,
                                             leases.c.id == c.lease_id))
                 .where(sa.or_(leases.c.id.is_(None),
                               *[leases.c[name] != c[name]
                                 for name in _COPIED]))
                 .order_by(c.lease_id, c.id))
        if project_id is not None:
            query = query.where(project == project_id)
        for row in conn.execute(query):
            for name in _COPIED:
                says = None if row.lease is None else row._mapping[
                    'lease_' + name]
                if says != row._mapping[name]:
                    found.append(Disagreement(
                        row.lease_id, row.project_id, copy.name, row.id,
                        name, says, row._mapping[name]))
    return sorted(found, key=lambda each: (each.lease_id, each.copy,
                                           str(each.row), each.field))
