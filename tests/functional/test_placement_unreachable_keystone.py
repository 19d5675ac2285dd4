"""A Placement that does not answer, reached as a cloud reaches it: with
password auth against a real Keystone, from the catalog or with
``endpoint_override``. keystoneauth's version discovery gives up quietly
there (no versions, no error); the three callers must still say that
Placement is unreachable, naming the URL tried, never that it serves "up
to none" of the microversions."""

import subprocess
import sys

from oslo_config import cfg
import pytest

from cyquota.cloud import mirror
from cyquota.cloud import placement_errors as errors
from cyquota.conf import placement as placement_conf
from servers import api_server
from tests.functional import keystone_server

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope='module')
def closed_url():
    """A URL of 127.0.0.1 on which nothing listens."""
    return 'http://127.0.0.1:%d/placement' % api_server.free_port()


@pytest.fixture
def catalog(keystone, closed_url):
    """A placement service in Keystone's catalog whose endpoints are
    ``closed_url``, removed after the test."""
    admin, url = keystone.admin, keystone.url
    service = admin.post(url + '/services', json={'service': {
        'type': 'placement', 'name': 'placement'}}).json()['service']['id']
    for interface in ('public', 'internal'):
        admin.post(url + '/endpoints', json={'endpoint': {
            'service_id': service, 'interface': interface,
            'region_id': keystone_server.REGION, 'url': closed_url}})
    yield
    admin.delete('%s/services/%s' % (url, service))


def _options(keystone, extra=''):
    return ('[placement]\nsource = placement\nclass_map = GPU:PGPU\n'
            'auth_type = password\nauth_url = %s\nusername = admin\n'
            'password = %s\nproject_name = admin\nuser_domain_id = default\n'
            'project_domain_id = default\nregion_name = %s\ntimeout = 5\n%s'
            % (keystone.url, keystone_server.ADMIN_PASSWORD,
               keystone_server.REGION, extra))


@pytest.fixture(params=['catalog', 'endpoint_override'])
def options(request, keystone, closed_url):
    """``[placement]`` with password auth, Placement from the catalog or
    from ``endpoint_override`` (the catalog has none then)."""
    if request.param == 'catalog':
        request.getfixturevalue('catalog')
        return _options(keystone)
    return _options(keystone, 'endpoint_override = %s\n' % closed_url)


def _says_unreachable(message, closed_url):
    assert 'microversions up to' not in message, message
    assert 'Placement version discovery failed: ConnectFailure: ' in message
    assert closed_url in message, message
    assert keystone_server.ADMIN_PASSWORD not in message
    assert len(message.strip().splitlines()) == 1, message


def _manage(tmp_path, db_url, options, *args):
    config = tmp_path / 'cyquota.conf'
    config.write_text('[database]\nconnection = %s\n%s' % (db_url, options))
    return subprocess.run(
        [sys.executable, '-m', 'cyquota.cmd.manage', '--config-file',
         str(config), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize('command', [
    ('devices', 'sync'), ('quota', 'check', '--against-placement')])
def test_commands_say_unreachable(tmp_path, sqlite_db, options, closed_url,
                                  command):
    result = _manage(tmp_path, sqlite_db, options, *command)
    assert result.returncode == 1, result.stderr
    prefix = '%s %s: ' % command[:2]
    assert result.stderr.startswith(prefix + 'Placement '), result.stderr
    _says_unreachable(result.stderr, closed_url)


def test_the_mirror_says_unreachable(tmp_path, sqlite_db, ctx, options,
                                     closed_url):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    path = tmp_path / 'cyquota.conf'
    path.write_text(options)
    conf(['--config-file', str(path)], project='cyquota',
         default_config_files=[])
    with pytest.raises(errors.PlacementUnreachable) as caught:
        mirror.sync(ctx, conf=conf)
    _says_unreachable(str(caught.value), closed_url)
