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
from cyquota.db import placement_models as pm
from cyquota.placement import device_errors
from cyquota import quota
from tests import fixtures
from tests.unit.placement import test_claim_candidates as claims
from tests.unit.placement import test_claim_steps as steps


@pytest.fixture
def cloud(backend, ctx):
    steps.cloud_of_nodes(ctx)
    return ctx


def test_a_common_claim_is_one_statement_and_the_searchs_first(cloud):
    for number in range(8):
        expected = steps.first(cloud)
        alone, locked = steps.claim_sending(cloud, 'vm-%d' % number)
        assert (len(alone), locked) == (1, [])
        assert steps.held('vm-%d' % number) == expected
    # Eight devices: past the third node, in the lease pool, which the
    # search skips.
    assert steps.reserved() == 8


@steps.UNDECIDED
def test_what_the_statement_cannot_decide_the_locked_path_does(
        backend, ctx, spec):
    # The one statement refuses, undoing its UPDATE.
    steps.cloud_undecided(ctx, spec)
    steps.check_left_to_the_locked_path(ctx, one_statement=True)


def test_a_claim_refused_writes_nothing(cloud):
    steps.check_refusals_write_nothing(cloud)


def test_a_request_id_seen_before_claims_nothing_more(cloud):
    first = quota.QUOTAS.reserve(cloud, steps.PROJECT, {'FPGA': 1},
                                 request_id='attach-1', consumer_id='vm',
                                 devices=steps.ONE)
    assert quota.QUOTAS.reserve(cloud, steps.PROJECT, {'FPGA': 1},
                                request_id='attach-1', consumer_id='vm',
                                devices=steps.ONE) == first
    assert sum(held['FPGA'] for held in steps.held('vm').values()) == 1
    assert steps.reserved() == 1


def test_the_claims_devices_are_read_back_in_one_statement_alone(cloud):
    """What the REST answer shows of a claim (``get_device_allocations``)
    is read in one statement on the autocommit engine: no transaction's
    round trips around it."""
    quota.QUOTAS.reserve(cloud, steps.PROJECT, {'FPGA': 1},
                         consumer_id='vm', devices=steps.ONE)
    with fixtures.statements_sent() as in_transaction:
        with fixtures.statements_sent(
                db_api.get_autocommit_engine()) as alone:
            shown = quota.QUOTAS.get_device_allocations(cloud, 'vm')
    assert (len(alone), in_transaction) == (1, [])
    assert shown['project_id'] == steps.PROJECT
    assert [held['resources'] for held
            in shown['allocations'].values()] == [{'FPGA': 1}]


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
        " WHERE info LIKE 'UPDATE resource_providers%%'"
        " AND db = DATABASE()").scalar() > 0


def test_a_device_taken_while_the_statement_waits_is_not_overbooked(
        backend, ctx):
    ids = claims.build([{}] + [
        {'parent': 0, 'inventory': {'FPGA': {'total': 1}}}] * 2)
    steps.made_ready(ctx)
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
        claiming = pool.submit(steps.claim_sending, ctx, 'vm')
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
    assert steps.held('vm') == {ids[2]: {'FPGA': 1}}
    assert steps.used_by_device() == {ids[1]: 1, ids[2]: 1}
    assert steps.reserved() == 1


WORKERS = 6
CLAIMS_PER_WORKER = 5
DEVICES = 3
CAPACITY = 3


def _worker(url, worker, results):
    CONF([], project='cyquota', default_config_files=[])
    fixtures.use_database(url, migrate=False)
    ctx = context.get_admin_context()
    # Odd workers name the aggregate every device is in: the locked path.
    params = dict(steps.ONE, **({'member_of': claims.AGGREGATES[0]}
                                if worker % 2 else {}))
    won = {}
    for attempt in range(CLAIMS_PER_WORKER):
        consumer_id = 'w%d-%d' % (worker, attempt)
        try:
            won[consumer_id] = steps.reserve(ctx, consumer_id, params)
        except device_errors.NoValidAllocation:
            continue
        if attempt == 1:
            # Give one back while the others are still claiming.
            quota.QUOTAS.rollback(ctx, steps.PROJECT, won.pop(consumer_id))
    results.put(won)


def test_claims_at_once_through_both_paths_fill_each_device_once(
        backend, ctx, db_url):
    claims.build([{'aggs': [0]}] + [
        {'parent': 0, 'inventory': {'FPGA': {'total': CAPACITY}}}
        for _ in range(DEVICES)])
    steps.made_ready(ctx)
    won = fixtures.results_of_workers(
        _worker, [(db_url, worker) for worker in range(WORKERS)])
    # Every unit was taken, none twice; each winner holds its device and
    # its reservation, and nothing else is held.
    assert len(won) == DEVICES * CAPACITY
    assert all(used == CAPACITY for used in steps.used_by_device().values())
    assert all(sum(held['FPGA'] for held in steps.held(consumer).values()) == 1
               for consumer in won)
    assert steps.reserved() == len(won)
    with db_api.get_engine().connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(
            pm.DeviceConsumer)).scalar() == len(won)
