"""``GET /healthcheck`` (oslo.middleware) with cyquota's database backend,
and the other oslo.middleware pieces of the pipeline (CORS,
http_proxy_to_wsgi), on a real ``cyquota-api`` process."""

import pytest
import requests
import webtest

from cyquota.api import app
from cyquota.conf import CONF
from cyquota.db import api as db_api
from servers import api_server
from tests import commands
from tests import fixtures

ORIGIN = 'http://dashboard.example'


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp('api')
    server = api_server.ApiServer(
        'sqlite:///%s' % (directory / 'cyquota.sqlite'), directory=directory,
        options={
            'healthcheck': {
                'backends': 'cyquota_database, disable_by_file',
                'disable_by_file_path': str(directory / 'disabled')},
            'cors': {'allowed_origin': ORIGIN}})
    # The check is only SELECT 1, but the API starts on a current schema.
    commands.manage(server.config_file, 'db', 'sync').check_returncode()
    with server:
        yield server


def _health(server, **headers):
    return requests.get(server.url + '/healthcheck', headers=headers,
                        timeout=30)


def test_healthy_while_the_database_answers(server):
    answer = _health(server, Accept='application/json')
    assert answer.status_code == 200
    assert answer.json()['reasons'] == ['Database OK', 'OK']
    # No token needed, and a request id as everywhere else.
    assert answer.headers['X-Openstack-Request-Id'].startswith('req-')


def test_an_operator_takes_it_out_of_rotation_by_file(server):
    flag = server.directory / 'disabled'
    flag.write_text('')
    try:
        answer = _health(server)
        assert answer.status_code == 503
        assert 'DISABLED BY FILE' in answer.text
    finally:
        flag.unlink()
    assert _health(server).status_code == 200


def test_unhealthy_when_the_database_does_not_answer():
    # A port nothing listens on: the database is away, the API still up.
    away = 'postgresql+psycopg://postgres@127.0.0.1:%d/cyquota' % (
        api_server.free_port())
    # One attempt per check: no reconnect loop behind a probe.
    CONF.set_override('max_retries', 0, 'database')
    fixtures.use_database(away, migrate=False)
    try:
        api = webtest.TestApp(app.setup_app())
        answer = api.get('/healthcheck', status=503,
                         headers={'Accept': 'application/json'})
        assert answer.json['reasons'] == [
            'Database unavailable (DBConnectionError)']
        # The API's own errors keep their form meanwhile.
        refused = api.get('/v1/nope', status=404)
        assert refused.json['errors'][0]['code'] == 'cyquota.not_found'
    finally:
        CONF.clear_override('max_retries', 'database')
        db_api.reset()


def test_cors_preflight_and_exposed_request_id(server):
    preflight = requests.options(
        server.url + '/v1/quota_usages/p1', headers={
            'Origin': ORIGIN, 'Access-Control-Request-Method': 'GET',
            'Access-Control-Request-Headers': 'X-Auth-Token'}, timeout=30)
    assert preflight.headers['Access-Control-Allow-Origin'] == ORIGIN
    assert 'X-Auth-Token' in preflight.headers[
        'Access-Control-Allow-Headers']
    answer = requests.get(server.url + '/', headers={'Origin': ORIGIN},
                          timeout=30)
    assert 'X-Openstack-Request-Id' in answer.headers[
        'Access-Control-Expose-Headers']
    other = requests.get(server.url + '/', timeout=30,
                         headers={'Origin': 'http://elsewhere.example'})
    assert 'Access-Control-Allow-Origin' not in other.headers


def test_links_follow_the_proxy_headers(sqlite_db):
    # In process: cyquota-api's waitress drops proxy headers it does not
    # trust before the app sees them; a uWSGI deployment passes them on.
    api = webtest.TestApp(app.setup_app())
    admin = {'X-Roles': 'admin'}
    for project in ('p1', 'p2'):
        api.post_json('/v1/reservations', {
            'project_id': project, 'deltas': {'FPGA': 1}}, headers=admin)
    proxied = dict(admin, **{'X-Forwarded-Proto': 'https',
                             'X-Forwarded-Host': 'quota.example'})
    CONF.set_override('enable_proxy_headers_parsing', True,
                      'oslo_middleware')
    try:
        page = api.get('/v1/quota_usages?limit=1', headers=proxied).json
    finally:
        CONF.clear_override('enable_proxy_headers_parsing',
                            'oslo_middleware')
    [link] = page['quota_usages_links']
    assert link['href'].startswith('https://quota.example/v1/quota_usages?')


def test_detailed_shows_no_part_of_the_database_password():
    # A password with an unencoded "@": the driver takes its tail for the
    # host's name and its error names that host.
    away = 'postgresql+psycopg://postgres:s3cret@w0rd-tail@127.0.0.1:%d/c' % (
        api_server.free_port())
    CONF.set_override('max_retries', 0, 'database')
    fixtures.use_database(away, migrate=False)
    try:
        app.setup_app()  # Registers the [healthcheck] options.
        CONF.set_override('detailed', True, 'healthcheck')
        answer = webtest.TestApp(app.setup_app()).get(
            '/healthcheck', status=503, headers={'Accept': 'application/json'})
        assert answer.json['detailed'] is True
        details = str(answer.json)
        assert 'failed to resolve host' in details
        assert 'w0rd-tail' not in details and 's3cret' not in details
    finally:
        CONF.clear_override('detailed', 'healthcheck')
        CONF.clear_override('max_retries', 'database')
        db_api.reset()
