"""The pool key as a capability, end to end through the REST API on the real
PostgreSQL: project B, which knows project A's pool key, cannot take A's
pool (by a lease, a reservation's devices or allocation candidates); it
gets the answer of a key that does not exist, and A's lease then still
succeeds."""

import datetime
import uuid

import pytest
import webtest

from cyquota.api import app
from tests.functional import api_callers

ADMIN = api_callers.ADMIN
START = api_callers.START
member = api_callers.member
SERVICE = {'X-Project-Id': 'services', 'X-User-Id': 'nova',
           'X-Roles': 'service'}
KEY = 'reservation:pool-1'
UNKNOWN = 'reservation:no-such-pool'


@pytest.fixture
def api(backend):
    """The API over the server's database, with project A's pool of 2
    FPGAs (filter_tenant_id A) and an ordinary device of 2 FPGAs."""
    http = webtest.TestApp(app.setup_app())
    http.put_json('/v1/registered_limits/FPGA', {'default_limit': 4},
                  headers=ADMIN)
    pool = str(uuid.uuid4())
    for name, aggs in (('pool-dev', [pool]), ('plain-dev', [])):
        rp = http.post_json('/v1/resource_providers', {'name': name},
                            headers=ADMIN).json['uuid']
        http.put_json('/v1/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 0,
            'inventories': {'FPGA': {'total': 2}}}, headers=ADMIN)
        http.put_json('/v1/resource_providers/%s/aggregates' % rp, {
            'resource_provider_generation': 1, 'aggregates': aggs},
            headers=ADMIN)
    http.put_json('/v1/aggregates/%s' % pool, {
        'name': 'pool of A',
        'metadata': {KEY: 'a', 'filter_tenant_id': 'A'}}, headers=ADMIN)
    return http


def _lease(key):
    return {'lease': {
        'start_date': START.isoformat(),
        'end_date': (START + datetime.timedelta(hours=2)).isoformat(),
        'reservations': [{'resource_type': 'accelerator:FPGA', 'amount': 2,
                          'member_key': key}]}}


def _errors(response):
    """The error document without its request id, which differs."""
    return [{field: value for field, value in error.items()
             if field != 'request_id'} for error in response.json['errors']]


def _refused_like_unknown(api, path, body, headers):
    taken = api.post_json(path, body(KEY), headers=headers, status=409)
    unknown = api.post_json(path, body(UNKNOWN), headers=headers,
                            status=409)
    assert _errors(taken) == _errors(unknown)
    assert _errors(taken)[0]['code'] == 'cyquota.no_valid_allocation'


@pytest.mark.parametrize('backend', ['postgresql'], indirect=True)
def test_another_project_cannot_take_a_pool(api):
    # A lease of project B carrying A's key.
    _refused_like_unknown(api, '/v1/leases', _lease, member('B'))
    assert api.get('/v1/leases', headers=member('B')).json['leases'] == []

    # A service reserving for project B with A's key on the devices.
    def reserve(key):
        return {'project_id': 'B', 'deltas': {'FPGA': 2},
                'consumer_id': 'vm-b', 'devices': {
                    'resources': 'FPGA:2', 'member_key': key}}
    _refused_like_unknown(api, '/v1/reservations', reserve, SERVICE)
    usage = api.get('/v1/quota_usages/B', headers=ADMIN).json
    assert usage['quota_usage']['resources']['FPGA']['reserved'] == 0

    # Allocation candidates for the service's own project.
    def candidates(key):
        return api.get('/v1/allocation_candidates', params={
            'resources': 'FPGA:2', 'member_key': key}, headers=SERVICE).json
    assert candidates(KEY) == candidates(UNKNOWN) == {
        'allocation_requests': [], 'provider_summaries': {}}

    # A's lease still gets the whole pool.
    made = api.post_json('/v1/leases', _lease(KEY), headers=member('A'),
                         status=201).json['lease']
    assert made['status'] == 'PENDING'
    assert [(a['resource_provider_name'], a['amount'])
            for a in made['reservations'][0]['allocations']] == [
        ('pool-dev', 2)]


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'], indirect=True)
def test_a_revoked_key_grows_no_lease(api):
    """Issue 42: once the operator takes A off the pool (which, naming no
    project, becomes the operator's), A's member cannot raise its pending
    lease there from 1 to 2 (a PUT answers as a create of 2 with a key
    that does not exist), and the lease stays exactly as it was; a
    rename, which chooses no devices, still goes."""
    body = _lease(KEY)
    body['lease']['reservations'][0]['amount'] = 1
    made = api.post_json('/v1/leases', body, headers=member('A'),
                         status=201).json['lease']
    path = '/v1/leases/%s' % made['id']
    [device] = [rp for rp in api.get('/v1/resource_providers', headers=ADMIN)
                .json['resource_providers'] if rp['name'] == 'pool-dev']
    [pool] = api.get('/v1/resource_providers/%s/aggregates' % device['uuid'],
                     headers=ADMIN).json['aggregates']
    api.put_json('/v1/aggregates/%s' % pool, {
        'name': 'pool of A', 'metadata': {KEY: 'a'}}, headers=ADMIN)

    refused = api.put_json(path, {'lease': {'reservations': [
        {'id': made['reservations'][0]['id'], 'amount': 2}]}},
        headers=member('A'), status=409)
    unknown = api.post_json('/v1/leases', _lease(UNKNOWN),
                            headers=member('A'), status=409)
    assert _errors(refused) == _errors(unknown)
    assert api.get(path, headers=member('A')).json['lease'] == made
    renamed = api.put_json(path, {'lease': {'name': 'kept'}},
                           headers=member('A')).json['lease']
    assert renamed['reservations'] == made['reservations']
