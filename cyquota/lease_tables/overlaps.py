"""Overlapping windows: the calendar's one read of the live windows
that overlap a lease event's window, every quota level's and the devices'
asked together and sent as one query (``Overlaps``).

A check reads only the windows that overlap it (an index on ``(holder,
resource, status, start_date)`` ranges over the pending windows that
start before the new one ends; the active ones are few, bounded by limits
and capacity), from the index alone: it goes on with the rest of what the
read returns (``end_date``, ``amount``, ``lease_id``). A pending window
that overlaps another starts after the other's start less the longest
pending window (each row keeps its ``span``), so the range has both
ends: the read starts it as far back as the longest its last read found
and reads the longest beside the windows, in the same query, reading
again from further back in the seldom case that one came longer.
"""

import collections
import datetime
import functools
import typing

from oslo_utils import timeutils
import sqlalchemy as sa

from cyquota.db import backends
from cyquota.db import lease_models
from cyquota.db import placement_models
from cyquota.db import prepared
from cyquota.db import types
from cyquota.lease_tables import calendar

_reservations = lease_models.LeaseReservation.__table__
_allocations = placement_models.LeaseAllocation.__table__

#: No date before this one is stored (MySQL's DATETIME starts there).
_CALENDAR_BEGINS = datetime.datetime(1000, 1, 1)

#: The index that ranges over a level's windows, by calendar key.
_LEVEL_INDEXES = {'project_id': 'lease_reservations_project_window_idx',
                  'root_id': 'lease_reservations_root_window_idx'}

#: The longest pending span (seconds) of each table as its last read
#: found it: the next read's range starts that long before its window,
#: and the read itself says whether that was far enough.
_longest = {}


def _since(start, longest):
    """The first start of a pending window that may overlap ``start`` when
    none is longer than ``longest`` seconds (no date is before the
    calendar begins)."""
    if longest >= (start - _CALENDAR_BEGINS).total_seconds():
        return _CALENDAR_BEGINS
    return start - datetime.timedelta(seconds=longest)


def _longest_pending(conn, table):
    return conn.execute(sa.select(sa.func.max(table.c.span)).where(
        table.c.status == lease_models.PENDING)).scalar() or 0


def _conditions(table, equal, within, unequal, prefix=''):
    """Conditions on ``table``'s columns: each of ``equal`` equal to a
    bind of its name, each of ``within`` in an expanding ``<name>_in``,
    each of ``unequal`` unlike ``<name>_not`` (bind names after
    ``prefix``)."""
    c = table.c
    return ([c[name] == sa.bindparam(prefix + name) for name in equal]
            + [c[name].in_(sa.bindparam(prefix + name + '_in',
                                        expanding=True))
               for name in within]
            + [c[name] != sa.bindparam(prefix + name + '_not')
               for name in unequal])


def _flag(value, label):
    # Written out, not bound: a prepared statement's parameter in the
    # select list comes back as text.
    return sa.literal_column(str(value), sa.Integer).label(label)


class _Part(typing.NamedTuple):
    """What one ask reads: the live rows of ``table`` meeting the
    conditions ``shape`` (``_conditions``' names), ranging over
    ``index``; ``held`` names the column of what they hold.
    ``every_active``: the active rows that end before the window too (a
    device's, whose amounts its usage counts); else only those that may
    still hold at its start (``held_after``)."""

    table: sa.Table
    held: str
    index: str
    shape: tuple
    every_active: bool


def _level_part(key, unequal):
    return _Part(_reservations, 'resource', _LEVEL_INDEXES[key],
                 ((key,), ('resource',), unequal), False)


_DEVICES = _Part(_allocations, 'resource_class',
                 'lease_allocations_rp_window_idx',
                 ((), ('resource_provider_id', 'resource_class'), ()), True)


def _held_after(start, now):
    """The end after which an active window may overlap a window from
    ``start``: an active one holds until its end or now, the later
    (``held_until``), so where ``start`` is still to come, one that ends
    by ``start`` never does."""
    return start if now + calendar.INSTANT <= start else _CALENDAR_BEGINS


def _live(backend, part, number, prefix=''):
    """The pending rows of ``part`` that start in ``[since, end)`` and end
    after ``start`` (binds after ``prefix``), and the active ones (but
    for ``every_active``, those that end after ``held_after``), as two
    selects of the same columns: ``part`` (``number``), ``held``,
    ``provider_id`` (NULL for a level's), ``lease_id``, the dates
    (through ``types.read``), ``amount`` and ``pending`` (1 or 0)."""
    table = part.table
    c = table.c
    provider = (c.resource_provider_id if 'resource_provider_id' in c
                else sa.cast(sa.null(), sa.Integer))
    columns = [_flag(number, 'part'), c[part.held].label('held'),
               provider.label('provider_id'), c.lease_id,
               types.read(c.start_date).label('start_date'),
               types.read(c.end_date).label('end_date'), c.amount]
    where = _conditions(table, *part.shape, prefix=prefix)
    pending = sa.select(*columns, _flag(1, 'pending')).where(
        *where, c.status == lease_models.PENDING,
        c.start_date >= sa.bindparam(prefix + 'since'),
        c.start_date < sa.bindparam(prefix + 'end'),
        c.end_date > sa.bindparam(prefix + 'start'))
    ending = ([] if part.every_active
              else [c.end_date > sa.bindparam(prefix + 'held_after')])
    active = sa.select(*columns, _flag(0, 'pending')).where(
        *where, c.status == lease_models.ACTIVE, *ending)
    # Named, as the lease list names its own: a plan chosen from
    # statistics cannot leave the index that ranges.
    return (backend.through_index(pending, table, part.index),
            backend.through_index(active, table, part.index))


@functools.lru_cache(maxsize=None)
def _overlapping_statement(backend, parts):
    """The statement of ``Overlaps``' asks ``parts`` on ``backend``,
    built once per shape: the windows' rows of each (binds after ``p<number>_``), their
    ``longest`` NULL, and one row more for each table read, of NULLs but
    ``held`` (the table's name) and ``longest``: its longest pending span
    as the same statement sees it."""
    none = sa.cast(sa.null(), sa.Integer).label('longest')
    selects = []
    for number, part in enumerate(parts):
        selects += [each.add_columns(none)
                    for each in _live(backend, part, number, 'p%d_' % number)]
    width = len(selects[0].selected_columns) - 1
    for table in dict.fromkeys(part.table for part in parts):
        named = sa.literal_column("'%s'" % table.name, sa.String)
        selects.append(sa.select(
            sa.cast(sa.null(), sa.Integer), named,
            *[sa.null() for _column in range(width - 2)],
            sa.func.coalesce(sa.func.max(table.c.span), 0)).where(
                table.c.status == lease_models.PENDING))
    return sa.union_all(*selects)


class _Asked:
    """One ask of an ``Overlaps``: ``windows()`` reads it (with every ask
    waiting beside it) the first time, and answers in ``shaped``'s form."""

    def __init__(self, overlaps, part, params, shaped):
        self._overlaps = overlaps
        self.part = part
        self.params = params
        self._shaped = shaped
        self.rows = None

    def windows(self):
        """The answer (see the ``Overlaps`` method that asked)."""
        if self.rows is None:
            self._overlaps.send()
        return self._shaped(self.rows)


class Overlaps:
    """The live windows that overlap one lease event's window, asked by
    each quota level and by the devices, and read together: the first
    answer wanted sends every ask waiting, in one query.

    A window overlaps ``[start, end)`` when it is active (it holds until
    it is ended; active ones are few, bounded by limits and capacity) and
    ends after ``start`` or ``start`` is not yet past (a device reads
    every active one: its usage counts them), or pending and starting in
    ``[start - longest, end)``, an index range that no longer pending
    window starts before. ``longest`` is the
    longest pending span of the table as the last read found it; the
    query reads it anew, and where a longer one came meanwhile, the asks
    are read again from further back."""

    def __init__(self, conn):
        self._conn = conn
        self._waiting = []

    def _ask(self, part, params, start, end, shaped):
        asked = _Asked(self, part, dict(params, start=start, end=end),
                       shaped)
        self._waiting.append(asked)
        return asked

    def levels(self, key, holder_id, resources, start, end,
               exclude_lease=None):
        """Ask for the live lease reservations of ``resources`` at one
        level (``key``: ``project_id`` or ``root_id``, and its
        ``holder_id``) overlapping ``[start, end)``, but
        ``exclude_lease``'s; its ``windows()``: ``{resource:
        [Window]}``."""
        now = timeutils.utcnow()
        params = {key: holder_id, 'resource_in': sorted(resources),
                  'held_after': _held_after(start, now)}
        unequal = ()
        if exclude_lease is not None:
            unequal, params['lease_id_not'] = ('lease_id',), exclude_lease

        def shaped(rows):
            found = {resource: [] for resource in resources}
            for row in rows:
                found[row.held].append(_window(row, now))
            return found
        return self._ask(_level_part(key, unequal), params, start, end,
                         shaped)

    def devices(self, resource_classes, start, end, provider_ids):
        """Ask for the live lease allocations of ``resource_classes`` on
        ``provider_ids`` overlapping ``[start, end)``; its ``windows()``:
        ``{(provider_id, resource_class): [(lease_id, Window)]}``."""
        return self._ask(_DEVICES, _device_params(resource_classes,
                                                  provider_ids),
                         start, end, _device_windows)

    def send(self):
        """Read every ask waiting, in one query (two, seldom: see the
        class)."""
        waiting, self._waiting = self._waiting, []
        if not waiting:
            return
        statement = _overlapping_statement(
            backends.of(self._conn), tuple(asked.part for asked in waiting))
        while True:
            bounds = {asked.part.table.name: _longest.get(
                asked.part.table.name, 0) for asked in waiting}
            params = {}
            for number, asked in enumerate(waiting):
                prefix = 'p%d_' % number
                params.update((prefix + name, value)
                              for name, value in asked.params.items())
                params[prefix + 'since'] = _since(
                    asked.params['start'], bounds[asked.part.table.name])
            rows = prepared.execute(self._conn, statement, params).all()
            found = [[] for _asked in waiting]
            grew = False
            for row in rows:
                if row.longest is None:
                    found[row.part].append(row)
                else:
                    _longest[row.held] = row.longest
                    grew = grew or row.longest > bounds[row.held]
            if not grew:
                break
        for asked, rows in zip(waiting, found):
            asked.rows = rows


def _window(row, now):
    return calendar.Window(
        types.parsed(row.start_date),
        calendar.held_until(types.parsed(row.end_date), not row.pending, now),
        row.amount, bool(row.pending))


def _device_params(resource_classes, provider_ids):
    return {'resource_provider_id_in': sorted(set(provider_ids)),
            'resource_class_in': sorted(set(resource_classes))}


def _device_windows(rows):
    now = timeutils.utcnow()
    found = collections.defaultdict(list)
    for row in rows:
        found[row.provider_id, row.held].append(
            (row.lease_id, _window(row, now)))
    return dict(found)


def device_windows(conn, resource_classes, start, end, provider_ids):
    """``Overlaps.devices``' answer, read with shared locks (after the
    providers are locked), the longest pending span read first (a locking
    read cannot take an aggregate), in three queries."""
    pending, active = _live(backends.of(conn), _DEVICES, 0)
    params = dict(_device_params(resource_classes, provider_ids),
                  start=start, end=end,
                  since=_since(start, _longest_pending(conn, _allocations)))
    return _device_windows([
        row for query in (pending, active)
        for row in conn.execute(query.with_for_update(read=True), params)])

