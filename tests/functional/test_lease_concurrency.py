"""Leases and the ledger under a storm of concurrent operations.

Six processes create, change (an ACTIVE one grows) and end overlapping
leases with random windows (most a few minutes ahead, so they stay
PENDING; some starting now, so they are ACTIVE) and make ordinary
reserves, commits, rollbacks, releases and expiries (some with devices),
at a few projects with small limits over a pool of three 2-FPGA devices,
on PostgreSQL and on MariaDB.
Meanwhile this process reads consistent snapshots of the books; afterwards
it reads them once more. In every snapshot, at every instant of the
calendar from now on, no project (or tree) exceeds its limit and no device
its capacity; every lease's rows agree with its status; ``leased`` and
``promised`` agree with the leases; no count is negative. No operation may
fail with anything but the refusals its input calls for.
"""

import collections
import datetime
import logging
import multiprocessing
import random
import time
import traceback

import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import lease_models
from cyquota.db import models
from cyquota.db import placement_models
from cyquota.db import write_batch
from cyquota import exception
from cyquota import leases
from cyquota.leases import devices as lease_devices
from cyquota.placement import allocations
from cyquota.placement import device_errors
from cyquota.placement import member_of
from cyquota.placement import pools
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.unit.placement.conftest import Tree

WORKERS = 6
RESOURCE = 'FPGA'
DEVICES = 3
DEVICE_SIZE = 2
MINUTE = datetime.timedelta(minutes=1)
SPAWN = multiprocessing.get_context('spawn')
#: Barrier waits: spawning and importing six workers on a busy two-core
#: machine takes a while.
_START_TIMEOUT = 120

#: The flat model: three projects of 5 FPGAs each over 6 devices' worth.
FLAT = dict(model='flat', registered=5, parents={}, limits={},
            projects=('lease-a', 'lease-b', 'lease-c'))
#: Strict-two-level: a root of 4 over two children of 3 each.
TREE = dict(model='strict-two-level', registered=5,
            parents={'tree-a': 'tree-root', 'tree-b': 'tree-root'},
            limits={'tree-root': 4, 'tree-a': 3, 'tree-b': 3},
            projects=('tree-root', 'tree-a', 'tree-b'))

_start = None


def _start_worker(url, start):
    global _start
    _start = start
    fixtures.start_worker(url)
    # Refusals are expected by the thousand; their log lines are noise.
    logging.getLogger('cyquota').setLevel(logging.WARNING)


def _use_model(model):
    if CONF.quota.enforcement_model != model:
        CONF.set_override('enforcement_model', model, 'quota')
        QUOTAS.reset()
        leases.LEASES.reset()


def _iso(moment):
    return moment.isoformat()


class Worker:
    """One process's share of the storm, and what it was told."""

    def __init__(self, number, projects):
        self.name = 'w%d' % number
        self.rng = random.Random(number)
        self.projects = projects
        self.ctx = cyquota_context.get_admin_context()
        self.leases = []
        self.pending = []  # (project, uuids, consumer, amount, short)
        self.holding = []  # (project, consumer, amount)
        self.consumers = 0
        self.done = collections.Counter()
        self.errors = []

    def run(self, deadline, operations):
        weights = {self.create: 25, self.update: 16, self.delete: 8,
                   self.reserve: 22, self.commit: 13, self.rollback: 5,
                   self.release: 9, self.expire: 2}
        for _ in range(operations):
            if time.monotonic() > deadline:
                break
            operation = self.rng.choices(list(weights),
                                         list(weights.values()))[0]
            try:
                operation()
            except Exception:
                self.errors.append(traceback.format_exc())
        return dict(done=self.done, errors=self.errors)

    # -- leases ------------------------------------------------------------

    def _window(self):
        """A start (``"now"`` for one in four, else up to half an hour
        ahead) and an end, minutes apart, as the API takes them."""
        now = datetime.datetime.now(datetime.timezone.utc)
        length = self.rng.uniform(1, 10) * MINUTE
        if self.rng.random() < 0.25:
            return 'now', _iso(now + length)
        start = now + self.rng.uniform(1, 30) * MINUTE
        return _iso(start), _iso(start + length)

    def create(self):
        start, end = self._window()
        body = dict(start_date=start, end_date=end, reservations=[
            {'resource_type': 'accelerator:' + RESOURCE,
             'amount': self.rng.randint(1, 3)}])
        try:
            made = leases.LEASES.create(self.ctx,
                                        self.rng.choice(self.projects), body)
        except exception.OverQuota:
            self.done['lease over quota'] += 1
            return
        except device_errors.NoValidAllocation:
            self.done['lease without devices'] += 1
            return
        self.leases.append(made['id'])
        self.done['lease created %s' % made['status']] += 1

    def _some_lease(self):
        """One of this worker's leases, or (one time in three) any live
        one of a project, so that workers collide on leases too."""
        if self.rng.random() < 0.33:
            found = leases.LEASES.list(self.ctx,
                                       self.rng.choice(self.projects))
            live = [lease['id'] for lease in found
                    if lease['status'] in lease_models.LIVE]
            if live:
                return self.rng.choice(live)
        return self.rng.choice(self.leases) if self.leases else None

    def update(self):
        lease_id = self._some_lease()
        if lease_id is None:
            return
        seen = leases.LEASES.get(self.ctx, lease_id)
        active = seen['status'] == lease_models.ACTIVE
        changes = {}
        if self.rng.random() < 0.3:
            changes['name'] = '%s-%d' % (self.name, self.done['updated'])
        if self.rng.random() < 0.7:
            base = (datetime.datetime.now(datetime.timezone.utc) if active
                    else datetime.datetime.fromisoformat(seen['start_date']))
            changes['end_date'] = _iso(
                base + self.rng.uniform(1, 10) * MINUTE)
        grows = False
        if self.rng.random() < 0.5:
            # An active lease may only grow (SPEC 3.5).
            changes['reservations'] = [
                {'id': r['id'], 'amount': (
                    r['amount'] + 1 if active else self.rng.randint(1, 3))}
                for r in seen['reservations']]
            grows = active
        try:
            leases.LEASES.update(self.ctx, lease_id, changes)
        except exception.OverQuota:
            self.done['update over quota'] += 1
        except device_errors.NoValidAllocation:
            self.done['update without devices'] += 1
        except exception.LeaseConflict:
            self.done['update conflict'] += 1
        else:
            self.done['updated'] += 1
            if grows:
                self.done['grown'] += 1

    def delete(self):
        lease_id = self._some_lease()
        if lease_id is None:
            return
        try:
            leases.LEASES.delete(self.ctx, lease_id)
        except exception.LeaseConflict:
            self.done['end conflict'] += 1
        else:
            self.done['ended'] += 1

    # -- the ordinary ledger -----------------------------------------------

    def reserve(self):
        project = self.rng.choice(self.projects)
        amount = self.rng.randint(1, 2)
        self.consumers += 1
        consumer = '%s-c%d' % (self.name, self.consumers)
        short = self.rng.random() < 0.25
        devices = ({'resources': '%s:%d' % (RESOURCE, amount)}
                   if self.rng.random() < 0.5 else None)
        try:
            uuids = QUOTAS.reserve(
                self.ctx, project, {RESOURCE: amount},
                expire=self.rng.uniform(0.2, 1.0) if short else 600,
                consumer_id=consumer, devices=devices)
        except exception.OverQuota:
            self.done['reserve over quota'] += 1
            return
        except device_errors.NoValidAllocation:
            self.done['reserve without devices'] += 1
            return
        self.pending.append((project, uuids, consumer, amount, short))
        self.done['reserved'] += 1

    def _take(self, held):
        return held.pop(self.rng.randrange(len(held))) if held else None

    def commit(self):
        taken = self._take(self.pending)
        if taken is None:
            return
        project, uuids, consumer, amount, short = taken
        try:
            QUOTAS.commit(self.ctx, project, uuids)
        except exception.ReservationConflict:
            if not short:
                raise
            self.done['commit too late'] += 1
            return
        self.holding.append((project, consumer, amount))
        self.done['committed'] += 1

    def rollback(self):
        taken = self._take(self.pending)
        if taken is not None:
            QUOTAS.rollback(self.ctx, taken[0], taken[1])
            self.done['rolled back'] += 1

    def release(self):
        taken = self._take(self.holding)
        if taken is not None:
            project, consumer, amount = taken
            QUOTAS.release(self.ctx, project, {RESOURCE: amount},
                           consumer_id=consumer)
            self.done['released'] += 1

    def expire(self):
        QUOTAS.expire(self.ctx)
        self.done['expire runs'] += 1


def _storm(number, model, projects, seconds, operations):
    """A worker process's storm; starts with every other worker."""
    _use_model(model)
    _start.wait(timeout=_START_TIMEOUT)
    return Worker(number, projects).run(time.monotonic() + seconds,
                                        operations)


# -- the books ---------------------------------------------------------------

_TABLES = {
    'leases': lease_models.Lease,
    'lease_projects': lease_models.LeaseProject,
    'lease_reservations': lease_models.LeaseReservation,
    'lease_allocations': placement_models.LeaseAllocation,
    'device_allocations': placement_models.DeviceAllocation,
    'inventories': placement_models.Inventory,
    'quota_usages': models.QuotaUsage,
    'tree_usages': models.TreeUsage,
    'consumer_usages': models.ConsumerUsage,
    'reservations': models.Reservation,
}


def read_books(conn):
    """Every row of the tables the checks read, and the time they were
    read (naive UTC), from one connection (give it a snapshot)."""
    books = {name: [dict(r) for r in conn.execute(
                 sa.select(model.__table__)).mappings()]
             for name, model in _TABLES.items()}
    books['now'] = models.utcnow()
    return books


def _at(windows, instant):
    """What the ``(start, end, amount)`` windows hold at ``instant``."""
    return sum(amount for s, e, amount in windows if s <= instant < e)


def _peak_from(windows, now):
    """The most the windows hold at once from ``now`` on (at ``now`` or
    at a start after it)."""
    instants = [now] + [s for s, _, _ in windows if s > now]
    return max(_at(windows, t) for t in instants)


def _window(row):
    return (row['start_date'], row['end_date'], row['amount'])


def check_books(books, setup):
    """What breaks the promise or disagrees in ``books``: a list of
    messages, empty when all is well."""
    now = books['now']
    problems = []
    status = {lease['id']: lease for lease in books['leases']}
    reservations = [r for r in books['lease_reservations']
                    if r['status'] in lease_models.LIVE]
    allocations = [a for a in books['lease_allocations']
                   if a['status'] in lease_models.LIVE]
    instants = sorted({now} | {r['start_date'] for r in reservations
                               if r['start_date'] > now}
                      | {a['start_date'] for a in allocations
                         if a['start_date'] > now})

    # Quota over time: ordinary holdings now plus the leases at each
    # instant, per project and per tree root.
    usage = {(u['project_id'], u['resource']): u
             for u in books['quota_usages']}
    for project in setup['projects']:
        limit = setup['limits'].get(project, setup['registered'])
        members = [project] + [child for child, parent
                               in setup['parents'].items()
                               if parent == project]
        scopes = [('project', [project], 'project_id', limit)]
        if setup['model'] != 'flat' and project not in setup['parents']:
            scopes.append(('tree', members, 'root_id', limit))
        for scope, holders, key, limit in scopes:
            ordinary = sum(
                u['used'] - u['leased'] + u['reserved']
                for u in (usage.get((h, RESOURCE)) for h in holders) if u)
            windows = [_window(r) for r in reservations
                       if r[key] == project and r['resource'] == RESOURCE]
            for instant in instants:
                held = ordinary + _at(windows, instant)
                if held > limit:
                    problems.append('%s %s holds %d > limit %d at %s' % (
                        scope, project, held, limit, instant))

    # Device capacity over time, per provider.
    active = {i for i, lease in status.items()
              if lease['status'] == lease_models.ACTIVE}
    for inventory in books['inventories']:
        provider = inventory['resource_provider_id']
        capacity = int((inventory['total'] - inventory['reserved'])
                       * inventory['allocation_ratio'])
        ordinary = sum(d['used'] for d in books['device_allocations']
                       if d['resource_provider_id'] == provider
                       and d['consumer_id'] not in active)
        windows = [_window(a) for a in allocations
                   if a['resource_provider_id'] == provider]
        for instant in instants:
            held = ordinary + _at(windows, instant)
            if held > capacity:
                problems.append('provider %d holds %d > capacity %d at %s'
                                % (provider, held, capacity, instant))

    # Each lease in one status, its rows agreeing.
    devices = collections.defaultdict(collections.Counter)
    for d in books['device_allocations']:
        devices[d['consumer_id']][(d['resource_provider_id'],
                                   d['resource_class'])] += d['used']
        if d['used'] <= 0:
            problems.append('device allocation %r' % d)
    for lease_id, lease in status.items():
        mine = [r for r in books['lease_reservations']
                if r['lease_id'] == lease_id]
        promised = [a for a in books['lease_allocations']
                    if a['lease_id'] == lease_id]
        window = (lease['start_date'], lease['end_date'])
        if lease['status'] not in lease_models.STATUSES or not mine:
            problems.append('lease %s: %s with %d reservations' % (
                lease_id, lease['status'], len(mine)))
        for row in mine + promised:
            if (row['status'], row['start_date'], row['end_date']) != (
                    (lease['status'],) + window):
                problems.append('lease %s %s: row %r' % (
                    lease_id, lease['status'], row))
        if lease['status'] in lease_models.LIVE:
            for r in mine:
                parts = sum(a['amount'] for a in promised
                            if a['lease_reservation_id'] == r['id'])
                if parts != r['amount']:
                    problems.append('lease %s: %d devices for %d' % (
                        lease_id, parts, r['amount']))
        expected = collections.Counter()
        if lease['status'] == lease_models.ACTIVE:
            for a in promised:
                expected[(a['resource_provider_id'],
                          a['resource_class'])] += a['amount']
        if devices.get(lease_id, collections.Counter()) != expected:
            problems.append('lease %s %s holds devices %r, expected %r' % (
                lease_id, lease['status'], dict(devices.get(lease_id, {})),
                dict(expected)))

    # Each project's count of live leases ([leases] max_leases_per_project).
    live = collections.Counter(lease['project_id'] for lease in status.values()
                               if lease['status'] in lease_models.LIVE)
    counted = {row['project_id']: row['live']
               for row in books['lease_projects']}
    if {p: n for p, n in counted.items() if n} != dict(live):
        problems.append('live leases counted %r, held %r' % (counted,
                                                             dict(live)))

    # leased and promised of every row (project and tree) against the
    # leases; no negative count.
    rows = [('project_id', u) for u in books['quota_usages']] + [
        ('root_id', t) for t in books['tree_usages']]
    for key, row in rows:
        holder = row['project_id' if key == 'project_id' else 'root_id']
        mine = [r for r in books['lease_reservations']
                if r[key] == holder and r['resource'] == row['resource']]
        leased = sum(r['amount'] for r in mine
                     if r['status'] == lease_models.ACTIVE)
        peak = _peak_from([_window(r) for r in mine
                           if r['status'] == lease_models.PENDING], now)
        if row['leased'] != leased or row['promised'] < peak:
            problems.append('%s %s: leased %d (leases: %d), promised %d '
                            '(true peak: %d)' % (key, holder, row['leased'],
                                                 leased, row['promised'],
                                                 peak))
        if min(row['used'], row['reserved'], row['leased'],
               row['promised']) < 0 or row['leased'] > row['used']:
            problems.append('negative or inconsistent counts: %r' % row)
    for tree in books['tree_usages']:
        members = [tree['root_id']] + [c for c, p in setup['parents'].items()
                                       if p == tree['root_id']]
        for column in ('used', 'reserved'):
            total = sum(u[column] for u in books['quota_usages']
                        if u['project_id'] in members
                        and u['resource'] == tree['resource'])
            if tree[column] != total:
                problems.append('tree %s: %s %d, members %d' % (
                    tree['root_id'], column, tree[column], total))

    # The ordinary books: reserved is the open reservations; used is what
    # the consumers hold (leases included).
    reserved = collections.Counter()
    for r in books['reservations']:
        if r['status'] == models.RESERVED and r['delta'] > 0:
            reserved[(r['project_id'], r['resource'])] += r['delta']
    held = collections.Counter()
    for c in books['consumer_usages']:
        held[(c['project_id'], c['resource'])] += c['used']
        if c['used'] < 0:
            problems.append('consumer usage %r' % c)
    for key, u in usage.items():
        if (u['reserved'], u['used']) != (reserved[key], held[key]):
            problems.append('%s: reserved %d used %d, rows say %d and %d'
                            % (key, u['reserved'], u['used'], reserved[key],
                               held[key]))
    return problems


def _snapshot(conn):
    """The books as of one instant (REPEATABLE READ on both servers)."""
    with conn.begin():
        return read_books(conn)


# -- the test ----------------------------------------------------------------

@pytest.fixture(scope='module')
def _pools():
    pools = {}
    yield pools
    for pool, _barrier in pools.values():
        pool.close()
        pool.join()


@pytest.fixture
def storm(db_url, ctx, _pools):
    """``storm(setup, seconds, operations)``: build ``setup``'s projects,
    limits and device pool, run the workers, check the books during and
    after; returns the workers' outcomes and the snapshots' problems."""
    if db_url not in _pools:
        barrier = SPAWN.Barrier(WORKERS + 1)
        _pools[db_url] = (SPAWN.Pool(WORKERS, _start_worker,
                                     (db_url, barrier)), barrier)
    pool, barrier = _pools[db_url]

    def run(setup, seconds, operations):
        _use_model(setup['model'])
        QUOTAS.limits.set_registered_limit(ctx, RESOURCE,
                                           setup['registered'])
        for child, parent in sorted(setup['parents'].items()):
            QUOTAS.limits.set_project(ctx, parent)
            QUOTAS.limits.set_project(ctx, child, parent_id=parent)
        for project, limit in sorted(setup['limits'].items()):
            QUOTAS.limits.set_project_limit(ctx, project, RESOURCE, limit)
        tree = Tree(ctx)
        tree.provider('cn1')
        for n in range(DEVICES):
            tree.provider('dev%d' % n, parent='cn1',
                          inventory={RESOURCE: {'total': DEVICE_SIZE}})
        work = pool.starmap_async(
            _storm, [(n, setup['model'], setup['projects'], seconds,
                      operations) for n in range(WORKERS)], chunksize=1)
        barrier.wait(timeout=_START_TIMEOUT)
        began = time.monotonic()
        problems, snapshots = [], 0
        engine = db_api.get_engine().execution_options(
            isolation_level='REPEATABLE READ')
        with engine.connect() as conn:
            while not work.ready():
                problems += check_books(_snapshot(conn), setup)
                snapshots += 1
                work.wait(1.0)
        results = work.get()
        took = time.monotonic() - began
        time.sleep(1.0)  # past every short expiry
        QUOTAS.expire(ctx)
        with engine.connect() as conn:
            final = _snapshot(conn)
        problems += check_books(final, setup)
        done = sum((collections.Counter(r['done']) for r in results),
                   collections.Counter())
        print('%s %s: %.1f s, %d snapshots, %d leases (%s), %s' % (
            db_url.split(':')[0], setup['model'], took, snapshots,
            len(final['leases']), dict(collections.Counter(
                lease['status'] for lease in final['leases'])), dict(done)))
        return dict(done=done, errors=[e for r in results
                                       for e in r['errors']],
                    problems=problems, snapshots=snapshots, final=final)

    yield run
    CONF.clear_override('enforcement_model', 'quota')
    QUOTAS.reset()
    leases.LEASES.reset()


def _assert_stormy(outcome, minimum, reached):
    assert outcome['problems'] == []
    assert outcome['errors'] == []
    assert outcome['snapshots'] >= 2
    done = outcome['done']
    assert sum(done.values()) >= minimum
    # The storm did reach every path it means to test.
    for what in reached:
        assert done[what], what
    statuses = {lease['status'] for lease in outcome['final']['leases']}
    assert {'PENDING', 'ACTIVE', 'ENDED'} <= statuses


_LEASE_PATHS = ('lease created PENDING', 'lease created ACTIVE', 'updated',
                'ended', 'lease over quota')


def test_lease_storm_keeps_the_promise(backend, storm):
    outcome = storm(FLAT, seconds=30, operations=400)
    _assert_stormy(outcome, minimum=400, reached=_LEASE_PATHS + (
        'lease without devices', 'reserved', 'committed', 'released',
        'rolled back'))


def test_lease_storm_under_strict_two_level(backend, storm):
    # Leases take most of the tree's 4 FPGAs: few ordinary reserves fit.
    _assert_stormy(storm(TREE, seconds=12, operations=200), minimum=150,
                   reached=_LEASE_PATHS + ('update over quota',))


def test_extending_an_active_lease_without_room_is_no_valid_allocation(
        backend, ctx):
    """The storm's first find: an ACTIVE lease's new end that its devices
    cannot hold (another lease has them next) must be a 409
    NoValidAllocation, as for a PENDING lease. The engine checks it with
    ``devices.check`` alone, which raises AllocationRaced (a DBDeadlock):
    retried to exhaustion, then escaping as a database error."""
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev0', parent='cn1',
                  inventory={RESOURCE: {'total': DEVICE_SIZE}})
    now = datetime.datetime.now(datetime.timezone.utc)

    def lease(project, start, end):
        return leases.LEASES.create(ctx, project, dict(
            start_date=start, end_date=_iso(end), reservations=[
                {'resource_type': 'accelerator:' + RESOURCE,
                 'amount': DEVICE_SIZE}]))

    active = lease('p1', 'now', now + 10 * MINUTE)
    lease('p2', _iso(now + 10 * MINUTE), now + 20 * MINUTE)
    with pytest.raises(device_errors.NoValidAllocation):
        leases.LEASES.update(ctx, active['id'],
                             {'end_date': _iso(now + 15 * MINUTE)})
    assert leases.LEASES.get(ctx, active['id']) == active


def _stale_choice(ctx, start, end):
    """The devices a lease over ``[start, end)`` would get, chosen now
    (before what the caller does next)."""
    need = lease_devices.DeviceNeed('r', RESOURCE, DEVICE_SIZE,
                                    member_of.parse([]))
    with db_api.get_engine().connect() as conn:
        return lease_devices.choose(conn, [need], start, end,
                                    pools.Carrier('p3'))


@pytest.mark.parametrize('taker', ['another lease', 'an extended lease'])
def test_a_choice_that_went_stale_is_not_taken(backend, ctx, taker):
    """What takes room on a device moves its generation, so a lease whose
    devices were chosen before cannot take them (AllocationRaced: its
    transaction is retried with a fresh choice)."""
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev0', parent='cn1',
                  inventory={RESOURCE: {'total': DEVICE_SIZE}})
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now + 10 * MINUTE, now + 20 * MINUTE

    def lease(project, begin, finish):
        return leases.LEASES.create(ctx, project, dict(
            start_date=begin, end_date=_iso(finish), reservations=[
                {'resource_type': 'accelerator:' + RESOURCE,
                 'amount': DEVICE_SIZE}]))

    if taker == 'another lease':
        stale = _stale_choice(ctx, start.replace(tzinfo=None),
                              end.replace(tzinfo=None))
        lease('p2', _iso(start), end)
    else:
        active = lease('p1', 'now', start)
        stale = _stale_choice(ctx, start.replace(tzinfo=None),
                              end.replace(tzinfo=None))
        leases.LEASES.update(ctx, active['id'],
                             {'end_date': _iso(start + 5 * MINUTE)})
    with db_api.writer_connection(ctx) as conn:
        batch = write_batch.WriteBatch(conn)
        lease_devices.take(batch, stale)
        with pytest.raises(allocations.AllocationRaced):
            batch.send()
