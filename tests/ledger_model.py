"""A plain in-memory model of the ledger's books, and the same books read
from the database, for the model-based tests (``tests.ledger_machine``).

The books: per (project, resource) ``used``, ``reserved`` and ``leased``,
what each consumer holds, the drift events, the reservation rows, and the
devices claimed (which provider serves each consumer, and how much); and
the meter of each pair, what it held (``used - leased``) integrated over
time (``Meters``).
"""

import collections
import dataclasses
import datetime
import re
import typing

import sqlalchemy as sa

from cyquota.db import api as db_api
from cyquota.db import meter
from cyquota.db import models
from cyquota.db import placement_models


@dataclasses.dataclass
class Row:
    """A reservation row as the model sees it."""

    uuid: str
    project: str
    resource: str
    delta: int
    expire: datetime.datetime
    request_id: str
    consumer: str
    status: str = models.RESERVED
    finished: datetime.datetime = None
    #: Whether its reserve claimed the consumer's devices.
    devices: bool = False


@dataclasses.dataclass
class Books:
    """Every count the ledger keeps: usages, consumers and drift events."""

    used: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    reserved: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    leased: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    consumers: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)
    drift: collections.Counter = dataclasses.field(
        default_factory=collections.Counter)

    def _counts(self):
        return (self.used, self.reserved, self.leased, self.consumers,
                self.drift)

    def __eq__(self, other):
        # Counter's unary + drops zero entries: a zero row equals no row.
        return all(+a == +b for a, b in zip(self._counts(),
                                             other._counts()))

    def take(self, field, key, amount):
        """Take ``amount`` off a count, stopping at zero; returns what was
        taken."""
        counter = getattr(self, field)
        applied = min(amount, counter[key])
        counter[key] -= applied
        return applied

    def record(self, key, consumer, kind, requested, applied):
        self.drift[key + (consumer, kind, requested, applied)] += 1

    def consumer_add(self, project, resource, consumer, delta):
        key = (project, resource, consumer or '')
        if self.consumers[key] + delta >= 0:
            self.consumers[key] += delta
        else:
            held, self.consumers[key] = self.consumers[key], 0
            self.record((project, resource), consumer,
                        'consumer_release_below_zero', -delta, held)

    def holds(self, project, consumer):
        """Whether ``consumer`` uses anything of ``project``'s."""
        return any(self.consumers[key] for key in self.consumers
                   if key[0] == project and key[2] == consumer)

    def settle(self, row, target):
        """Commit, roll back or expire one reserved row."""
        key = (row.project, row.resource)
        if row.delta > 0:
            given = self.take('reserved', key, row.delta)
            if given < row.delta:
                self.record(key, row.consumer, 'reserved_below_zero',
                            row.delta, given)
        if target != models.COMMITTED:
            return
        if row.delta > 0:
            self.used[key] += row.delta
        else:
            applied = self.take('used', key, -row.delta)
            if applied < -row.delta:
                self.record(key, row.consumer, 'used_below_zero', row.delta,
                            -applied)
        self.consumer_add(row.project, row.resource, row.consumer, row.delta)

    def release(self, project, resource, amount, consumer):
        """Take ``amount`` off ``used`` at once; returns what was taken."""
        key = (project, resource)
        applied = self.take('used', key, amount)
        if applied < amount:
            self.record(key, consumer, 'release_below_zero', amount, applied)
        self.consumer_add(project, resource, consumer, -amount)
        return applied

    def lease_start(self, project, resource, amount, lease_id):
        """An active lease holds ``amount``: in ``used`` and ``leased``,
        the lease its consumer."""
        self.used[(project, resource)] += amount
        self.leased[(project, resource)] += amount
        self.consumer_add(project, resource, lease_id, amount)

    def lease_end(self, project, resource, amount, lease_id):
        """An active lease gives ``amount`` back, never below zero."""
        key = (project, resource)
        self.take('leased', key, amount)
        applied = self.take('used', key, amount)
        if applied < amount:
            self.record(key, lease_id, 'used_below_zero', amount, applied)
        self.consumer_add(project, resource, lease_id, -amount)


@dataclasses.dataclass
class Devices:
    """The devices as the model sees them: the room of each provider
    (``{provider id: total}``, of one class) and what each consumer that
    claimed holds (``{consumer: (provider id, amount)}``)."""

    room: dict
    held: dict = dataclasses.field(default_factory=dict)

    def first_with_room(self, amount):
        """The provider a claim of ``amount`` takes: the first, in id
        order, with room for all of it (a claim is never split); None if
        none has."""
        used = collections.Counter()
        for provider, taken in self.held.values():
            used[provider] += taken
        return next((provider for provider, total in sorted(self.room.items())
                     if total - used[provider] >= amount), None)

    def allocations(self, resource_class):
        """The allocation rows they should be: ``(consumer, provider id,
        class, amount)`` sorted."""
        return sorted((consumer, provider, resource_class, amount)
                      for consumer, (provider, amount) in self.held.items())


# An UPDATE of the usage rows (MariaDB's may name an index) and its SET
# clause; and a column it assigns (``name=``: comparisons are spaced).
_USAGE_UPDATE = re.compile(
    r'UPDATE quota_usages\b(?:(?!\bSET\b).)*?\bSET\s(.*?)'
    r'(?=\sFROM\s|\sWHERE\s|\sRETURNING\s|;|$)', re.S)
_ASSIGNED = re.compile(r'(?<![\w.<>!])(\w+)=')
#: The meter's SET terms, first in every write of used or leased.
METER_TERMS = ('metered_mark', 'metered', 'metered_at', 'marked_period')


def unmetered_writes(statement):
    """The SET clauses of the UPDATEs of ``quota_usages`` in
    ``statement`` (SQL text) that change ``used`` or ``leased`` without
    first moving the meter (``METER_TERMS``, before any other term:
    MariaDB evaluates them left to right)."""
    return [clause for clause in _USAGE_UPDATE.findall(statement)
            if {'used', 'leased'} & set(_ASSIGNED.findall(clause))
            and tuple(_ASSIGNED.findall(clause)[:4]) != METER_TERMS]


class Meters:
    """What each (project, resource) held by attaches (``used - leased``)
    from each instant on (Unix seconds), and its integral: the meter the
    usage row must show, exact to the second."""

    def __init__(self):
        #: ``{key: [(since, holding), ...]}``, in time order.
        self._steps = collections.defaultdict(list)

    def follow(self, books, second):
        """The holdings of ``books`` are in force from ``second`` on."""
        for key in set(books.used) | set(books.leased):
            holding = books.used[key] - books.leased[key]
            steps = self._steps[key]
            if (steps[-1][1] if steps else 0) != holding:
                steps.append((second, holding))

    def keys(self):
        return set(self._steps)

    def at(self, key, second):
        """The meter of ``key`` at ``second``: unit-seconds held before
        it."""
        steps = self._steps.get(key, [])
        ends = [since for since, _held in steps[1:]] + [second]
        return sum(held * (min(end, second) - since)
                   for (since, held), end in zip(steps, ends)
                   if since < second)


class Metered(typing.NamedTuple):
    """A usage row's meter and budget as the database holds them."""

    metered: int
    metered_at: typing.Optional[int]
    holding: int
    metered_mark: typing.Optional[int]
    marked_period: typing.Optional[int]
    budget_base: typing.Optional[int]

    def at(self, second):
        """Its meter at ``second``, as the ledger reads it."""
        return meter.value_at(self.metered, self.metered_at, self.holding,
                              second)


#: The meter of a pair that has no usage row.
NO_ROW = Metered(0, None, 0, None, None, None)


def set_budget_base(project, resource, base):
    """Write ``budget_base`` of a usage row as the budgets' layer does
    (None: no budget)."""
    usages = models.QuotaUsage.__table__
    with db_api.get_engine().begin() as conn:
        assert conn.execute(
            usages.update().where(usages.c.project_id == project,
                                  usages.c.resource == resource)
            .values(budget_base=base)).rowcount == 1


def database_books():
    """The books as the database holds them: ``(Books, {reservation uuid:
    (status, expire)}, {(project, resource): Metered})``."""
    books = Books()
    meters = {}
    tables = models.Base.metadata.tables
    with db_api.get_engine().connect() as conn:
        for row in conn.execute(sa.select(tables['quota_usages'])):
            key = (row.project_id, row.resource)
            books.used[key] = row.used
            books.reserved[key] = row.reserved
            books.leased[key] = row.leased
            meters[key] = Metered(
                row.metered, row.metered_at, row.used - row.leased,
                row.metered_mark, row.marked_period, row.budget_base)
        for row in conn.execute(sa.select(tables['consumer_usages'])):
            books.consumers[(row.project_id, row.resource,
                             row.consumer_id)] = row.used
        for row in conn.execute(sa.select(tables['drift_events'])):
            books.drift[(row.project_id, row.resource, row.consumer_id,
                         row.kind, row.requested, row.applied)] += 1
        table = tables['reservations']
        reservations = {row.uuid: (row.status, row.expire) for row in
                        conn.execute(sa.select(table.c.uuid, table.c.status,
                                               table.c.expire))}
    return books, reservations, meters


def database_devices():
    """The device claims as the database holds them: ``(allocation rows
    as ``Devices.allocations`` gives them, the consumers' ids sorted)``."""
    allocations = placement_models.DeviceAllocation.__table__
    consumers = placement_models.DeviceConsumer.__table__
    with db_api.get_engine().connect() as conn:
        rows = sorted(tuple(row) for row in conn.execute(sa.select(
            allocations.c.consumer_id, allocations.c.resource_provider_id,
            allocations.c.resource_class, allocations.c.used)))
        holders = sorted(conn.execute(
            sa.select(consumers.c.consumer_id)).scalars())
    return rows, holders
