"""Every GET route of the API, with hostile values in each path id and
each query parameter it documents, on the real PostgreSQL and MariaDB
(reached by a URL without a charset, as an operator may write it): a NUL,
a 4-byte character, a huge integer, an id too long for its column. Each
is answered with a 4xx (or a 200 that found nothing), never a 5xx."""

import datetime
import re
import urllib.parse

import pytest
import sqlalchemy as sa
import webtest

from cyquota.api import app
from cyquota.api.controllers.v1 import openapi
from tests import fixtures

ADMIN = {'X-Project-Id': 'ops', 'X-User-Id': 'admin', 'X-Roles': 'admin'}
EMOJI = '\U0001F600'
HOSTILE = {
    'nul': 'a\x00b',
    'emoji': EMOJI,
    'huge': '9' * 30,
    'very huge': '9' * 5000,
    'long': 'x' * 300,
}
#: What a route needs besides the parameter under test to get that far.
BASE_QUERY = {'/v1/allocation_candidates': {'resources': 'FPGA:1'}}


def _routes():
    """``(path template, [query parameter names])`` of every GET route."""
    found = []
    document = openapi.document()
    for template, operations in sorted(document['paths'].items()):
        if 'get' not in operations:
            continue
        names = []
        for parameter in operations['get'].get('parameters', []):
            if '$ref' in parameter:
                parameter = document['components']['parameters'][
                    parameter['$ref'].rsplit('/', 1)[1]]
            if parameter['in'] == 'query':
                names.append(parameter['name'])
        found.append((template, names))
    return found


ROUTES = _routes()
PATH_CASES = [(template, kind) for template, _names in ROUTES
              if '{' in template for kind in HOSTILE]
QUERY_CASES = [(template, name, kind) for template, names in ROUTES
               for name in names for kind in HOSTILE]


@pytest.fixture
def api(backend, db_url):
    """The API in process on the backend's database; on MariaDB by its URL
    without ``charset``."""
    url = sa.engine.make_url(db_url)
    fixtures.use_database(url.set(query={}).render_as_string(
        hide_password=False), migrate=False)
    yield webtest.TestApp(app.setup_app())
    fixtures.use_database(db_url, migrate=False)


def _path(template, value):
    return re.sub(r'\{[^}]+\}', urllib.parse.quote(value, safe=''), template)


def _refused_or_empty(response):
    assert response.status_int < 500, response.text
    if response.status_int >= 400:
        assert response.json['errors'][0]['status'] == response.status_int


@pytest.mark.parametrize('template, kind', PATH_CASES)
def test_hostile_path_ids_are_never_a_5xx(api, template, kind):
    response = api.get(_path(template, HOSTILE[kind]), headers=ADMIN,
                       expect_errors=True)
    _refused_or_empty(response)
    if kind == 'nul':
        # An id with a NUL can be no lease, provider...: unknown; a route
        # that checks the form of its ids (project ids) says it is not one.
        assert response.status_int in (400, 404), response.text
        assert response.json['errors'][0]['code'] in (
            'cyquota.invalid_project_id',
            'cyquota.%s_not_found' % template.split('/')[2].rstrip('s'),
            'cyquota.resource_provider_not_found'), response.text


@pytest.mark.parametrize('template, name, kind', QUERY_CASES)
def test_hostile_query_values_are_never_a_5xx(api, template, name, kind):
    query = dict(BASE_QUERY.get(template, {}), **{name: HOSTILE[kind]})
    response = api.get(_path(template, 'p1') + '?' + urllib.parse.urlencode(
        query), headers=ADMIN, expect_errors=True)
    _refused_or_empty(response)
    if kind == 'nul':
        assert response.status_int == 400, response.text
        assert name in response.json['errors'][0]['detail']


def _lease_body():
    start = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0) + datetime.timedelta(hours=1)
    return {'lease': {
        'start_date': start.isoformat(),
        'end_date': (start + datetime.timedelta(hours=1)).isoformat(),
        'reservations': [{'resource_type': 'accelerator:FPGA',
                          'amount': 1}]}}


def test_a_user_id_longer_than_the_tables_hold_is_a_400(api):
    rp = api.post_json('/v1/resource_providers', {'name': 'dev'},
                       headers=ADMIN).json['uuid']
    api.put_json('/v1/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0,
        'inventories': {'FPGA': {'total': 1}}}, headers=ADMIN)
    caller = {'X-Project-Id': 'p1', 'X-Roles': 'member'}
    refused = api.post_json('/v1/leases', _lease_body(), status=400,
                            headers=dict(caller, **{'X-User-Id': 'u' * 256}))
    assert 'X-User-Id' in refused.json['errors'][0]['detail']
    assert api.get('/v1/leases', headers=ADMIN).json['leases'] == []
    longest = 'u' * 255
    made = api.post_json('/v1/leases', _lease_body(), status=201,
                         headers=dict(caller, **{'X-User-Id': longest}))
    assert made.json['lease']['user_id'] == longest


def test_names_and_metadata_of_4_byte_characters_are_kept(api):
    name = 'dev ' + EMOJI
    rp = api.post_json('/v1/resource_providers', {'name': name},
                       headers=ADMIN).json['uuid']
    api.put_json('/v1/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0,
        'inventories': {'FPGA': {'total': 1}}}, headers=ADMIN)
    assert api.get('/v1/resource_providers?' + urllib.parse.urlencode(
        {'name': name}), headers=ADMIN).json['resource_providers'][0][
        'uuid'] == rp
    aggregate = '6a3e5d4c-1b2a-4f8e-9d7c-0e1f2a3b4c5d'
    api.put_json('/v1/aggregates/%s' % aggregate, {
        'name': 'pool ' + EMOJI, 'metadata': {'note': EMOJI}},
        headers=ADMIN)
    shown = api.get('/v1/aggregates/%s' % aggregate, headers=ADMIN).json
    assert (shown['name'], shown['metadata']) == (
        'pool ' + EMOJI, {'note': EMOJI})
    body = _lease_body()
    body['lease']['name'] = EMOJI
    caller = {'X-Project-Id': 'p1', 'X-User-Id': 'u1', 'X-Roles': 'member'}
    made = api.post_json('/v1/leases', body, headers=caller, status=201)
    assert api.get('/v1/leases/%s' % made.json['lease']['id'],
                   headers=caller).json['lease']['name'] == EMOJI
