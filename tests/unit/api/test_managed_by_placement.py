"""With ``[placement] source = placement`` the devices are a copy of the
cloud's Placement: cyquota's REST refuses device writes with 409
``cyquota.managed_by_placement`` and changes nothing, but aggregate names
and metadata (pool keys, ``filter_tenant_id``) stay cyquota's."""

import uuid

import pytest
import webtest

from cyquota.api import app
from cyquota.conf import CONF

ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin'}
AGG = str(uuid.uuid4())


@pytest.fixture
def api(sqlite_db):
    client = webtest.TestApp(app.setup_app())
    rp = client.post_json('/v1/resource_providers', {'name': 'gpu'},
                          headers=ADMIN).json
    client.put_json('/v1/resource_providers/%s/aggregates' % rp['uuid'], {
        'aggregates': [AGG], 'resource_provider_generation': 0},
        headers=ADMIN)
    CONF.set_override('source', 'placement', 'placement')
    client.rp = rp['uuid']
    yield client
    CONF.clear_override('source', 'placement')


def _refused(response, what):
    error = response.json['errors'][0]
    assert (error['status'], error['code']) == (
        409, 'cyquota.managed_by_placement')
    assert what in error['detail']
    assert "[placement] source = placement" in error['detail']


def test_device_writes_are_refused_and_change_nothing(api):
    rp = '/v1/resource_providers/%s' % api.rp
    _refused(api.post_json('/v1/resource_providers', {'name': 'other'},
                           headers=ADMIN, status=409), 'resource providers')
    _refused(api.delete(rp, headers=ADMIN, status=409), 'resource providers')
    _refused(api.put_json(rp + '/inventories', {
        'resource_provider_generation': 1,
        'inventories': {'GPU': {'total': 4}}}, headers=ADMIN, status=409),
        'inventories')
    _refused(api.put_json(rp + '/aggregates', {
        'resource_provider_generation': 1, 'aggregates': []},
        headers=ADMIN, status=409), 'aggregates')
    _refused(api.put_json(rp + '/traits', {
        'resource_provider_generation': 1, 'traits': ['CUSTOM_X']},
        headers=ADMIN, status=409), 'traits')
    listed = api.get('/v1/resource_providers', headers=ADMIN).json
    assert [p['uuid'] for p in listed['resource_providers']] == [api.rp]
    assert listed['resource_providers'][0]['generation'] == 1
    assert api.get(rp + '/inventories', headers=ADMIN).json[
        'inventories'] == {}
    assert api.get(rp + '/aggregates', headers=ADMIN).json[
        'aggregates'] == [AGG]


def test_aggregate_metadata_stays_cyquotas(api):
    body = {'name': 'pool', 'metadata': {'reservation:pool-1': 'true',
                                         'filter_tenant_id': 'p1'}}
    answer = api.put_json('/v1/aggregates/%s' % AGG, body, headers=ADMIN)
    assert answer.json['metadata'] == body['metadata']


def test_a_caller_without_the_right_gets_403_first(api):
    api.post_json('/v1/resource_providers', {'name': 'x'}, headers={
        'X-Project-Id': 'p1', 'X-Roles': 'member'}, status=403)
