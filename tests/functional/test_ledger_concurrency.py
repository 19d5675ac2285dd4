"""The quota ledger under a storm of concurrent operations.

Eight processes throw a few thousand random reserves (some with request id
retries, some negative, some expiring within a fraction of a second),
commits, rollbacks, releases and expiries at three projects with small
limits, on PostgreSQL and on MariaDB, while this process polls the usage
table. Afterwards the books must agree with the reservation rows, with
every observation made during the storm, and with what each worker was
told; and no operation may have failed with anything but the quota errors
its input calls for (no deadlock, lock timeout or other database error).
"""

import collections
import logging
import multiprocessing
import random
import time
import traceback

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota import exception
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.functional import ledger_books

WORKERS = 8
OPERATIONS = 400  # per worker
STORM_SECONDS = 25  # a worker stops early when the machine is slow
LIMITS = {('storm-a', 'FPGA'): 2, ('storm-a', 'GPU'): 4,
          ('storm-b', 'FPGA'): 3, ('storm-b', 'GPU'): 6,
          ('storm-c', 'FPGA'): 5, ('storm-c', 'GPU'): 2}
PROJECTS = sorted({p for p, _ in LIMITS})
RESOURCES = ('FPGA', 'GPU')
LONG_EXPIRE = 600
# Operations the storm must get through to mean something: a few thousand
# on a quiet machine, fewer when it is shared and slow.
MIN_OPERATIONS = 500
SPAWN = multiprocessing.get_context('spawn')

_start = None


def _start_worker(start):
    global _start
    _start = start
    CONF([], project='cyquota', default_config_files=[])
    # The storm releases more than it holds on purpose: the drift it
    # causes is checked afterwards, not logged.
    logging.getLogger('cyquota.quota.ledger.usage').setLevel(logging.ERROR)


class Worker:
    """One process's share of the storm, and what it was told."""

    def __init__(self, number):
        self.name = 'worker-%d' % number
        self.rng = random.Random(number)
        self.ctx = cyquota_context.get_admin_context()
        self.pending = []  # (project, uuids, deltas, short)
        self.holding = collections.Counter()  # (project, resource)
        self.outcomes = {}  # uuid: the statuses it may end in
        self.observed = []  # (project, resource, limit, used, reserved)
        self.done = collections.Counter()
        self.expired = 0
        self.late_rows = 0
        self.errors = []

    def run(self, deadline):
        operations = (self.reserve, self.commit, self.rollback,
                      self.release, self.expire)
        for _ in range(OPERATIONS):
            if time.monotonic() > deadline:
                break
            operation = self.rng.choices(operations, (40, 25, 10, 15, 4))[0]
            try:
                project = operation()
                self.observe(project or self.rng.choice(PROJECTS))
            except Exception:
                self.errors.append(traceback.format_exc())
        return dict(outcomes=self.outcomes, observed=self.observed,
                    done=self.done, expired=self.expired,
                    late_rows=self.late_rows, errors=self.errors)

    def observe(self, project):
        usage = QUOTAS.get_project_usage(self.ctx, project)
        for resource in RESOURCES:
            u = usage[resource]
            self.observed.append((project, resource, u['limit'], u['used'],
                                  u['reserved']))

    def reserve(self):
        project = self.rng.choice(PROJECTS)
        resources = self.rng.sample(RESOURCES, self.rng.choice((1, 1, 2)))
        deltas = {r: self.rng.choice((1, 1, 1, 2, 2, -1)) for r in resources}
        short = self.rng.random() < 0.3
        expire = self.rng.uniform(0.05, 0.3) if short else LONG_EXPIRE
        request_id = None
        if self.rng.random() < 0.25:
            request_id = '%s-%d' % (self.name, len(self.outcomes))
        try:
            uuids = QUOTAS.reserve(self.ctx, project, deltas, expire=expire,
                                   request_id=request_id,
                                   consumer_id=self.name)
        except exception.OverQuota:
            self.done['over quota'] += 1
            return project
        except exception.InvalidDelta as error:
            if min(deltas.values()) > 0 or 'below zero' not in str(error):
                raise
            self.done['negative refused'] += 1
            return project
        if request_id is not None:
            again = QUOTAS.reserve(self.ctx, project, deltas, expire=expire,
                                   request_id=request_id,
                                   consumer_id=self.name)
            assert again == uuids, (again, uuids)
            self.done['retried'] += 1
        self.done['reserved'] += 1
        self.pending.append((project, uuids, deltas, short))
        for uuid in uuids:
            self.outcomes[uuid] = {'expired'} if short else {'reserved'}
        return project

    def _take_pending(self):
        if not self.pending:
            return None
        return self.pending.pop(self.rng.randrange(len(self.pending)))

    def commit(self):
        taken = self._take_pending()
        if taken is None:
            return None
        project, uuids, deltas, short = taken
        try:
            QUOTAS.commit(self.ctx, project, uuids)
        except exception.ReservationConflict:
            if not short:
                raise
            # Past its expiry: the commit expired the rows, unless a sweep
            # had already.
            self.done['commit too late'] += 1
            self.late_rows += len(uuids)
            return project
        self.done['committed'] += 1
        for uuid in uuids:
            self.outcomes[uuid] = {'committed'}
        for resource, delta in deltas.items():
            if delta > 0:
                self.holding[(project, resource)] += delta
        return project

    def rollback(self):
        taken = self._take_pending()
        if taken is None:
            return None
        project, uuids, _, short = taken
        QUOTAS.rollback(self.ctx, project, uuids)
        self.done['rolled back'] += 1
        for uuid in uuids:
            self.outcomes[uuid] = {'rolled_back', 'expired'} if short \
                else {'rolled_back'}
        return project

    def release(self):
        held = sorted(k for k, n in self.holding.items() if n)
        if not held:
            return None
        project, resource = self.rng.choice(held)
        amount = self.rng.randint(1, self.holding[(project, resource)])
        if self.rng.random() < 0.05:
            amount += 1  # more than this worker holds: drift somewhere
        for uuid in QUOTAS.release(self.ctx, project, {resource: amount},
                                   consumer_id=self.name):
            self.outcomes[uuid] = {'committed'}
        self.holding[(project, resource)] -= min(
            amount, self.holding[(project, resource)])
        self.done['released'] += 1
        return project

    def expire(self):
        self.expired += QUOTAS.expire(self.ctx)
        self.done['expire runs'] += 1


def _storm(number, url):
    """A worker process's storm on database ``url``; starts with every
    other worker."""
    fixtures.use_database(url, migrate=False)
    _start.wait(timeout=120)
    return Worker(number).run(time.monotonic() + STORM_SECONDS)


def test_storm_keeps_the_books(backend, worker_urls, ctx):
    for (project, resource), limit in LIMITS.items():
        QUOTAS.limits.set_project_limit(ctx, project, resource, limit)
    start = SPAWN.Barrier(WORKERS + 1)
    polls = []
    with SPAWN.Pool(WORKERS, _start_worker, (start,)) as pool:
        storm = pool.starmap_async(
            _storm, [(n, worker_urls[n % len(worker_urls)])
                     for n in range(WORKERS)], chunksize=1)
        start.wait(timeout=120)
        began = time.monotonic()
        query = sa.text('SELECT project_id, resource, used, reserved '
                        'FROM quota_usages')
        with db_api.get_engine().connect() as conn:
            while not storm.ready():
                polls += [(p, r, LIMITS[(p, r)], u, n)
                          for p, r, u, n in conn.execute(query)]
                conn.rollback()
                time.sleep(0.02)
        results = storm.get()
        took = time.monotonic() - began
    time.sleep(0.35)  # past every short expiry
    expired = QUOTAS.expire(ctx)

    done = sum((collections.Counter(r['done']) for r in results),
               collections.Counter())
    print('%s: %.1f s, %s, %d polls, %d observations' % (
        backend, took, dict(done), len(polls),
        sum(len(r['observed']) for r in results)))
    assert [e for r in results for e in r['errors']] == []
    assert sum(done.values()) >= MIN_OPERATIONS
    for what in ('over quota', 'committed', 'rolled back', 'released',
                 'retried', 'expire runs'):
        assert done[what], what

    # Every observation, by the workers and by the poller, within limits.
    assert polls
    assert ledger_books.over_limit(polls) == []
    assert ledger_books.over_limit(
        [o for r in results for o in r['observed']]) == []

    # The counts are the sum of the rows, none over its limit. Each uuid a
    # worker was given is one row, in a state that agrees with what the
    # worker was told; there are no other rows.
    rows = ledger_books.assert_books_balance(LIMITS)
    outcomes = {}
    for result in results:
        assert not set(result['outcomes']) & set(outcomes)
        outcomes.update(result['outcomes'])
    assert set(rows) == set(outcomes)
    wrong = {u: (rows[u]['status'], sorted(allowed))
             for u, allowed in outcomes.items()
             if rows[u]['status'] not in allowed}
    assert wrong == {}
    statuses = collections.Counter(r['status'] for r in rows.values())
    swept = expired + sum(r['expired'] for r in results)
    late = sum(r['late_rows'] for r in results)
    assert swept <= statuses['expired'] <= swept + late
    assert statuses['expired'] > 0

    assert min(c['used'] for c in ledger_books.table('consumer_usages')) >= 0
