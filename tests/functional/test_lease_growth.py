"""An ACTIVE lease that grows, on the real PostgreSQL and MariaDB: the books
stay right (``cyquota-manage quota check`` finds nothing, before and after
its scheduled or early end, which gives the grown amount back), and a grow
racing real processes that create leases for the last device and the last
unit of quota leaves exactly one of them served, never a project over its
limit nor a device over its capacity."""

import datetime
import multiprocessing
import time

import pytest
import webtest

from cyquota.api import app
from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota import exception
from cyquota import leases
from cyquota.placement import device_errors
from cyquota.quota import QUOTAS
from tests import commands
from tests import fixtures
from tests.functional import test_lease_concurrency as storm_books
from tests.unit.placement.conftest import Tree

RESOURCE = 'FPGA'
SPAWN = multiprocessing.get_context('spawn')
#: The racers: the lease's grow, a create of its project, a create of
#: another project.
TASKS = ('grow', 'p1', 'p2')
RACERS = len(TASKS)
ROUNDS = 6
_START_TIMEOUT = 120
#: The flat model, as the storm's books read it.
SETUP = dict(model='flat', registered=3, parents={}, limits={},
             projects=('p1', 'p2'))

_barrier = None


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _lease(ctx, project, amount, end):
    return leases.LEASES.create(ctx, project, dict(
        start_date='now', end_date=end.isoformat(), reservations=[
            {'resource_type': 'accelerator:' + RESOURCE, 'amount': amount}]))


def _grow(ctx, made, amount):
    return leases.LEASES.update(ctx, made['id'], {'reservations': [
        {'id': made['reservations'][0]['id'], 'amount': amount}]})


def _devices(view):
    return sorted((a['resource_provider_name'], a['amount'])
                  for r in view['reservations'] for a in r['allocations'])


def _devices_of(ctx):
    """Two devices: dev0 of 2 FPGAs, dev1 of 1; a project's limit is 3."""
    QUOTAS.limits.set_registered_limit(ctx, RESOURCE, SETUP['registered'])
    tree = Tree(ctx)
    tree.provider('cn1')
    tree.provider('dev0', parent='cn1', inventory={RESOURCE: {'total': 2}})
    tree.provider('dev1', parent='cn1', inventory={RESOURCE: {'total': 1}})
    return tree


@pytest.fixture
def quota_check(db_url, tmp_path):
    """``cyquota-manage quota check`` on the test's database, as an
    operator runs it (its ``main`` in this process): its exit code and
    output."""
    config = tmp_path / 'cyquota.conf'
    config.write_text('[database]\nconnection = %s\n' % db_url)

    def run():
        done = commands.manage(config, 'quota', 'check')
        return done.returncode, done.stdout.strip()
    return run


def _usage(ctx, project='p1'):
    return QUOTAS.get_project_usage(ctx, project)[RESOURCE]


def _books(ctx):
    """What breaks the promise or disagrees in the books (the storm's
    checks) and what ``quota check`` finds, read now."""
    with db_api.get_engine().connect() as conn:
        problems = storm_books.check_books(storm_books.read_books(conn),
                                           SETUP)
    found = QUOTAS.check_drift(ctx)
    return problems + (['quota check: %r' % (found,)] if found else [])


@pytest.mark.usefixtures('seconds_long')
@pytest.mark.parametrize('ending', ['early', 'scheduled'])
def test_a_grown_lease_keeps_the_books(backend, ctx, quota_check, ending):
    _devices_of(ctx)
    end = _now() + datetime.timedelta(seconds=6 if ending == 'scheduled'
                                      else 3600)
    made = _lease(ctx, 'p1', 2, end)
    grown = _grow(ctx, made, 3)
    assert _devices(grown) == [('dev0', 2), ('dev1', 1)]
    assert _usage(ctx) == dict(limit=3, used=3, reserved=0, leased=3,
                               promised=0, available=0)
    assert _books(ctx) == []
    # Nothing is left for anyone else until it ends.
    with pytest.raises(device_errors.NoValidAllocation):
        _lease(ctx, 'p2', 1, end)

    if ending == 'early':
        assert quota_check() == (0, 'No drift.')
        leases.LEASES.delete(ctx, made['id'])
    else:
        time.sleep(max(0.0, (end - _now()).total_seconds()) + 0.1)
        assert leases.LEASES.end_due(ctx) == 1
    assert leases.LEASES.get(ctx, made['id'])['status'] == 'ENDED'
    assert _usage(ctx) == dict(limit=3, used=0, reserved=0, leased=0,
                               promised=0, available=3)
    assert _books(ctx) == []
    assert quota_check() == (0, 'No drift.')
    # Both devices are free again.
    assert _devices(_lease(ctx, 'p2', 3, _now() + datetime.timedelta(
        hours=1))) == [('dev0', 2), ('dev1', 1)]


def test_a_grow_through_the_api(backend, ctx):
    """As a project's member sees it: a PUT of a larger amount answers the
    lease with its new devices, the usage grows at once; a smaller one,
    a grow over quota and a grow without devices are refused with the
    codes of SPEC 4.1 and change nothing."""
    _devices_of(ctx)
    http = webtest.TestApp(app.setup_app())
    member = {'X-Project-Id': 'p1', 'X-User-Id': 'u1',
              'X-Roles': 'member,reader'}
    end = (_now() + datetime.timedelta(hours=1)).isoformat()
    made = http.post_json('/v1/leases', {'lease': {
        'end_date': end, 'reservations': [
            {'resource_type': 'accelerator:FPGA', 'amount': 1}]}},
        headers=member, status=201).json['lease']
    path = '/v1/leases/%s' % made['id']

    def put(amount, status):
        return http.put_json(path, {'lease': {'reservations': [
            {'id': made['reservations'][0]['id'], 'amount': amount}]}},
            headers=member, status=status).json

    def fpga():
        return http.get('/v1/quota_usages/p1', headers=member).json[
            'quota_usage']['resources']['FPGA']

    grown = put(2, 200)['lease']
    assert grown['reservations'][0]['amount'] == 2
    assert _devices(grown) == [('dev0', 2)]
    assert (fpga()['used'], fpga()['leased']) == (2, 2)

    assert put(1, 409)['errors'][0]['code'] == 'cyquota.lease_conflict'
    # Another project takes dev1: p1's lease has no device to grow on.
    _lease(ctx, 'p2', 1, _now() + datetime.timedelta(minutes=30))
    assert put(3, 409)['errors'][0]['code'] == \
        'cyquota.no_valid_allocation'
    leases.LEASES.delete(ctx, leases.LEASES.list(ctx, 'p2')[0]['id'])
    QUOTAS.limits.set_project_limit(ctx, 'p1', RESOURCE, 2)
    over = put(3, 403)['errors'][0]
    assert over['code'] == 'cyquota.over_quota'
    assert [(o['project_id'], o['resource'], o['scope'], o['limit'],
             o['requested']) for o in over['overs']] == [
        ('p1', 'FPGA', 'project', 2, 3)]
    assert http.get(path, headers=member).json['lease'] == grown
    assert (fpga()['used'], fpga()['leased']) == (2, 2)
    assert _books(ctx) == []


# -- the race ----------------------------------------------------------------

def _start_racer(url, barrier):
    global _barrier
    _barrier = barrier
    CONF([], project='cyquota', default_config_files=[])
    fixtures.use_database(url, migrate=False)


def _race(task, lease_view, delay):
    """One racer's move once every racer is ready (and ``delay`` seconds
    more): its outcome."""
    ctx = cyquota_context.get_admin_context()
    end = datetime.datetime.fromisoformat(lease_view['end_date'])
    _barrier.wait(timeout=_START_TIMEOUT)
    time.sleep(delay)
    try:
        if task == 'grow':
            _grow(ctx, lease_view, 3)
        else:
            _lease(ctx, task, 1, end)
    except exception.OverQuota:
        return task, 'over quota'
    except device_errors.NoValidAllocation:
        return task, 'no devices'
    return task, 'served'


@pytest.fixture(scope='module')
def _racers():
    pools = {}
    yield pools
    for pool, _barrier_of in pools.values():
        pool.close()
        pool.join()


def test_a_grow_races_creates_for_the_last_device_and_quota(backend, db_url,
                                                            ctx, _racers,
                                                            quota_check):
    """p1's lease holds dev0 (2 of its 3 FPGAs); it grows by one while p1
    and p2 each create a lease of one: all three want dev1, p1's two the
    last unit of p1's quota. Exactly one is served, every round."""
    if db_url not in _racers:
        barrier = SPAWN.Barrier(RACERS + 1)
        _racers[db_url] = (SPAWN.Pool(RACERS, _start_racer,
                                      (db_url, barrier)), barrier)
    pool, barrier = _racers[db_url]
    winners = []
    for number in range(ROUNDS):
        fixtures.clear_tables()
        _devices_of(ctx)
        made = _lease(ctx, 'p1', 2, _now() + datetime.timedelta(hours=1))
        assert _devices(made) == [('dev0', 2)]
        # Each racer in turn gets a head start of 150 ms, so
        # that each wins some rounds; they still overlap.
        favourite = TASKS[number % len(TASKS)]
        work = pool.starmap_async(_race, [
            (task, made, 0.0 if task == favourite else 0.15)
            for task in TASKS], chunksize=1)
        barrier.wait(timeout=_START_TIMEOUT)
        outcomes = dict(work.get(timeout=_START_TIMEOUT))
        served = [task for task, outcome in outcomes.items()
                  if outcome == 'served']
        assert len(served) == 1, outcomes
        winners += served
        if outcomes['p1'] != 'served':
            # The last unit of p1's quota or dev1 went to another.
            assert outcomes['p1'] in ('over quota', 'no devices')
        assert outcomes['p2'] in ('served', 'no devices')
        assert _usage(ctx)['used'] <= 3
        assert _books(ctx) == []
        grown = leases.LEASES.get(ctx, made['id'])
        assert _devices(grown) == ([('dev0', 2), ('dev1', 1)]
                                   if served == ['grow'] else [('dev0', 2)])
        for live in leases.LEASES.list(ctx):
            leases.LEASES.delete(ctx, live['id'])
        assert _usage(ctx)['used'] == _usage(ctx, 'p2')['used'] == 0
        assert _books(ctx) == []
    assert quota_check() == (0, 'No drift.')
    print('%s: served %s' % (db_url.split(':')[0], winners))
