"""Concurrent device claims on the real PostgreSQL and MariaDB: several
processes claiming on the same devices never put more on a device than its
capacity, and every claim that succeeded is exactly what is stored."""

from cyquota.conf import CONF
from cyquota import context
from cyquota.db import api as db_api
from cyquota.placement import allocations
from cyquota.placement import capacity
from cyquota.placement import device_errors
from cyquota.placement import inventories
from cyquota.placement import providers
from cyquota.placement import request
from tests import fixtures

WORKERS = 6
CLAIMS_PER_WORKER = 5
CAPACITY_PER_DEVICE = 3
DEVICES = 3


@db_api.retry_on_conflict
def _claim_in_ledger_transaction(ctx, consumer_id, device_request):
    # What the ledger's reserve does: the claim joins its transaction, and
    # a lost race retries the whole transaction.
    with db_api.writer(ctx):
        return allocations.claim(ctx, consumer_id, 'project', device_request)


def _worker(url, worker, params, results):
    CONF([], project='cyquota', default_config_files=[])
    fixtures.use_database(url, migrate=False)
    ctx = context.get_admin_context()
    device_request = request.from_params(params)
    won = {}
    for attempt in range(CLAIMS_PER_WORKER):
        consumer_id = 'w%d-%d' % (worker, attempt)
        try:
            if worker % 2:
                won[consumer_id] = _claim_in_ledger_transaction(
                    ctx, consumer_id, device_request)
            else:
                won[consumer_id] = allocations.claim(
                    ctx, consumer_id, 'project', device_request)
        except device_errors.NoValidAllocation:
            pass
        if attempt == 1 and consumer_id in won:
            # Give one back while the others are still claiming.
            allocations.free(ctx, consumer_id)
            del won[consumer_id]
    results.put(won)


def _run(db_url, params):
    ctx = context.get_admin_context()
    root = providers.create(ctx, 'cn')
    for index in range(DEVICES):
        device = providers.create(ctx, 'dev%d' % index,
                                  parent_provider_uuid=root.uuid)
        inventories.set_all(ctx, device.uuid, 0, {
            'FPGA': {'total': CAPACITY_PER_DEVICE + 1, 'reserved': 1}})
    won = fixtures.results_of_workers(
        _worker, [(db_url, worker, params) for worker in range(WORKERS)])
    with db_api.reader(ctx) as session:
        records = capacity.load(session)
    return won, records


def _held(won):
    held = {}
    for body in won.values():
        for provider_uuid, allocation in body.items():
            held[provider_uuid] = (held.get(provider_uuid, 0)
                                   + allocation['resources']['FPGA'])
    return held


def test_concurrent_single_device_claims(backend, db_url):
    won, records = _run(db_url, {'resources': 'FPGA:1'})
    # Every unit was taken, none twice, and what the winners were told is
    # what is stored.
    assert len(won) == DEVICES * CAPACITY_PER_DEVICE
    for record in records.values():
        assert record.used == record.capacity == CAPACITY_PER_DEVICE
    stored = {providers.get(context.get_admin_context(), uuid).id: amount
              for uuid, amount in _held(won).items()}
    assert stored == {provider_id: record.used
                      for (provider_id, _rc), record in records.items()}


def test_concurrent_multi_device_claims(backend, db_url):
    won, records = _run(db_url, {'resources1': 'FPGA:1',
                                 'resources2': 'FPGA:1',
                                 'group_policy': 'isolate'})
    assert all(len(body) == 2 for body in won.values())
    for record in records.values():
        assert record.used <= record.capacity
    assert sum(record.used for record in records.values()) == 2 * len(won)
    # Claims pack devices in provider order: dev0 and dev1 fill up in pairs
    # and dev2 alone cannot take a pair.
    assert len(won) >= CAPACITY_PER_DEVICE
