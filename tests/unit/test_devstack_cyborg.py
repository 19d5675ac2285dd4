"""The devstack plugin with Cyborg enabled, against the stub of devstack's
functions (``test_devstack_plugin``): cyquota's filter in Cyborg's API
pipeline, the filter's credentials in cyborg.conf and the conductor's
in cyquota.conf. The real Cyborg loads what it writes on the OpenStack
test bed (tests/functional/openstack)."""

import configparser

from tests.unit.test_devstack_plugin import _known_options
from tests.unit.test_devstack_plugin import Devstack
from tests.unit.test_devstack_plugin import STACK

# The pipeline of Cyborg 17's etc/cyborg/api-paste.ini, which Cyborg's
# plugin copies to /etc/cyborg in its post-config.
PIPELINE = 'cors http_proxy_to_wsgi request_id authtoken api_v2'

SERVICE_AUTH = {
    'auth_type': 'password',
    'auth_url': 'http://192.0.2.10/identity',
    'username': 'cyquota',
    'password': 'secretservice',
    'user_domain_name': 'Default',
    'project_name': 'service',
    'project_domain_name': 'Default',
    'region_name': 'RegionOne',
}


def _read(path):
    parser = configparser.ConfigParser(interpolation=None,
                                       default_section=None)
    assert parser.read(path), 'no %s' % path
    return parser


def _cyborg_host(tmp_path, **settings):
    cyborg_dir = tmp_path / 'etc' / 'cyborg'
    cyborg_dir.mkdir(parents=True)
    host = Devstack(tmp_path, ENABLED_SERVICES='key,mysql,rabbit,cyborg-api',
                    CYBORG_CONF_DIR=str(cyborg_dir), **settings)
    return host, cyborg_dir


def test_filter_inserted_after_authtoken_once(tmp_path):
    host, cyborg_dir = _cyborg_host(tmp_path)
    paste = cyborg_dir / 'api-paste.ini'
    paste.write_text('[pipeline:main]\npipeline = %s\n' % PIPELINE)
    host.run(*STACK)
    # A second stack.sh over the same files adds nothing twice.
    host.run(*STACK)
    written = _read(paste)
    assert written['pipeline:main']['pipeline'] == (
        'cors http_proxy_to_wsgi request_id authtoken cyquota_bind api_v2')
    assert dict(written['filter:cyquota_bind']) == {
        'paste.filter_factory': 'cyquota.cyborg.bind_filter:filter_factory'}
    cyborg = _read(cyborg_dir / 'cyborg.conf')
    assert dict(cyborg['cyquota_filter']) == {**SERVICE_AUTH,
                                              'fail_open': 'False'}
    conf = host.read_conf()
    assert dict(conf['cyborg']) == SERVICE_AUTH
    assert _known_options()['cyborg'] >= set(SERVICE_AUTH) - {'password'}


def test_the_service_user_is_an_admin_to_read_every_arq(tmp_path):
    host, cyborg_dir = _cyborg_host(tmp_path)
    (cyborg_dir / 'api-paste.ini').write_text(
        '[pipeline:main]\npipeline = %s\n' % PIPELINE)
    host.run(*STACK)
    assert [call for call in host.calls()['stack post-config']
            if call[0] == 'create_service_user'] == [
        ('create_service_user', 'cyquota', 'admin')]


def test_fail_open_and_class_map_reach_the_filter(tmp_path):
    host, cyborg_dir = _cyborg_host(
        tmp_path, CYQUOTA_CYBORG_FAIL_OPEN='True',
        CYQUOTA_PLACEMENT_CLASS_MAP='GPU:PGPU')
    (cyborg_dir / 'api-paste.ini').write_text(
        '[pipeline:main]\npipeline = %s\n' % PIPELINE)
    host.run(*STACK)
    section = _read(cyborg_dir / 'cyborg.conf')['cyquota_filter']
    assert section['fail_open'] == 'True'
    assert section['class_map'] == 'GPU:PGPU'


def test_cyborg_enabled_before_cyquota_is_a_clear_error(tmp_path):
    host, cyborg_dir = _cyborg_host(tmp_path)
    proc = host.run(*STACK, check=False)
    assert proc.returncode != 0
    die = [call for call in host.calls()['stack post-config']
           if call[0] == 'die']
    assert die[0][2] == (
        'no %s: enable_plugin cyquota after enable_plugin cyborg in '
        'local.conf' % (cyborg_dir / 'api-paste.ini'))


def test_without_cyborg_nothing_of_it(tmp_path):
    host = Devstack(tmp_path)
    host.run(*STACK)
    assert not host.read_conf().has_section('cyborg')
