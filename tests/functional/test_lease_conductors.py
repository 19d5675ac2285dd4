"""Two conductors' periodic lease work on one database, PostgreSQL and
MariaDB: each lease is started once and ended once, however the two
processes interleave.

Two spawned processes run ``LEASES.start_due`` and ``LEASES.end_due`` in a
loop, as the conductor's ``start_and_end_leases`` periodic task does (with
a small ``[quota] batch_size``, so that both take turns on the same due
leases), while this process creates leases whose starts and ends come due
a few seconds later, a few at a time.
"""

import datetime
import multiprocessing
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
from cyquota import leases
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.unit.placement.conftest import Tree
from tests.unit import test_engine

CONDUCTORS = 2
LEASES = 24
PROJECTS = ('cond-a', 'cond-b', 'cond-c')
RESOURCE = 'FPGA'
SPAWN = multiprocessing.get_context('spawn')

clock = test_engine.clock
#: Spawning and importing the children on a busy machine takes a while.
_START_TIMEOUT = 120
#: A child stops by itself after this long, whatever the parent says.
_RUN_SECONDS = 60


def _conductor(url, ready, stop, results):
    """A conductor's lease loop until ``stop``: what it started and
    ended, and any error."""
    CONF([], project='cyquota', default_config_files=[])
    CONF.set_override('batch_size', 3, 'quota')
    fixtures.use_database(url, migrate=False)
    retried = []
    sa.event.listen(db_api.get_engine(), 'handle_error',
                    lambda error: retried.append(
                        type(error.original_exception).__name__))
    ctx = cyquota_context.get_admin_context()
    started = ended = 0
    errors = []
    ready.wait(timeout=_START_TIMEOUT)
    deadline = time.monotonic() + _RUN_SECONDS
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            started += leases.LEASES.start_due(ctx)
            ended += leases.LEASES.end_due(ctx)
        except Exception:
            errors.append(traceback.format_exc())
        time.sleep(0.02)
    results.put(dict(started=started, ended=ended, errors=errors,
                     retried=retried))


def _table(name):
    table = models.Base.metadata.tables[name]
    with db_api.get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(sa.select(table)).mappings()]


def _statuses():
    return [lease['status'] for lease in _table('leases')]


@pytest.mark.usefixtures('seconds_long')
def test_two_conductors_start_and_end_each_lease_once(backend, db_url, ctx):
    QUOTAS.limits.set_registered_limit(ctx, RESOURCE, LEASES)
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev0', parent='cn1',
                  inventory={RESOURCE: {'total': 2 * LEASES}})
    ready, stop = SPAWN.Barrier(CONDUCTORS + 1), SPAWN.Event()
    results = SPAWN.Queue()
    children = [SPAWN.Process(target=_conductor,
                              args=(db_url, ready, stop, results))
                for _ in range(CONDUCTORS)]
    for child in children:
        child.start()
    try:
        ready.wait(timeout=_START_TIMEOUT)
        # Each starts 2 to 4 s after it is made (however slow the making),
        # ends 1 to 3 s later: they come due while both conductors loop,
        # several in the same instant.
        for n in range(LEASES):
            now = datetime.datetime.now(datetime.timezone.utc)
            start = now + datetime.timedelta(seconds=2 + (n % 8) / 4)
            end = start + datetime.timedelta(seconds=1 + (n % 3))
            made = leases.LEASES.create(
                ctx, PROJECTS[n % len(PROJECTS)], dict(
                    start_date=start.isoformat(), end_date=end.isoformat(),
                    reservations=[{'resource_type': 'accelerator:' + RESOURCE,
                                   'amount': 1 + n % 2}]))
            assert made['status'] == lease_models.PENDING
        deadline = time.monotonic() + _RUN_SECONDS - 10
        while (set(_statuses()) != {lease_models.ENDED}
               and time.monotonic() < deadline):
            time.sleep(0.2)
    finally:
        stop.set()
        outcomes = [results.get(timeout=_START_TIMEOUT) for _ in children]
        for child in children:
            child.join(timeout=30)
    print('%s: %s' % (backend, [
        dict(started=o['started'], ended=o['ended'],
             retried=len(o['retried'])) for o in outcomes]))
    assert [o['errors'] for o in outcomes] == [[], []]
    assert [child.exitcode for child in children] == [0, 0]
    assert _statuses() == [lease_models.ENDED] * LEASES
    assert sum(o['started'] for o in outcomes) == LEASES
    assert sum(o['ended'] for o in outcomes) == LEASES

    # Everything given back, exactly: a second end would have been drift.
    for project in PROJECTS:
        usage = QUOTAS.get_project_usage(ctx, project)[RESOURCE]
        assert (usage['used'], usage['reserved'], usage['leased'],
                usage['promised']) == (0, 0, 0, 0), project
    assert _table('drift_events') == []
    assert _table('device_allocations') == []
    consumed = {}
    for row in _table('consumer_usages'):
        consumed[row['consumer_id']] = row['used']
    assert len(consumed) == LEASES and set(consumed.values()) == {0}
    assert {a['status'] for a in _table(
        placement_models.LeaseAllocation.__tablename__)} == {
        lease_models.ENDED}


def test_one_periodic_run_starts_and_ends_every_due_lease(backend, ctx,
                                                          clock):
    """``start_due`` and ``end_due`` promise every due lease, as
    ``QUOTAS.expire`` works through all its batches: with more leases due
    than ``[quota] batch_size``, one conductor run must still start (and
    later end) them all, not leave the rest for the next
    ``lease_interval``. Time moves only when told, so no lease comes due
    while they are created, however slow the machine."""
    CONF.set_override('batch_size', 2, 'quota')
    QUOTAS.limits.set_registered_limit(ctx, RESOURCE, 10)
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev0', parent='cn1', inventory={RESOURCE: {'total': 10}})
    start = clock(with_timezone=True) + datetime.timedelta(seconds=60)
    end = start + datetime.timedelta(seconds=60)
    for _ in range(5):
        leases.LEASES.create(ctx, 'p1', dict(
            start_date=start.isoformat(), end_date=end.isoformat(),
            reservations=[{'resource_type': 'accelerator:' + RESOURCE,
                           'amount': 1}]))
    assert leases.LEASES.start_due(ctx) == 0
    clock.advance(60)
    assert leases.LEASES.start_due(ctx) == 5
    clock.advance(60)
    assert leases.LEASES.end_due(ctx) == 5
