"""A reserve that claims a device, on PostgreSQL and MariaDB: the common
claim (one class, no ``member_of``, no member key) runs inside the
ledger's one statement and takes the full search's first candidate; what
that statement cannot decide exactly it leaves, having written nothing,
to the locked path, which decides as before; and processes claiming at
once through both paths never put more on a device than it holds."""

import concurrent.futures
import time

import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota.db import placement_models as pm
from cyquota import exception
from cyquota.placement import candidates
from cyquota.placement import capacity
from cyquota.placement import pools
from cyquota.placement import request as request_mod
from cyquota import quota
from tests import fixtures
from tests.unit.placement import test_claim_candidates as claims

PROJECT = 'p'
ONE = {'resources': 'FPGA:1'}


def _reserve(ctx, consumer_id, params=ONE, amount=1):
    return quota.QUOTAS.reserve(ctx, PROJECT, {'FPGA': amount},
                                consumer_id=consumer_id, devices=params)


def _first(ctx, params=ONE):
    """The full search's first candidate for ``params``: ``{provider id:
    {rc: amount}}``."""
    device_request = request_mod.from_params(params)
    with db_api.reader_connection(ctx) as conn:
        rule = pools.rule_for(conn, device_request.member_keys,
                              pools.Carrier.of(ctx, PROJECT))
        found = next(candidates.iter_allocation_requests(
            conn, device_request, rule), None)
    return None if found is None else found.allocations


def _held(consumer_id):
    with db_api.get_engine().connect() as conn:
        rows = conn.execute(
            sa.select(pm.DeviceAllocation.resource_provider_id,
                      pm.DeviceAllocation.resource_class,
                      pm.DeviceAllocation.used)
            .where(pm.DeviceAllocation.consumer_id == consumer_id)).all()
    return {provider_id: {rc: used} for provider_id, rc, used in rows}


def _reserved():
    with db_api.get_engine().connect() as conn:
        return conn.execute(
            sa.select(models.QuotaUsage.reserved)
            .where(models.QuotaUsage.project_id == PROJECT,
                   models.QuotaUsage.resource == 'FPGA')).scalar()


def _generations():
    with db_api.get_engine().connect() as conn:
        return dict(conn.execute(sa.select(
            pm.ResourceProvider.id, pm.ResourceProvider.generation)).all())


def _claim_sending(ctx, consumer_id, params=ONE):
    """Claim one FPGA for ``consumer_id``; return what each engine sent:
    ``(one statements run, statements of transactions)``."""
    with fixtures.statements_sent(db_api.get_autocommit_engine()) as alone, \
            fixtures.statements_sent() as locked:
        _reserve(ctx, consumer_id, params)
    # A connection prepares a one statement the first time it runs it.
    return [sql for sql in alone if not sql.startswith('PREPARE')], locked


@pytest.fixture
def cloud(backend, ctx):
    """30 nodes of 3 one-FPGA devices (the first of each taken, every
    third node in the lease pool), and a project that has reserved once
    (its usage row made)."""
    claims.build(claims.devices(120, per_node=3), pool=True)
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 1000)
    quota.QUOTAS.rollback(ctx, PROJECT, quota.QUOTAS.reserve(
        ctx, PROJECT, {'FPGA': 1}))
    return ctx


def test_a_common_claim_is_one_statement_and_the_searchs_first(cloud):
    for number in range(8):
        expected = _first(cloud)
        alone, locked = _claim_sending(cloud, 'vm-%d' % number)
        assert (len(alone), locked) == (1, [])
        assert _held('vm-%d' % number) == expected
    # Eight devices: past the third node, in the lease pool, which the
    # search skips.
    assert _reserved() == 8


@pytest.mark.parametrize('spec', [
    # A pending lease on the first device with room: its peak is read.
    {'pending': {'FPGA': 1}},
    # A step size the amount is not a multiple of.
    {'step_size': 2},
    # A sharing provider of the class somewhere in the cloud.
    {'sharing': True},
], ids=['pending lease', 'step size', 'sharing provider'])
def test_what_the_statement_cannot_decide_the_locked_path_does(
        backend, ctx, spec):
    devices = [{}]
    for index in range(3):
        inventory = {'total': 2}
        if index == 0 and 'step_size' in spec:
            inventory.update(step_size=spec['step_size'], max_unit=2)
        devices.append({'parent': 0, 'inventory': {'FPGA': inventory},
                        'pending': spec.get('pending', {})
                        if index == 0 else {}})
    if spec.get('sharing'):
        devices.append({'inventory': {'FPGA': {'total': 1}},
                        'aggs': [1], 'sharing': True})
    claims.build(devices)
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 1000)
    quota.QUOTAS.rollback(ctx, PROJECT, quota.QUOTAS.reserve(
        ctx, PROJECT, {'FPGA': 1}))
    expected = _first(ctx)
    generations = _generations()
    alone, locked = _claim_sending(ctx, 'vm')
    # The one statement refused, undoing its UPDATE; the locked path
    # claimed the search's first.
    assert len(alone) == 1 and locked
    assert _held('vm') == expected
    assert _reserved() == 1
    [chosen] = expected
    assert _generations() == {**generations,
                              chosen: generations[chosen] + 1}


def test_a_claim_refused_writes_nothing(cloud):
    _reserve(cloud, 'vm-1')
    generations, held = _generations(), _held('vm-1')
    with pytest.raises(exception.ConsumerExists):
        _reserve(cloud, 'vm-1')
    quota.QUOTAS.limits.set_project_limit(cloud, PROJECT, 'FPGA', 1)
    with pytest.raises(exception.OverQuota):
        _reserve(cloud, 'vm-2')
    quota.QUOTAS.limits.set_project_limit(cloud, PROJECT, 'FPGA', 1000)
    with pytest.raises(exception.NoValidAllocation):
        _reserve(cloud, 'vm-3', {'resources': 'FPGA:2'}, amount=2)
    assert (_generations(), _held('vm-1'), _reserved()) == (
        generations, held, 1)
    assert _held('vm-2') == _held('vm-3') == {}


def test_a_request_id_seen_before_claims_nothing_more(cloud):
    first = quota.QUOTAS.reserve(cloud, PROJECT, {'FPGA': 1},
                                 request_id='attach-1', consumer_id='vm',
                                 devices=ONE)
    assert quota.QUOTAS.reserve(cloud, PROJECT, {'FPGA': 1},
                                request_id='attach-1', consumer_id='vm',
                                devices=ONE) == first
    assert sum(held['FPGA'] for held in _held('vm').values()) == 1
    assert _reserved() == 1


def _waiting_for_a_lock(conn):
    """Whether another session of the server waits for a row lock (on
    MariaDB: runs the generation's UPDATE, which waits; INNODB_TRX may
    show a compound statement's wait as running)."""
    if conn.dialect.name == 'postgresql':
        return conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type ="
            " 'Lock' AND datname = current_database()").scalar() > 0
    return conn.exec_driver_sql(
        "SELECT count(*) FROM information_schema.processlist"
        " WHERE info LIKE 'UPDATE resource_providers%%'").scalar() > 0


def test_a_device_taken_while_the_statement_waits_is_not_overbooked(
        backend, ctx):
    ids = claims.build([{}] + [
        {'parent': 0, 'inventory': {'FPGA': {'total': 1}}}] * 2)
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 1000)
    quota.QUOTAS.rollback(ctx, PROJECT, quota.QUOTAS.reserve(
        ctx, PROJECT, {'FPGA': 1}))
    # Another writer takes the first device and holds its provider's
    # lock: the statement reads the device free, then waits for the lock,
    # then finds the generation moved on.
    taking = db_api.get_engine().connect()
    transaction = taking.begin()
    taking.execute(sa.update(pm.ResourceProvider).where(
        pm.ResourceProvider.id == ids[1]).values(
            generation=pm.ResourceProvider.generation + 1))
    taking.execute(sa.insert(pm.DeviceAllocation).values(
        resource_provider_id=ids[1], consumer_id='other',
        resource_class='FPGA', used=1))
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        claiming = pool.submit(_claim_sending, ctx, 'vm')
        try:
            with db_api.get_engine().connect() as watching:
                deadline = time.monotonic() + 30
                while not _waiting_for_a_lock(watching):
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
        finally:
            transaction.commit()
            taking.close()
        alone, locked = claiming.result(timeout=60)
    # Refused after the wait, then claimed by the locked path.
    assert len(alone) == 1 and locked
    assert _held('vm') == {ids[2]: {'FPGA': 1}}
    assert _used_by_device() == {ids[1]: 1, ids[2]: 1}
    assert _reserved() == 1


WORKERS = 6
CLAIMS_PER_WORKER = 5
DEVICES = 3
CAPACITY = 3


def _worker(url, worker, results):
    CONF([], project='cyquota', default_config_files=[])
    fixtures.use_database(url, migrate=False)
    ctx = context.get_admin_context()
    # Odd workers name the aggregate every device is in: the locked path.
    params = dict(ONE, **({'member_of': claims.AGGREGATES[0]}
                          if worker % 2 else {}))
    won = {}
    for attempt in range(CLAIMS_PER_WORKER):
        consumer_id = 'w%d-%d' % (worker, attempt)
        try:
            won[consumer_id] = _reserve(ctx, consumer_id, params)
        except exception.NoValidAllocation:
            continue
        if attempt == 1:
            # Give one back while the others are still claiming.
            quota.QUOTAS.rollback(ctx, PROJECT, won.pop(consumer_id))
    results.put(won)


def test_claims_at_once_through_both_paths_fill_each_device_once(
        backend, ctx, db_url):
    claims.build([{'aggs': [0]}] + [
        {'parent': 0, 'inventory': {'FPGA': {'total': CAPACITY}}}
        for _ in range(DEVICES)])
    quota.QUOTAS.limits.set_registered_limit(ctx, 'FPGA', 1000)
    quota.QUOTAS.rollback(ctx, PROJECT, quota.QUOTAS.reserve(
        ctx, PROJECT, {'FPGA': 1}))
    won = fixtures.results_of_workers(
        _worker, [(db_url, worker) for worker in range(WORKERS)])
    # Every unit was taken, none twice; each winner holds its device and
    # its reservation, and nothing else is held.
    assert len(won) == DEVICES * CAPACITY
    assert all(used == CAPACITY for used in _used_by_device().values())
    assert all(sum(held['FPGA'] for held in _held(consumer).values()) == 1
               for consumer in won)
    assert _reserved() == len(won)
    with db_api.get_engine().connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(
            pm.DeviceConsumer)).scalar() == len(won)


def _used_by_device():
    with db_api.reader_connection(context.get_admin_context()) as conn:
        return {provider_id: record.used for (provider_id, _rc), record
                in capacity.load(conn).items()}
