"""The parts of the lease write-back (``cyquota.cloud.lease_writeback``)
that need no Placement: what a refusal names, the allocations' shape, the
option's check, nothing written when it is off, and a lease that commits
whatever Placement does (an address where nothing answers). The
functional tests run it against a real Placement."""

import datetime
import uuid

import pytest
import sqlalchemy as sa
import webtest

from cyquota.api import app
from cyquota.cloud import lease_outbox
from cyquota.cloud import lease_writeback
from cyquota.cloud import placement_errors as errors
from cyquota.conf import CONF
from cyquota.conf import validation
from cyquota.db import api as db_api
from cyquota.db import mirror_models
from cyquota import metrics
from cyquota.quota import QUOTAS
from cyquota import resource_classes
from tests import fixtures
from tests.unit import test_placement_options

GPU0 = '6b0e6f5c-3f0a-4d5e-9c1b-2a7d8e9f0a1b'
GPU1 = 'c2d4e6f8-0a1b-4c3d-8e5f-6a7b8c9d0e1f'
LEASE = '0f1e2d3c-4b5a-4697-8877-665544332211'
PROVIDERS = {GPU0: 'node-1-gpu0', GPU1: 'node-1-gpu1'}
CAPACITY = ("There was a conflict when trying to complete your request. "
            "Unable to allocate inventory: Unable to create allocation for "
            "'PGPU' on resource provider '%s'. The requested amount would "
            "exceed the capacity.")
MEMBER = {'X-Project-Id': 'p1', 'X-User-Id': 'u1', 'X-Roles': 'member'}


def _error(status, detail, code='placement.undefined_code'):
    return errors.http_error('PUT', '/allocations/%s' % LEASE, status, {
        'errors': [{'status': status, 'code': code, 'detail': detail}]})


def test_a_refusal_names_the_device_placement_names():
    assert lease_writeback.named_providers(
        CAPACITY % GPU1.upper(), PROVIDERS) == [(GPU1, 'node-1-gpu1')]
    both = 'on %s, then %s and %s again' % (GPU1, GPU0, GPU1)
    assert lease_writeback.named_providers(both, PROVIDERS) == [
        (GPU1, 'node-1-gpu1'), (GPU0, 'node-1-gpu0')]


def test_a_refusal_naming_none_of_the_devices_names_them_all():
    # Placement names the consumer (the lease) and a provider not the
    # lease's.
    detail = ('Unable to allocate inventory for consumer %s: on %s'
              % (LEASE, uuid.uuid4()))
    assert lease_writeback.named_providers(detail, PROVIDERS) == [
        (GPU0, 'node-1-gpu0'), (GPU1, 'node-1-gpu1')]
    assert lease_writeback.named_providers('', PROVIDERS) == sorted(
        PROVIDERS.items())


def test_the_reason_says_which_device_and_why():
    error = _error(409, CAPACITY % GPU0)
    named = lease_writeback.named_providers(error.detail, PROVIDERS)
    assert lease_writeback.refusal_reason(named, error) == (
        'Placement refused the allocation on node-1-gpu0 (%s): %s'
        % (GPU0, CAPACITY % GPU0))
    bare = _error(409, '')
    assert lease_writeback.refusal_reason(named, bare) == (
        'Placement refused the allocation on node-1-gpu0 (%s): 409 '
        'placement.undefined_code' % GPU0)
    long = lease_writeback.refusal_reason(named, _error(400, 'x' * 2000))
    assert len(long) == 1024


@pytest.mark.parametrize('error, refusal', [
    (_error(409, CAPACITY % GPU0), True),
    (_error(400, "Allocation for resource provider '%s' that does not "
                 "exist." % GPU0), True),
    (_error(409, 'changed', code=errors.CONCURRENT_UPDATE), False),
    (_error(500, 'database is locked'), False),
    (errors.PlacementUnreachable('Placement PUT /allocations/x: refused'),
     False),
])
def test_what_is_a_refusal(error, refusal):
    assert lease_writeback.is_refusal(error) is refusal


def test_allocations_map_the_classes_and_add_up():
    names = {1: (GPU0, 'node-1-gpu0', 'root'), 2: (GPU1, 'node-1-gpu1',
                                                   'root')}
    classes = resource_classes.ClassMap({'GPU': 'PGPU'})
    assert lease_outbox.allocations(
        [(1, 'GPU', 2), (2, 'GPU', 1), (1, 'GPU', 1), (1, 'FPGA', 1)],
        names, classes) == {GPU0: {'PGPU': 3, 'FPGA': 1},
                            GPU1: {'PGPU': 1}}


def test_write_leases_needs_source_placement(tmp_path):
    conf = test_placement_options._conf(
        tmp_path, '[placement]\nwrite_leases = true\n')
    with pytest.raises(validation.InvalidOption) as caught:
        validation.validate(conf)
    assert str(caught.value) == (
        "[placement] write_leases: needs source = placement (leases are "
        "written to the cloud's Placement)")
    assert not test_placement_options._conf(tmp_path).placement.write_leases


@pytest.fixture
def api(sqlite_db, ctx):
    client = webtest.TestApp(app.setup_app())
    client.post_json('/v1/resource_providers', {'name': 'gpu'}, headers={
        'X-Roles': 'admin'})
    rp = client.get('/v1/resource_providers', headers={
        'X-Roles': 'admin'}).json['resource_providers'][0]
    client.put_json('/v1/resource_providers/%s/inventories' % rp['uuid'], {
        'resource_provider_generation': rp['generation'],
        'inventories': {'GPU': {'total': 4}}}, headers={'X-Roles': 'admin'})
    QUOTAS.limits.set_registered_limit(ctx, 'GPU', 4)
    return client


def _lease(api):
    return api.post_json('/v1/leases', {'lease': {
        'end_date': (datetime.datetime.now(datetime.timezone.utc)
                     + datetime.timedelta(days=1)).isoformat(),
        'reservations': [
            {'resource_type': 'accelerator:GPU', 'amount': 2}]}},
        headers=MEMBER, status=201).json['lease']


def _statements(action):
    with fixtures.statements_sent() as seen:
        action()
    return seen


def test_local_mode_writes_nothing_more(api):
    def lease_and_end():
        made = _lease(api)
        api.delete('/v1/leases/%s' % made['id'], headers=MEMBER,
                   status=204)
    assert CONF.placement.source == 'local'
    assert not [s for s in _statements(lease_and_end)
                if 'placement_lease_writes' in s]


def _writes():
    table = mirror_models.LeaseWrite.__table__
    with db_api.get_engine().connect() as conn:
        return [dict(row) for row in conn.execute(
            sa.select(table.c.held, table.c.version,
                      table.c.applied)).mappings()]


def test_a_lease_commits_while_placement_does_not_answer(api):
    # Devices entered before; nothing listens on port 9.
    settings = {'source': 'placement', 'write_leases': True,
                'auth_type': 'admin_token',
                'endpoint_override': 'http://127.0.0.1:9', 'timeout': 5}
    for name, value in settings.items():
        CONF.set_override(name, value, 'placement')
    lease_writeback.reset()
    failed = metrics.LEASE_WRITES.labels('failed')._value.get()
    try:
        made = _lease(api)
        assert made['status'] == 'ACTIVE'
        assert _writes() == [dict(held=True, version=1, applied=False)]
        # Placement away: the DELETE does not even try it, the conductor
        # will.
        api.delete('/v1/leases/%s' % made['id'], headers=MEMBER,
                   status=204)
        assert api.get('/v1/leases/%s' % made['id'], headers=MEMBER).json[
            'lease']['status'] == 'ENDED'
        assert _writes() == [dict(held=False, version=2, applied=False)]
    finally:
        for name in settings:
            CONF.clear_override(name, 'placement')
        lease_writeback.reset()
    assert metrics.LEASE_WRITES.labels('failed')._value.get() == failed + 1
