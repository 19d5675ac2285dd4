"""cyquota-api with ``[api] auth_strategy = keystone`` against a real
Keystone (tests/functional/keystone_server.py): keystonemiddleware checks
the tokens, and the policy personas come from the tokens' roles."""

import uuid

from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3
import pytest
import requests

from tests.functional import api_server
from tests.functional import keystone_server

PASSWORD = 'cyquota-test-user'


class Identity:
    """Projects, users with a role on a project, and their tokens."""

    def __init__(self, url):
        self.url = url
        self.admin = ks_session.Session(auth=v3.Password(
            auth_url=url, username='admin',
            password=keystone_server.ADMIN_PASSWORD,
            user_domain_id='default', project_name='admin',
            project_domain_id='default'))
        self.roles = {role['name']: role['id'] for role in self.admin.get(
            url + '/roles').json()['roles']}

    def _create(self, collection, body):
        key = collection[:-1]
        response = self.admin.post('%s/%s' % (self.url, collection),
                                   json={key: body})
        return response.json()[key]['id']

    def role(self, name):
        if name not in self.roles:
            self.roles[name] = self._create('roles', {'name': name})
        return self.roles[name]

    def project(self):
        return self._create('projects', {
            'name': 'cyq-%s' % uuid.uuid4().hex[:8],
            'domain_id': 'default'})

    def token(self, role, project_id):
        """A token of a new user holding ``role`` on ``project_id``."""
        name = 'cyq-%s' % uuid.uuid4().hex[:8]
        user_id = self._create('users', {'name': name, 'password': PASSWORD,
                                         'domain_id': 'default'})
        self.admin.put('%s/projects/%s/users/%s/roles/%s' % (
            self.url, project_id, user_id, self.role(role)))
        return ks_session.Session(auth=v3.Password(
            auth_url=self.url, username=name, password=PASSWORD,
            user_domain_id='default', project_id=project_id)).get_token()


@pytest.fixture(scope='module')
def keystone():
    with keystone_server.home() as home:
        with home.serve('flat') as url:
            yield Identity(url)


@pytest.fixture(scope='module')
def server(keystone, tmp_path_factory):
    directory = tmp_path_factory.mktemp('api')
    server = api_server.ApiServer(
        'sqlite:///%s' % (directory / 'cyquota.sqlite'), directory=directory,
        options={
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': {
                'www_authenticate_uri': keystone.url,
                'auth_url': keystone.url, 'auth_type': 'password',
                'username': 'admin',
                'password': keystone_server.ADMIN_PASSWORD,
                'project_name': 'admin', 'user_domain_id': 'default',
                'project_domain_id': 'default'}})
    server.manage('db', 'sync')
    with server:
        yield server


def _get(server, path, token=None):
    headers = {'X-Auth-Token': token} if token else {}
    # The noauth headers must count for nothing under keystone.
    headers.update({'X-Roles': 'admin', 'X-Project-Id': 'spoofed'})
    return requests.get(server.url + path, headers=headers, timeout=30)


def test_no_token_is_401_but_the_version_document_is_open(server, keystone):
    refused = _get(server, '/v1/quota_usages/spoofed')
    assert refused.status_code == 401
    assert refused.headers['WWW-Authenticate'] == (
        'Keystone uri="%s"' % keystone.url)
    assert _get(server, '/v1/limits/model', 'not-a-token').status_code == 401
    assert _get(server, '/').json()['versions'][0]['id'] == 'v1'


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
