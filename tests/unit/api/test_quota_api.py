"""The quota, reservation and limit endpoints where YAML does not reach:
strict-two-level trees, the keystone limit source, keystone auth, policy
files and the sample, body size, and the WSGI entry point."""

import datetime
import json
import pathlib
import subprocess
import sys

from keystonemiddleware import auth_token  # noqa: F401 (registers options)
from oslo_config import cfg
from oslo_policy import generator
import pytest
import webtest

from cyquota.api import app
from cyquota.conf import CONF
from cyquota.policies import reservations as reservation_rules
from cyquota import policy
from cyquota import quota
from cyquota.quota import limits
from cyquota.quota.limits import flat
from cyquota.quota.limits import keystone

ROOT = pathlib.Path(__file__).resolve().parents[3]
ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin'}
SERVICE = {'X-Project-Id': 'service-project', 'X-Roles': 'service'}


@pytest.fixture
def api(sqlite_db):
    return webtest.TestApp(app.setup_app())


@pytest.fixture
def strict(sqlite_db):
    CONF.set_override('enforcement_model', 'strict-two-level', 'quota')
    quota.QUOTAS.reset()
    yield webtest.TestApp(app.setup_app())
    quota.QUOTAS.reset()


def _reserve(client, project_id, amount, status=201):
    return client.post_json('/v1/reservations', {
        'project_id': project_id, 'deltas': {'FPGA': amount}},
        headers=SERVICE, status=status)


def test_strict_two_level_usage_has_the_tree(strict):
    strict.put_json('/v1/projects/root', {'name': 'Root'}, headers=ADMIN)
    strict.put_json('/v1/projects/child', {'parent_id': 'root'},
                    headers=ADMIN)
    strict.put_json('/v1/limits/root/FPGA', {'resource_limit': 5},
                    headers=ADMIN)
    strict.put_json('/v1/limits/child/FPGA', {'resource_limit': 4},
                    headers=ADMIN)
    _reserve(strict, 'root', 2)
    _reserve(strict, 'child', 1)
    assert strict.get('/v1/limits/model').json['model']['name'] == (
        'strict-two-level')
    usage = strict.get('/v1/quota_usages/child', headers={
        'X-Project-Id': 'child', 'X-Roles': 'reader'}).json['quota_usage']
    assert usage['parent_id'] == 'root'
    assert usage['resources']['FPGA'] == {
        'used': 0, 'reserved': 1, 'limit': 4, 'leased': 0, 'promised': 0,
        'available': 3,
        'tree': {'root_id': 'root', 'limit': 5, 'used': 0, 'reserved': 3,
                 'leased': 0, 'promised': 0, 'available': 2}}
    assert usage['resources']['GPU']['tree']['limit'] == -1

    refused = _reserve(strict, 'child', 3, status=403).json['errors'][0]
    assert refused['code'] == 'cyquota.over_quota'
    assert refused['overs'] == [{
        'project_id': 'root', 'resource': 'FPGA', 'scope': 'tree',
        'limit': 5, 'used': 0, 'reserved': 3, 'requested': 3}]


def test_strict_two_level_roots_budget_covers_the_tree(strict):
    strict.put_json('/v1/projects/root', {}, headers=ADMIN)
    strict.put_json('/v1/projects/child', {'parent_id': 'root'},
                    headers=ADMIN)
    at = {'OpenStack-API-Version': 'accelerator-quota 1.8'}
    strict.put_json('/v1/budgets/root/FPGA', {'hours': 1},
                    headers=dict(ADMIN, **at))
    reader = {'X-Project-Id': 'child', 'X-Roles': 'reader'}
    fpga = strict.get('/v1/quota_usages/child', headers=dict(
        reader, **at)).json['quota_usage']['resources']['FPGA']
    assert 'remaining_hours' not in fpga
    assert fpga['tree']['remaining_hours'] == 1
    older = strict.get('/v1/quota_usages/child', headers=dict(
        reader, **{'OpenStack-API-Version': 'accelerator-quota 1.7'}))
    assert 'remaining_hours' not in older.json['quota_usage'][
        'resources']['FPGA']['tree']

    strict.put_json('/v1/budgets/root/FPGA', {'hours': 0},
                    headers=dict(ADMIN, **at))
    refused = _reserve(strict, 'child', 1, status=403).json['errors'][0]
    assert refused['code'] == 'cyquota.budget_exhausted'
    assert 'root' in refused['detail']


def test_strict_two_level_refuses_bad_trees_with_409(strict):
    strict.put_json('/v1/projects/root', {}, headers=ADMIN)
    strict.put_json('/v1/projects/child', {'parent_id': 'root'},
                    headers=ADMIN)
    strict.put_json('/v1/limits/root/FPGA', {'resource_limit': 5},
                    headers=ADMIN)
    above = strict.put_json('/v1/limits/child/FPGA', {'resource_limit': 6},
                            headers=ADMIN, status=409).json['errors'][0]
    assert above['code'] == 'cyquota.limit_hierarchy_conflict'
    assert 'above the limit of its parent root (5)' in above['detail']
    strict.put_json('/v1/limits/child/FPGA', {'resource_limit': 5},
                    headers=ADMIN)
    below = strict.put_json('/v1/limits/root/FPGA', {'resource_limit': 4},
                            headers=ADMIN, status=409).json['errors'][0]
    assert 'below the limit of its child child (5)' in below['detail']
    deep = strict.put_json('/v1/projects/grandchild',
                           {'parent_id': 'child'}, headers=ADMIN,
                           status=409).json['errors'][0]
    assert deep['code'] == 'cyquota.hierarchy_too_deep'
    assert strict.get('/v1/limits?project_id=root', headers=ADMIN).json == {
        'limits': [{'project_id': 'root', 'resource': 'FPGA',
                    'resource_limit': 5}]}


@pytest.fixture
def keystone_source(api, monkeypatch):
    """The engine on the keystone limit source, never asked for a limit:
    every write is refused before Keystone would be called."""
    source = keystone.KeystoneLimitSource()
    monkeypatch.setattr(limits, 'load_source', lambda: source)
    monkeypatch.setattr(limits, 'load_model', flat.FlatModel)
    quota.QUOTAS.reset()
    yield api
    quota.QUOTAS.reset()


@pytest.mark.parametrize('method, path, body', [
    ('put', '/v1/limits/p1/FPGA', {'resource_limit': 1}),
    ('delete', '/v1/limits/p1/FPGA', None),
    ('put', '/v1/registered_limits/FPGA', {'default_limit': 1}),
    ('put', '/v1/projects/p1', {'parent_id': None}),
])
def test_keystone_source_is_read_only(keystone_source, method, path, body):
    if body is None:
        response = keystone_source.delete(path, headers=ADMIN, status=409)
    else:
        response = getattr(keystone_source, method + '_json')(
            path, body, headers=ADMIN, status=409)
    error = response.json['errors'][0]
    assert error['code'] == 'cyquota.limit_source_read_only'
    assert error['detail'].startswith('Limits are read from keystone')


def test_keystone_source_lists_limits_per_project_only(keystone_source):
    error = keystone_source.get('/v1/limits', headers=ADMIN,
                                status=400).json['errors'][0]
    assert error['detail'] == (
        "Invalid query string parameters: 'project_id' is required with "
        "the keystone limit source.")


@pytest.mark.parametrize('path', ['/v1/quota_usages/p1', '/v1/limits/model',
                                  '/v1/resource_providers'])
def test_keystone_auth_refuses_a_request_without_a_token(keystone_auth,
                                                         path):
    # The noauth headers are no identity under keystone.
    response = keystone_auth.get(path, headers=ADMIN, status=401)
    assert response.headers['WWW-Authenticate'] == (
        'Keystone uri="http://127.0.0.1:5000/v3"')
    assert response.headers['X-Openstack-Request-Id'].startswith('req-')


def test_keystone_auth_leaves_the_version_document_open(keystone_auth):
    assert keystone_auth.get('/').json['versions'][0]['id'] == 'v1'


@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / 'policy.yaml'
    CONF.set_override('policy_file', str(path), 'oslo_policy')
    policy.reset()
    yield path
    CONF.clear_override('policy_file', 'oslo_policy')
    policy.reset()


def test_a_policy_file_overrides_the_defaults(api, policy_file):
    policy_file.write_text(
        '"cyquota:quota_usages:list": "rule:project_reader or '
        'rule:admin_api"\n"cyquota:reservations:create": "!"\n')
    member = {'X-Project-Id': 'p1', 'X-Roles': 'member'}
    assert api.get('/v1/quota_usages?project_id=p1',
                   headers=member).json == {'quota_usages': []}
    api.get('/v1/quota_usages?project_id=p2', headers=member, status=403)
    error = _reserve(api, 'p1', 1, status=403).json['errors'][0]
    assert error['detail'] == ('Policy does not allow %s to be performed.'
                               % reservation_rules.CREATE)


def test_the_sample_policy_file_is_current(tmp_path):
    out = tmp_path / 'policy.yaml'
    generator.generate_sample(['--namespace', 'cyquota', '--output-file',
                               str(out)], conf=cfg.ConfigOpts())
    assert out.read_text() == (
        ROOT / 'etc' / 'cyquota' / 'policy.yaml.sample').read_text(), (
        'regenerate with: oslopolicy-sample-generator --config-file '
        'etc/cyquota/cyquota-policy-generator.conf')


def test_every_rule_has_a_persona_default():
    rules = {rule.name: rule.check_str
             for rule in policy.enforcer().registered_rules.values()}
    assert rules['cyquota:quota_usages:show'] == (
        'rule:project_reader or rule:admin_api')
    assert rules['cyquota:reservations:commit'] == (
        'rule:service_api or rule:admin_api')
    assert all(rules[name] == 'rule:admin_api' for name in (
        'cyquota:limits:update', 'cyquota:limits:delete',
        'cyquota:registered_limits:update', 'cyquota:projects:update'))


def test_an_oversized_body_is_refused_before_it_is_read(api):
    CONF.set_override('max_request_body_size', 64, 'api')
    try:
        response = api.post('/v1/reservations', json.dumps({
            'project_id': 'p1', 'deltas': {'FPGA': 1},
            'request_id': 'x' * 100}),
            content_type='application/json', headers=SERVICE, status=413)
    finally:
        CONF.clear_override('max_request_body_size', 'api')
    assert response.json['errors'][0]['code'] == 'cyquota.request_too_large'
    assert api.get('/v1/reservations', headers=ADMIN).json == {
        'reservations': []}


def test_an_expiry_in_seconds_is_that_long_from_now(api):
    hour = datetime.timedelta(hours=1)
    before = datetime.datetime.now(datetime.timezone.utc)
    answer = api.post_json('/v1/reservations', {
        'project_id': 'p1', 'deltas': {'FPGA': 1}, 'expire': 3600},
        headers=SERVICE, status=201).json
    after = datetime.datetime.now(datetime.timezone.utc)
    expire = datetime.datetime.fromisoformat(answer['expire'])
    assert expire.utcoffset() == datetime.timedelta(0)
    assert before + hour <= expire <= after + hour


def test_the_wsgi_entry_point_reads_its_command_line(tmp_path, sqlite_db):
    conf = tmp_path / 'cyquota.conf'
    # noauth under a WSGI server needs the operator's opt-in.
    conf.write_text('[database]\nconnection = %s\n[api]\n'
                    'allow_remote_noauth = true\n' % sqlite_db)
    script = (
        'import sys, webtest\n'
        "sys.argv = ['uwsgi', '--config-file', %r]\n"
        'from cyquota.api import wsgi\n'
        'from cyquota.conf import CONF\n'
        "usage = webtest.TestApp(wsgi.application).get("
        "'/v1/quota_usages/p1', headers={'X-Roles': 'admin'}).json\n"
        "print('RESULT', CONF.database.connection,"
        " usage['quota_usage']['project_id'])\n" % str(conf))
    done = subprocess.run([sys.executable, '-c', script], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert 'RESULT %s p1\n' % sqlite_db in done.stdout
