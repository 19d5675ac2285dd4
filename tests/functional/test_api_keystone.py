"""cyquota-api with ``[api] auth_strategy = keystone`` against a real
Keystone (tests/functional/keystone_server.py): keystonemiddleware checks
the tokens, and the policy personas come from the tokens' roles."""

import pytest
import requests

from servers import api_server
from tests import commands


@pytest.fixture(scope='module')
def server(keystone, tmp_path_factory):
    directory = tmp_path_factory.mktemp('api')
    server = api_server.ApiServer(
        'sqlite:///%s' % (directory / 'cyquota.sqlite'), directory=directory,
        options={
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': keystone.authtoken_options()})
    commands.manage(server.config_file, 'db', 'sync').check_returncode()
    with server:
        yield server


def _get(server, path, token=None):
    headers = {'X-Auth-Token': token} if token else {}
    # The noauth headers must count for nothing under keystone.
    headers.update({'X-Roles': 'admin', 'X-Project-Id': 'spoofed'})
    return requests.get(server.url + path, headers=headers, timeout=30)


def _error(response):
    """The one error of an API error document (SPEC 4.1)."""
    [error] = response.json()['errors']
    assert set(error) == {'status', 'code', 'title', 'detail', 'request_id'}
    assert error['status'] == response.status_code
    assert error['request_id'] == response.headers['X-Openstack-Request-Id']
    return error


def test_no_token_is_401_but_the_version_document_is_open(server, keystone):
    refused = _get(server, '/v1/quota_usages/spoofed')
    assert refused.status_code == 401
    assert refused.headers['WWW-Authenticate'] == (
        'Keystone uri="%s"' % keystone.url)
    error = _error(refused)
    assert (error['code'], error['title'], error['detail']) == (
        'cyquota.unauthorized', 'Unauthorized',
        'The request you have made requires authentication.')
    bad_token = _get(server, '/v1/limits/model', 'not-a-token')
    assert bad_token.status_code == 401
    assert _error(bad_token)['code'] == 'cyquota.unauthorized'
    assert _get(server, '/').json()['versions'][0]['id'] == 'v1'


def test_healthcheck_needs_no_token_metrics_the_policy(server, keystone):
    assert requests.get(server.url + '/healthcheck', timeout=30).text == (
        'Database OK')
    assert _get(server, '/metrics').status_code == 401
    member = keystone.token('member', keystone.project())
    assert _error(_get(server, '/metrics', member))['code'] == (
        'cyquota.forbidden')
    for token in (keystone.token('service', keystone.project()),
                  keystone.admin.get_token()):
        assert 'cyquota_api_request_duration_seconds' in _get(
            server, '/metrics', token).text


def test_keystone_unreachable_is_503_in_the_error_document(tmp_path):
    away = 'http://127.0.0.1:%d/v3' % api_server.free_port()
    server = api_server.ApiServer(
        'sqlite:///%s' % (tmp_path / 'cyquota.sqlite'), directory=tmp_path,
        options={
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': {
                'www_authenticate_uri': away, 'auth_url': away,
                'auth_type': 'password', 'username': 'admin',
                'password': 'unused', 'project_name': 'admin',
                'user_domain_id': 'default',
                'project_domain_id': 'default',
                'http_request_max_retries': '0'}})
    commands.manage(server.config_file, 'db', 'sync').check_returncode()
    with server:
        refused = _get(server, '/v1/limits/model', 'some-token')
    assert refused.status_code == 503
    assert refused.headers['Content-Type'] == 'application/json'
    error = _error(refused)
    assert (error['code'], error['detail']) == (
        'cyquota.service_unavailable',
        'The Keystone service is temporarily unavailable.')


def test_token_roles_are_the_policy_personas(server, keystone):
    project, other = keystone.project(), keystone.project()
    member = keystone.token('member', project)
    reader = keystone.token('reader', project)
    service = keystone.token('service', keystone.project())
    admin = keystone.admin.get_token()

    assert _get(server, '/v1/quota_usages/%s' % project,
                member).status_code == 200
    usage = _get(server, '/v1/quota_usages/%s' % project, reader).json()
    assert usage['quota_usage']['resources']['FPGA']['used'] == 0
    denied = _get(server, '/v1/quota_usages/%s' % other, member)
    assert denied.status_code == 403
    assert denied.json()['errors'][0]['code'] == 'cyquota.forbidden'

    def reserve(token):
        return requests.post(server.url + '/v1/reservations', json={
            'project_id': project, 'deltas': {'FPGA': 1}},
            headers={'X-Auth-Token': token}, timeout=30)

    assert reserve(member).status_code == 403
    assert reserve(service).status_code == 201
    assert reserve(admin).status_code == 201
    assert _get(server, '/v1/quota_usages?project_id=%s' % project,
                member).status_code == 403
    rows = _get(server, '/v1/quota_usages?project_id=%s' % project,
                admin).json()['quota_usages']
    assert [(row['resource'], row['reserved']) for row in rows] == [
        ('FPGA', 2)]
