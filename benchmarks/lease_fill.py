"""Calendars of live leases for the lease calendar benchmark, written in
bulk as the engine would have left them, and the check that their books
are right.

A calendar: ``DEVICES`` devices (``PER_NODE`` to a compute node, each with
``CAPACITY`` FPGAs), ``PROJECTS`` projects, and leases of one FPGA each on
one device: ``PENDING`` ones spread over the next 90 days (none starting
within a day, so none comes due while the benchmark runs) and, one lease
in ``ACTIVE_EVERY``, an ``ACTIVE`` one that began in the last three days
and ends within the 90. Each device has ``LANES`` lanes of consecutive
slots, and a pending lease lies in one slot of one lane, so that a device
never holds more than ``LANES`` pending leases and one active lease at
once: every calendar fits its devices, as the engine would have kept it.
``plan`` lays out the largest calendar; a smaller one is its first leases,
as spread over the days, devices and projects.

What the engine writes for a lease, the fill writes too: ``leases``,
``lease_reservations`` (the window, status and tree root copied) and
``lease_allocations``; for an active lease its ``device_consumers`` and
``device_allocations`` rows (the lease as the consumer) and its
``consumer_usages`` row; and every project's ``quota_usages`` row of FPGA:
``used`` and ``leased`` what its active leases hold, ``promised`` the peak
of its pending leases from now on and ``promised_at`` the first instant
that holds it, as lease events keep them.
"""

import collections
import dataclasses
import datetime
import math
import random
import uuid

import sqlalchemy as sa

from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import placement_models
from cyquota.lease_tables import calendar
from cyquota import quota

RESOURCE = 'FPGA'
DEVICES = 1000
PER_NODE = 10
CAPACITY = 4
PROJECTS = 200
LANES = 2
ACTIVE_EVERY = 100
HORIZON = datetime.timedelta(days=90)
#: No pending lease of a calendar starts sooner.
LEAD = datetime.timedelta(days=1)
#: A project's limit of FPGA: finite, so that a lease's window is
#: checked against the project's calendar.
LIMIT = 10 ** 6
_CHUNK = 10000

_rp = placement_models.ResourceProvider.__table__
_inventories = placement_models.Inventory.__table__
_leases = lease_models.Lease.__table__
_reservations = lease_models.LeaseReservation.__table__
_lease_allocations = placement_models.LeaseAllocation.__table__
_device_allocations = placement_models.DeviceAllocation.__table__
_device_consumers = placement_models.DeviceConsumer.__table__
_consumer_usages = models.ConsumerUsage.__table__
_usages = models.QuotaUsage.__table__


@dataclasses.dataclass(frozen=True)
class Planned:
    """One lease of a calendar: ``device`` is an index into the devices
    in id order; the window is naive UTC."""

    id: str
    reservation_id: str
    project_id: str
    device: int
    start: datetime.datetime
    end: datetime.datetime
    status: str


def project(number):
    """The name of a calendar's project ``number``."""
    return 'bench-p%03d' % number


def _seconds(moment):
    return moment.replace(microsecond=0)


def _uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def plan(largest, now, devices=DEVICES, seed=28):
    """The leases of the largest calendar, in fill order (a calendar of
    ``size`` is the first ``size``), around ``now`` (naive UTC), on
    ``devices`` devices (at least one active lease's each)."""
    rng = random.Random(seed)
    actives = math.ceil(largest / ACTIVE_EVERY)
    pending = largest - actives
    slots = max(1, math.ceil(pending / (devices * LANES)))
    length = (HORIZON - LEAD) / slots
    first = now + LEAD
    # A cell is (device, lane, slot): one pending lease each.
    cells = iter(rng.sample(range(devices * LANES * slots), pending))
    active_devices = iter(rng.sample(range(devices), actives))
    planned = []
    for position in range(largest):
        if position % ACTIVE_EVERY == 0:
            device = next(active_devices)
            start = now - datetime.timedelta(hours=rng.uniform(1, 72))
            end = first + rng.uniform(0, 1) * (HORIZON - LEAD)
            status = lease_models.ACTIVE
        else:
            device, lane_slot = divmod(next(cells), LANES * slots)
            start = first + (lane_slot % slots + rng.uniform(0, 0.5)) * length
            end = start + rng.uniform(0.2, 0.5) * length
            status = lease_models.PENDING
        planned.append(Planned(
            _uuid(rng), _uuid(rng), project(rng.randrange(PROJECTS)), device,
            _seconds(start), _seconds(end), status))
    return planned


def due(count, now, seed, devices=DEVICES):
    """``count`` pending leases whose start came 20 s ago and that end in
    a second, spread over the ``devices`` and the projects: a batch for
    the conductor's sweeps."""
    rng = random.Random(seed)
    start = _seconds(now) - datetime.timedelta(seconds=20)
    end = _seconds(now) + datetime.timedelta(seconds=1)
    return [Planned(_uuid(rng), _uuid(rng), project(rng.randrange(PROJECTS)),
                    number % devices, start, end, lease_models.PENDING)
            for number in range(count)]


def add_devices(conn, count, per_node=PER_NODE, total=CAPACITY):
    """``count`` devices with ``total`` FPGAs each, children of compute
    nodes (``per_node`` each), in bulk; returns their provider ids in id
    order."""
    nodes = math.ceil(count / per_node)
    conn.execute(_rp.insert(), [
        dict(uuid=str(uuid.uuid4()), name='bench-node-%05d' % n,
             generation=0) for n in range(nodes)])
    conn.execute(_rp.update().where(_rp.c.root_provider_id.is_(None))
                 .values(root_provider_id=_rp.c.id))
    node_ids = dict(conn.execute(sa.select(_rp.c.name, _rp.c.id).where(
        _rp.c.parent_provider_id.is_(None))).all())
    for first in range(0, count, _CHUNK):
        conn.execute(_rp.insert(), [
            dict(uuid=str(uuid.uuid4()), name='bench-device-%05d' % d,
                 generation=0, parent_provider_id=node,
                 root_provider_id=node)
            for d in range(first, min(count, first + _CHUNK))
            for node in [node_ids['bench-node-%05d' % (d // per_node)]]])
    ids = conn.execute(sa.select(_rp.c.id).where(
        _rp.c.parent_provider_id.isnot(None)).order_by(_rp.c.id)
    ).scalars().all()
    conn.execute(_inventories.insert(), [
        dict(resource_provider_id=provider_id, resource_class=RESOURCE,
             total=total, reserved=0, min_unit=1, max_unit=total,
             step_size=1, allocation_ratio=1.0) for provider_id in ids])
    return ids


def fill(planned, now, devices=DEVICES):
    """``devices`` devices, the FPGA limit, and the leases ``planned``
    with every project's usage row, in the database cyquota points at;
    returns the devices' provider ids."""
    ctx = cyquota_context.get_admin_context()
    quota.QUOTAS.limits.set_registered_limit(ctx, RESOURCE, LIMIT)
    with db_api.get_engine().begin() as conn:
        device_ids = add_devices(conn, devices)
    write(planned, device_ids)
    active = collections.Counter(p.project_id for p in planned
                                 if p.status == lease_models.ACTIVE)
    promised = _promised(planned, now)
    with db_api.get_engine().begin() as conn:
        conn.execute(_usages.insert(), [
            dict(project_id=project(n), resource=RESOURCE,
                 used=active[project(n)], leased=active[project(n)],
                 reserved=0, promised=promised.get(project(n), (0, None))[0],
                 promised_at=promised.get(project(n), (0, None))[1])
            for n in range(PROJECTS)])
    return device_ids


def _promised(planned, now):
    """``{project_id: (peak, instant)}`` of the pending leases from
    ``now`` on (``calendar.peak_at``)."""
    windows = collections.defaultdict(list)
    for p in planned:
        if p.status == lease_models.PENDING:
            windows[p.project_id].append((p.start, p.end, 1))
    return {project_id: calendar.peak_at(found, now)
            for project_id, found in windows.items()}


def write(planned, device_ids):
    """The rows of the leases ``planned``, in bulk: a lease, its
    reservation and its device's lease allocation each, and an active
    one's device and consumer rows."""
    now = models.utcnow()
    for first in range(0, len(planned), _CHUNK):
        chunk = planned[first:first + _CHUNK]
        window = [dict(start_date=p.start, end_date=p.end, status=p.status,
                       created_at=now) for p in chunk]
        active = [p for p in chunk if p.status == lease_models.ACTIVE]
        with db_api.get_engine().begin() as conn:
            conn.execute(_leases.insert(), [
                dict(w, id=p.id, project_id=p.project_id, user_id=None,
                     name=p.id) for p, w in zip(chunk, window)])
            conn.execute(_reservations.insert(), [
                dict(w, id=p.reservation_id, lease_id=p.id, position=0,
                     project_id=p.project_id, root_id=p.project_id,
                     resource=RESOURCE, amount=1, member_of='[]',
                     member_key=None) for p, w in zip(chunk, window)])
            conn.execute(_lease_allocations.insert(), [
                dict(w, lease_id=p.id, lease_reservation_id=p.reservation_id,
                     resource_provider_id=device_ids[p.device],
                     resource_class=RESOURCE, amount=1)
                for p, w in zip(chunk, window)])
            if active:
                conn.execute(_device_consumers.insert(), [
                    dict(consumer_id=p.id, project_id=p.project_id,
                         user_id=None, created_at=now) for p in active])
                conn.execute(_device_allocations.insert(), [
                    dict(resource_provider_id=device_ids[p.device],
                         consumer_id=p.id, resource_class=RESOURCE, used=1,
                         created_at=now) for p in active])
                conn.execute(_consumer_usages.insert(), [
                    dict(project_id=p.project_id, resource=RESOURCE,
                         consumer_id=p.id, used=1, created_at=now)
                    for p in active])


def add_due(calendar_planned, batch, device_ids, now):
    """Write the pending leases of ``batch`` into a calendar of
    ``calendar_planned``, and the new ``promised`` (and its instant) of
    their projects."""
    write(batch, device_ids)
    promised = _promised(calendar_planned + batch, now)
    with db_api.get_engine().begin() as conn:
        for project_id in sorted({p.project_id for p in batch}):
            peak, instant = promised[project_id]
            conn.execute(_usages.update().where(
                _usages.c.project_id == project_id,
                _usages.c.resource == RESOURCE).values(
                    promised=peak, promised_at=instant))


def analyze(backend):
    """Fresh planner statistics, as autovacuum (and InnoDB) would have
    after a gradual growth; on PostgreSQL the tables vacuumed too, as
    autovacuum does after inserts, so that an index-only scan reads no
    table page whose rows are all visible."""
    statement = {'mysql': 'ANALYZE TABLE leases, lease_reservations, '
                          'lease_allocations, device_allocations, '
                          'resource_providers, provider_inventories',
                 'postgresql': 'VACUUM ANALYZE'}.get(backend, 'ANALYZE')
    # VACUUM runs outside a transaction.
    with db_api.get_engine().connect().execution_options(
            isolation_level='AUTOCOMMIT') as conn:
        conn.exec_driver_sql(statement).close()


def check(statuses):
    """What is wrong with the books of the calendar cyquota points at,
    which should hold ``statuses`` (``{status: leases}``): what
    ``cyquota-manage quota check`` finds (``used`` and ``reserved``
    against the consumers' holdings and the reservations, drift events);
    the leases by status; each lease with one reservation and one lease
    allocation of its window and status; each project's ``used``,
    ``leased`` (its active leases), ``reserved`` (none) and ``promised``
    (the peak of its pending leases from now on); each device's
    allocations (its active leases'), consumers (the active leases) and,
    at every instant, its live leases within its capacity."""
    problems = []
    findings = quota.QUOTAS.check_drift(cyquota_context.get_admin_context())
    if findings:
        problems.append('quota check: %d counts, %d events, %d reports, '
                        '%d trees, %d lease copies drift' % (
                            len(findings.counts), len(findings.events),
                            len(findings.reports), len(findings.trees),
                            len(findings.leases)))
    with db_api.get_engine().connect() as conn:
        found = dict(conn.execute(sa.select(_leases.c.status, sa.func.count())
                                  .group_by(_leases.c.status)).all())
        if found != {s: n for s, n in statuses.items() if n}:
            problems.append('leases %s, not %s' % (found, statuses))
        problems += _lease_rows(conn, sum(found.values()))
        reservations = conn.execute(sa.select(
            _reservations.c.project_id, _reservations.c.start_date,
            _reservations.c.end_date, _reservations.c.amount,
            _reservations.c.status)).all()
        problems += _usage_rows(conn, reservations)
        problems += _devices(conn)
    return problems


def _lease_rows(conn, leases):
    joined = conn.execute(
        sa.select(sa.func.count()).select_from(_leases.join(
            _reservations, sa.and_(
                _reservations.c.lease_id == _leases.c.id,
                _reservations.c.project_id == _leases.c.project_id,
                _reservations.c.start_date == _leases.c.start_date,
                _reservations.c.end_date == _leases.c.end_date,
                _reservations.c.status == _leases.c.status)).join(
            _lease_allocations, sa.and_(
                _lease_allocations.c.lease_reservation_id
                == _reservations.c.id,
                _lease_allocations.c.lease_id == _leases.c.id,
                _lease_allocations.c.amount == _reservations.c.amount,
                _lease_allocations.c.start_date == _leases.c.start_date,
                _lease_allocations.c.end_date == _leases.c.end_date,
                _lease_allocations.c.status == _leases.c.status)))).scalar()
    sizes = [conn.execute(sa.select(sa.func.count()).select_from(table))
             .scalar() for table in (_reservations, _lease_allocations)]
    if [joined] + sizes != [leases] * 3:
        return ['%d leases, %d reservations, %d lease allocations, %d of '
                'them agreeing' % tuple([leases] + sizes + [joined])]
    return []


def _usage_rows(conn, reservations):
    now = models.utcnow()
    leased = collections.Counter()
    pending = collections.defaultdict(list)
    for project_id, start, end, amount, status in reservations:
        if status == lease_models.ACTIVE:
            leased[project_id] += amount
        elif status == lease_models.PENDING:
            pending[project_id].append((start, end, amount))
    problems = []
    for row in conn.execute(sa.select(_usages).where(
            _usages.c.resource == RESOURCE)):
        expected = (leased[row.project_id], 0, leased[row.project_id],
                    calendar.peak(pending[row.project_id], now))
        recorded = (row.used, row.reserved, row.leased, row.promised)
        if recorded != expected:
            problems.append('%s: used, reserved, leased, promised %s, not %s'
                            % (row.project_id, recorded, expected))
    if len(problems) > 1:
        return ['%d usage rows wrong, the first %s' % (len(problems),
                                                       problems[0])]
    return problems


def _devices(conn):
    now = models.utcnow()
    capacity = dict(conn.execute(sa.select(
        _inventories.c.resource_provider_id, _inventories.c.total)).all())
    held = collections.Counter()
    for provider_id, used in conn.execute(sa.select(
            _device_allocations.c.resource_provider_id,
            _device_allocations.c.used)):
        held[provider_id] += used
    active = collections.Counter()
    windows = collections.defaultdict(list)
    for provider_id, start, end, amount, status in conn.execute(sa.select(
            _lease_allocations.c.resource_provider_id,
            _lease_allocations.c.start_date, _lease_allocations.c.end_date,
            _lease_allocations.c.amount, _lease_allocations.c.status)):
        is_active = status == lease_models.ACTIVE
        if is_active:
            active[provider_id] += amount
        if status in lease_models.LIVE:
            windows[provider_id].append(
                (start, calendar.held_until(end, is_active, now), amount))
    problems = []
    if held != active:
        problems.append('device allocations differ from the active leases '
                        'on %d devices' % len(set(held.items())
                                              ^ set(active.items())))
    consumers = set(conn.execute(sa.select(
        _device_consumers.c.consumer_id)).scalars())
    actives = set(conn.execute(sa.select(_leases.c.id).where(
        _leases.c.status == lease_models.ACTIVE)).scalars())
    if consumers != actives:
        problems.append('%d device consumers for %d active leases'
                        % (len(consumers), len(actives)))
    over = [provider_id for provider_id, found in windows.items()
            if calendar.peak(found, min(s for s, _, _ in found))
            > capacity[provider_id]]
    if over:
        problems.append('%d devices promised beyond capacity' % len(over))
    return problems
