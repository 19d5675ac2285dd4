"""cyquota's filter in Cyborg's API pipeline: a stand-in for Cyborg's API
behind it, cyquota's real REST app (on SQLite) served on 127.0.0.1 as the
service the filter reaches with keystoneauth.

The unbind and delete tests need ``POST /v1/reservations/release``."""

import logging
import socket
import subprocess
import sys
import uuid

from oslo_config import cfg
import pytest
import webtest

from cyquota.api import app
from cyquota.cyborg import bind_filter
from cyquota.cyborg import filter_opts
from tests import cyborg_standin
from tests import enforcement_helpers

ADMIN = {'X-Project-Id': 'admin-project', 'X-Roles': 'admin'}
PROJECT = 'project-a'
# What authtoken puts in front of Cyborg for Nova's bind: the user's
# project (the instance's) and the roles of its user and service tokens.
NOVA = {'X-Project-Id': PROJECT, 'X-Roles': 'member',
        'X-Service-Roles': 'service'}


def _as_service(wsgi_app):
    """cyquota's app as keystonemiddleware would hand it the filter's
    service user's request."""
    def application(environ, start_response):
        environ['HTTP_X_PROJECT_ID'] = 'service-project'
        environ['HTTP_X_ROLES'] = 'service'
        return wsgi_app(environ, start_response)
    return application


@pytest.fixture
def cyquota_api(sqlite_db):
    """cyquota's REST app: served (``url``) and for the test (``admin``)."""
    server = enforcement_helpers.serve_wsgi(_as_service(app.setup_app()))
    yield server.url, webtest.TestApp(app.setup_app())
    server.stop()


@pytest.fixture
def cyborg():
    standin = cyborg_standin.CyborgStandIn()
    standin.add_profile('fpga-dp', [{'resources:FPGA': '1',
                                     'trait:CUSTOM_FAKE_DEVICE': 'required'}])
    server = enforcement_helpers.serve_wsgi(standin)
    standin.url = server.url + '/v2'
    yield standin
    server.stop()


def _filter(cyborg, cyquota_url, **options):
    local_conf = {'auth_type': 'none', 'endpoint_override': cyquota_url,
                  'cyborg_endpoint_override': cyborg.url, 'timeout': '5'}
    local_conf.update(options)
    return webtest.TestApp(bind_filter.BindFilter(
        cyborg, cfg.ConfigOpts(), local_conf))


@pytest.fixture
def setup(cyquota_api, cyborg):
    url, admin = cyquota_api
    admin.put_json('/v1/limits/%s/FPGA' % PROJECT, {'resource_limit': 2},
                   headers=ADMIN)
    return _filter(cyborg, url), admin, cyborg


def _bind_body(arqs, instance):
    return {arq: [{'path': '/hostname', 'op': 'add', 'value': 'host-1'},
                  {'path': '/device_rp_uuid', 'op': 'add',
                   'value': str(uuid.uuid4())},
                  {'path': '/instance_uuid', 'op': 'add', 'value': instance}]
            for arq in arqs}


def _unbind_body(arqs):
    return {arq: [{'path': '/%s' % field, 'op': 'remove'}
                  for field in ('hostname', 'device_rp_uuid',
                                'instance_uuid')] for arq in arqs}


def _fpga(admin):
    return admin.get('/v1/quota_usages/%s' % PROJECT,
                     headers=ADMIN).json['quota_usage']['resources']['FPGA']


def _reservations(admin):
    return admin.get('/v1/reservations?project_id=%s' % PROJECT,
                     headers=ADMIN).json['reservations']


def _bind(client, cyborg, count=1, status=202):
    arqs = [cyborg.add_arq('fpga-dp', PROJECT) for _ in range(count)]
    instance = str(uuid.uuid4())
    response = client.patch_json(cyborg_standin.ARQS,
                                 _bind_body(arqs, instance), headers=NOVA,
                                 status=status)
    return arqs, instance, response


def test_bind_within_quota_is_committed_for_the_instance(setup):
    client, admin, cyborg = setup
    arqs, instance, _ = _bind(client, cyborg)
    assert cyborg.arqs[arqs[0]]['state'] == 'Bound'
    assert (_fpga(admin)['used'], _fpga(admin)['reserved']) == (1, 0)
    [row] = _reservations(admin)
    assert (row['status'], row['consumer_id'], row['request_id']) == (
        'committed', instance, 'arq-' + arqs[0])


def test_bind_over_quota_is_refused_before_cyborg(setup):
    client, admin, cyborg = setup
    _, _, response = _bind(client, cyborg, count=3, status=403)
    assert 'over' in response.json['error_message'].lower()
    assert cyborg.changes == []
    assert (_fpga(admin)['used'], _fpga(admin)['reserved']) == (0, 0)
    assert {row['status'] for row in _reservations(admin)} <= {
        'rolled_back'}


def test_bind_that_cyborg_answers_with_an_error_is_rolled_back(setup):
    client, admin, cyborg = setup
    cyborg.bind_outcome = 500
    _bind(client, cyborg, status=500)
    assert (_fpga(admin)['used'], _fpga(admin)['reserved']) == (0, 0)
    assert [row['status'] for row in _reservations(admin)] == [
        'rolled_back']


def test_bind_failed_is_rolled_back(setup):
    client, admin, cyborg = setup
    cyborg.bind_outcome = 'BindFailed'
    _bind(client, cyborg)
    assert [row['status'] for row in _reservations(admin)] == [
        'rolled_back']


def test_bind_started_stays_reserved(setup):
    client, admin, cyborg = setup
    cyborg.bind_outcome = 'BindStarted'
    _bind(client, cyborg)
    assert (_fpga(admin)['used'], _fpga(admin)['reserved']) == (0, 1)


def test_retried_bind_reserves_once(setup):
    client, admin, cyborg = setup
    cyborg.bind_outcome = 'BindStarted'
    arqs, instance, _ = _bind(client, cyborg)
    client.patch_json(cyborg_standin.ARQS, _bind_body(arqs, instance),
                      headers=NOVA, status=202)
    assert _fpga(admin)['reserved'] == 1


def test_unbind_releases_what_was_bound(setup):
    client, admin, cyborg = setup
    arqs, _, _ = _bind(client, cyborg, count=2)
    client.patch_json(cyborg_standin.ARQS, _unbind_body(arqs), headers=NOVA,
                      status=202)
    assert (_fpga(admin)['used'], _fpga(admin)['reserved']) == (0, 0)


def test_delete_by_instance_releases_what_was_bound(setup):
    client, admin, cyborg = setup
    _, instance, _ = _bind(client, cyborg, count=2)
    client.delete(cyborg_standin.ARQS + '?instance=' + instance,
                  headers=NOVA, status=204)
    assert cyborg.arqs == {}
    assert _fpga(admin)['used'] == 0


def test_delete_by_arqs_releases_the_bound_ones(setup):
    client, admin, cyborg = setup
    arqs, _, _ = _bind(client, cyborg, count=2)
    client.delete(cyborg_standin.ARQS + '?arqs=' + arqs[0], headers=NOVA,
                  status=204)
    assert _fpga(admin)['used'] == 1


def test_failed_delete_releases_nothing(setup):
    client, admin, cyborg = setup
    arqs, _, _ = _bind(client, cyborg)
    client.delete(cyborg_standin.ARQS + '?arqs=%s,%s' % (
        arqs[0], uuid.uuid4()), headers=NOVA, status=404)
    assert _fpga(admin)['used'] == 1


def test_an_arq_the_filter_cannot_read_is_forwarded_and_logged(setup,
                                                               caplog):
    client, admin, cyborg = setup
    missing = str(uuid.uuid4())
    client.patch_json(cyborg_standin.ARQS, _bind_body([missing], 'i-1'),
                      headers=NOVA, status=404)
    assert [method for method, _ in cyborg.changes] == ['PATCH']
    assert ('cannot read accelerator request %s' % missing) in caplog.text
    assert _reservations(admin) == []


def _closed_port_url():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return 'http://127.0.0.1:%d' % sock.getsockname()[1]


def test_cyquota_away_fails_closed_by_default(cyborg, caplog):
    client = _filter(cyborg, _closed_port_url())
    _, _, response = _bind(client, cyborg, status=503)
    assert 'quota' in response.json['error_message']
    assert cyborg.changes == []
    assert 'fail_open = false' in caplog.text


def test_cyquota_away_with_fail_open_forwards_uncounted(cyborg, caplog):
    client = _filter(cyborg, _closed_port_url(), fail_open='true')
    with caplog.at_level(logging.WARNING):
        arqs, _, _ = _bind(client, cyborg)
    assert cyborg.arqs[arqs[0]]['state'] == 'Bound'
    assert [method for method, _ in cyborg.changes] == ['PATCH']
    assert 'uncounted (fail_open = true)' in caplog.text


def test_other_requests_pass_untouched(setup):
    client, admin, cyborg = setup
    arq = cyborg.add_arq('fpga-dp', PROJECT)
    assert client.get(cyborg_standin.ARQS + '/' + arq).json['uuid'] == arq
    client.post_json(cyborg_standin.ARQS, {'device_profile_name': 'fpga-dp'},
                     headers=NOVA, status=201)
    client.get(cyborg_standin.PROFILES + '?name=fpga-dp', status=200)
    client.delete(cyborg_standin.ARQS, headers=NOVA, status=400)
    assert _reservations(admin) == []


# ARQ uuids fixed, not drawn: the test ids must be the same in every
# process of a parallel run.
@pytest.mark.parametrize('body', [
    b'not json', b'[]',
    b'{"4b6d1e0a-55d3-4c2e-9a57-0f3c1d9b8e21": []}',
    b'{"9c0e7f14-2b8a-4f61-a3d5-6e2b7c4f9a10": '
    b'[{"op": "add", "path": "/hostname", "value": "h"}]}',
    b'{"e27a3c58-71f9-4d0b-8c46-b5a9d0e3f712": '
    b'[{"op": "replace", "path": "/hostname", "value": "h"}]}',
])
def test_bad_bodies_reach_cyborg_which_answers_400(setup, body):
    client, admin, cyborg = setup
    response = client.patch(cyborg_standin.ARQS, body, headers=dict(
        NOVA, **{'Content-Type': 'application/json'}), status=400)
    assert 'Invalid patch' in response.json['error_message']
    assert _reservations(admin) == []


def test_class_map_names_the_resource(cyquota_api, cyborg):
    url, admin = cyquota_api
    cyborg.add_profile('gpu-dp', [{'resources:PGPU': '1'}])
    client = _filter(cyborg, url, class_map='GPU:PGPU')
    arq = cyborg.add_arq('gpu-dp', PROJECT)
    client.patch_json(cyborg_standin.ARQS, _bind_body([arq], 'i-1'),
                      headers=NOVA, status=202)
    resources = admin.get('/v1/quota_usages/%s' % PROJECT,
                          headers=ADMIN).json['quota_usage']['resources']
    assert resources['GPU']['used'] == 1


def test_a_class_cyquota_does_not_count_binds_uncounted(cyquota_api,
                                                        cyborg):
    url, admin = cyquota_api
    cyborg.add_profile('nic-dp', [{'resources:CUSTOM_NIC': '1'}])
    client = _filter(cyborg, url)
    arq = cyborg.add_arq('nic-dp', PROJECT)
    client.patch_json(cyborg_standin.ARQS, _bind_body([arq], 'i-1'),
                      headers=NOVA, status=202)
    assert cyborg.arqs[arq]['state'] == 'Bound'
    assert _reservations(admin) == []


def test_calls_time_out_by_default():
    conf = cfg.ConfigOpts()
    filter_opts.register_opts(conf)
    assert conf.cyquota_filter.timeout == 30
    assert conf.cyquota_filter.service_type == 'accelerator-quota'


def test_filter_factory_reads_the_paste_section(cyborg):
    wrapped = bind_filter.filter_factory(
        {}, auth_type='none', fail_open='true', class_map='GPU:PGPU',
        endpoint_override='http://127.0.0.1:1')(cyborg)
    try:
        assert cfg.CONF.cyquota_filter.fail_open is True
        assert wrapped._classes.to_cyquota('PGPU') == 'GPU'
    finally:
        for name in ('auth_type', 'fail_open', 'class_map',
                     'endpoint_override'):
            cfg.CONF.clear_override(name, 'cyquota_filter')


def test_the_filter_imports_only_what_cyborg_has():
    # It runs in Cyborg's process: cyquota.conf would register cyquota's
    # [api] and [database] options on Cyborg's configuration.
    code = ('import sys; import cyquota.cyborg.bind_filter; '
            'print("\\n".join(sys.modules))')
    modules = set(subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True,
        check=True, timeout=120).stdout.split())
    assert sorted(m for m in modules if m.startswith('cyquota.')) == [
        'cyquota.cyborg',
        'cyquota.cyborg.arq_reader', 'cyquota.cyborg.bind_filter',
        'cyquota.cyborg.bind_patch', 'cyquota.cyborg.filter_opts',
        'cyquota.cyborg.quota_client', 'cyquota.resource_classes',
        'cyquota.service_client_opts']
    assert not modules & {'pecan', 'sqlalchemy', 'prometheus_client',
                          'oslo_messaging', 'oslo_db', 'wsme'}


def test_the_filter_speaks_the_version_it_was_written_to(sqlite_db, cyborg):
    seen = []
    service = _as_service(app.setup_app())

    def recorder(environ, start_response):
        seen.append(environ.get('HTTP_OPENSTACK_API_VERSION'))
        return service(environ, start_response)
    server = enforcement_helpers.serve_wsgi(recorder)
    try:
        _bind(_filter(cyborg, server.url), cyborg)
    finally:
        server.stop()
    assert seen and set(seen) == {'accelerator-quota 1.6'}
