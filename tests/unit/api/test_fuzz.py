"""Whatever a client sends, the device API answers with a result or a
clear 4xx error document, never a 500."""

import json
import urllib.parse

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import webtest

from cyquota.api import app

CN = '11111111-0000-0000-0000-000000000001'
AGG = 'aaaaaaaa-0000-0000-0000-00000000000a'

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

QUERY_KEYS = st.sampled_from([
    'resources', 'resources1', 'resources_X', 'member_of', 'member_of1',
    'member_of_X', 'group_policy', 'limit', 'member_key', 'required',
    'in_tree', 'name', 'uuid', ''])
QUERY_VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(['FPGA:1', 'FPGA:1,PGPU:2', 'FPGA:0', 'FPGA:-1',
                     'FPGA:99999999999999999999', 'isolate', 'none', '0',
                     '3', AGG, '!' + AGG, 'in:%s,%s' % (AGG, CN),
                     '!in:%s,!%s' % (AGG, CN), 'in:', '!', ',', ':', '%']))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=10)
RC_NAMES = st.sampled_from(['FPGA', 'PGPU', 'CUSTOM_X', 'fpga', 'WIDGET', ''])
INVENTORY_FIELDS = st.sampled_from(['total', 'reserved', 'min_unit',
                                    'max_unit', 'step_size',
                                    'allocation_ratio', 'colour'])
NUMBERS = st.one_of(st.integers(-2 ** 40, 2 ** 40), st.floats(
    allow_nan=False), st.booleans(), st.text(max_size=5), st.none())
INVENTORIES = st.fixed_dictionaries({
    'resource_provider_generation': st.one_of(st.just(0), NUMBERS),
    'inventories': st.dictionaries(RC_NAMES, st.one_of(
        st.dictionaries(INVENTORY_FIELDS, NUMBERS, max_size=4), JSON),
        max_size=2)})


@pytest.fixture
def api(sqlite_db):
    client = webtest.TestApp(app.setup_app(),
                             extra_environ={'HTTP_X_ROLES': 'admin'})
    client.post_json('/v1/resource_providers', {'name': 'cn', 'uuid': CN})
    client.put_json('/v1/resource_providers/%s/inventories' % CN, {
        'resource_provider_generation': 0,
        'inventories': {'FPGA': {'total': 4}}})
    return client


def _answered(response, allowed=(200, 201, 400, 404, 409)):
    assert response.status_int in allowed, response.text
    if response.status_int >= 400:
        [error] = response.json['errors']
        assert error['status'] == response.status_int
        assert error['code'].startswith('cyquota.')
        assert error['detail']


@FUZZ
@given(st.lists(st.tuples(QUERY_KEYS, QUERY_VALUES), max_size=6))
def test_any_allocation_candidates_query(api, pairs):
    query = urllib.parse.urlencode(pairs)
    _answered(api.get('/v1/allocation_candidates?' + query,
                      expect_errors=True), (200, 400))


@FUZZ
@given(st.lists(st.tuples(QUERY_KEYS, QUERY_VALUES), max_size=4))
def test_any_resource_providers_query(api, pairs):
    query = urllib.parse.urlencode(pairs)
    _answered(api.get('/v1/resource_providers?' + query,
                      expect_errors=True), (200, 400))


@FUZZ
@given(st.one_of(INVENTORIES, JSON))
def test_any_inventories_body(api, body):
    _answered(api.put('/v1/resource_providers/%s/inventories' % CN,
                      json.dumps(body), content_type='application/json',
                      expect_errors=True))


@FUZZ
@given(st.sampled_from([
    ('post', '/v1/resource_providers'),
    ('put', '/v1/resource_providers/%s/aggregates' % CN),
    ('put', '/v1/resource_providers/%s/traits' % CN),
    ('put', '/v1/aggregates/%s' % AGG)]),
    st.one_of(JSON, st.binary(max_size=30)))
def test_any_body_elsewhere(api, target, body):
    method, path = target
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    _answered(getattr(api, method)(path, data,
                                   content_type='application/json',
                                   expect_errors=True))
