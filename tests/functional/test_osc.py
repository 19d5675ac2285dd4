"""The OpenStack client plugin (``cyquota/osc``) against a real
``cyquota-api``: ``noauth`` with ``--os-auth-type none --os-endpoint``,
and ``keystone`` with a real Keystone whose catalog lists the
``accelerator-quota`` service.

Most commands run in this process through python-openstackclient's own
shell (the ``openstack`` console script takes seconds to start); a few
run the console script itself.
"""

import contextlib
import datetime
import io
import json
import os
import shutil
import subprocess
import uuid

from openstackclient import shell
from osc_lib import clientmanager
import pytest
import requests
import sqlalchemy as sa

from cyquota.db import models
from cyquota.osc import plugin
from servers import api_server
from tests import commands
from tests.functional import keystone_server

OPENSTACK = str(api_server.BIN / 'openstack')
# Within [leases] max_duration (a year) from now: midnight a month ahead.
FUTURE = (datetime.datetime.now(datetime.timezone.utc).replace(
    hour=0, minute=0, second=0, microsecond=0)
    + datetime.timedelta(days=30)).isoformat()


def _environment():
    """This process's environment without any OS_* setting."""
    return {key: value for key, value in os.environ.items()
            if not key.startswith('OS_')}


@pytest.fixture
def openstack(monkeypatch):
    """Run ``openstack <argv>`` in this process: ``(exit code, stdout,
    stderr)``."""
    for key in list(os.environ):
        if key.startswith('OS_'):
            monkeypatch.delenv(key)
    # (Read from the class's dict: getattr would build a client.)
    cached = vars(clientmanager.ClientManager)[plugin.API_NAME]

    def run(*argv):
        # The shell caches a plugin's client on its class: each run
        # builds its own, as each `openstack` process would.
        setattr(clientmanager.ClientManager, plugin.API_NAME,
                clientmanager.ClientCache(plugin.make_client))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = shell.OpenStackShell().run(list(argv))
        return code, out.getvalue(), err.getvalue()
    yield run
    setattr(clientmanager.ClientManager, plugin.API_NAME, cached)


def _json(result):
    """The JSON output of a command that succeeded."""
    code, out, err = result
    assert (code, err) == (0, ''), err
    return json.loads(out)


def _console(argv, env):
    """The ``openstack`` console script as a process."""
    return subprocess.run([OPENSTACK] + argv, env=env, capture_output=True,
                          text=True, timeout=120)


def test_commands_stand_beside_cyborgs(openstack):
    groups = {group['Command Group']: set(group['Commands']) for group in
              _json(openstack('command', 'list', '-f', 'json'))}
    ours = groups['openstack.accelerator_quota.v1']
    assert ours == {
        'accelerator quota usage show', 'accelerator quota usage list',
        'accelerator reservation list', 'accelerator quota refusal list'} | {
        'accelerator lease %s' % verb
        for verb in ('create', 'list', 'show', 'set', 'delete')} | {
        'accelerator limit %s' % verb
        for verb in ('list', 'show', 'set', 'delete')} | {
        'accelerator budget %s' % verb
        for verb in ('show', 'set', 'delete', 'credit', 'entries')}
    # Cyborg's own (python-openstackclient's accelerator module has the
    # names python-cyborgclient registers).
    assert 'accelerator device list' in groups['openstack.accelerator.v2']
    assert not ours & groups['openstack.accelerator.v2']


@pytest.fixture(scope='module')
def migrated(tmp_path_factory):
    """A migrated SQLite database that each server starts from a copy of
    (one ``db sync`` for the module)."""
    directory = tmp_path_factory.mktemp('osc-migrated')
    commands.manage(api_server.ApiServer(
        'sqlite:///%s' % (directory / 'cyquota.sqlite'),
        directory=directory).config_file, 'db', 'sync').check_returncode()
    return directory / 'cyquota.sqlite'


def _api_server(migrated, directory, options=None):
    shutil.copy(migrated, directory / 'cyquota.sqlite')
    return api_server.ApiServer(
        'sqlite:///%s' % (directory / 'cyquota.sqlite'), options=options,
        directory=directory)


# -- noauth -------------------------------------------------------------------

@pytest.fixture(scope='module')
def noauth(migrated, tmp_path_factory):
    """A noauth cyquota-api under strict-two-level, so usage documents have
    their tree part."""
    with _api_server(migrated, tmp_path_factory.mktemp('osc-noauth'), {
            'quota': {'enforcement_model': 'strict-two-level'}}) as server:
        yield server


@pytest.fixture
def as_role(noauth, openstack):
    """``as_role(roles, project)(*argv)``: a command as a noauth caller."""
    def caller(roles, project='ops'):
        def run(*argv):
            return openstack(
                '--os-auth-type', 'none', '--os-endpoint', noauth.url,
                '--os-accelerator-quota-roles', roles,
                '--os-accelerator-quota-project-id', project,
                '--os-accelerator-quota-user-id', 'alice', *argv)
        return run
    return caller


def _admin_call(server, method, path, body):
    response = requests.request(method, server.url + path, json=body,
                                headers={'X-Roles': 'admin'}, timeout=30)
    response.raise_for_status()
    return response.json()


def test_limits_set_show_list_delete(as_role):
    admin = as_role('admin')
    code, out, _ = admin('accelerator', 'limit', 'set', '--resource-limit',
                         '5', 'limits-p', 'FPGA', '-f', 'json')
    assert (code, json.loads(out)) == (0, {
        'project_id': 'limits-p', 'resource': 'FPGA', 'resource_limit': 5})
    code, out, _ = admin('accelerator', 'limit', 'show', 'limits-p', 'FPGA')
    assert code == 0
    assert '| resource_limit | 5 ' in out
    assert _json(admin('accelerator', 'limit', 'list', '--project',
                       'limits-p', '-f', 'json')) == [
        {'Project ID': 'limits-p', 'Resource': 'FPGA', 'Limit': 5}]

    assert admin('accelerator', 'limit', 'delete', 'limits-p',
                 'FPGA') == (0, '', '')
    code, out, err = admin('accelerator', 'limit', 'show', 'limits-p',
                           'FPGA')
    assert (code, out) == (1, '')
    assert err == ('Project limits-p has no limit of its own for FPGA (the '
                   'registered default applies; see "openstack accelerator '
                   'quota usage show limits-p")\n')
    code, out, err = admin('accelerator', 'limit', 'set', '--resource-limit',
                           '5', 'limits-p', 'NOPE')
    assert (code, out) == (1, '')
    assert err.startswith("Unknown resource 'NOPE'")
    assert ' (HTTP 400 cyquota.unknown_resource, req-' in err
    assert err.count('\n') == 1
    assert _json(admin('accelerator', 'limit', 'list', '--project',
                       'limits-p', '-f', 'json')) == []


def test_usage_show_table_and_json(noauth, as_role):
    # A child of a root, so the usage has its tree part.
    _admin_call(noauth, 'PUT', '/v1/projects/usage-root', {})
    _admin_call(noauth, 'PUT', '/v1/projects/usage-p',
                {'parent_id': 'usage-root'})
    admin = as_role('admin')
    admin('accelerator', 'limit', 'set', '--resource-limit', '6',
          'usage-root', 'FPGA')
    admin('accelerator', 'limit', 'set', '--resource-limit', '4', 'usage-p',
          'FPGA')
    requests.post(noauth.url + '/v1/reservations', json={
        'project_id': 'usage-p', 'deltas': {'FPGA': 3}},
        headers={'X-Roles': 'service'}, timeout=30).raise_for_status()

    reader = as_role('reader', 'usage-p')
    code, out, _ = reader('accelerator', 'quota', 'usage', 'show', 'usage-p')
    assert code == 0
    lines = out.splitlines()
    assert [cell.strip() for cell in lines[1].split('|')[1:-1]] == [
        'Resource', 'Used', 'Reserved', 'Leased', 'Promised', 'Limit',
        'Available', 'Tree Root ID', 'Tree Used', 'Tree Reserved',
        'Tree Limit', 'Tree Available']
    assert [cell.strip() for cell in lines[3].split('|')[1:-1]] == [
        'FPGA', '0', '3', '0', '0', '4', '1', 'usage-root', '0', '3', '6',
        '3']
    rows = _json(reader('accelerator', 'quota', 'usage', 'show', 'usage-p',
                        '-f', 'json'))
    assert rows[0] == {
        'Resource': 'FPGA', 'Used': 0, 'Reserved': 3, 'Leased': 0,
        'Promised': 0, 'Limit': 4, 'Available': 1,
        'Tree Root ID': 'usage-root', 'Tree Used': 0, 'Tree Reserved': 3,
        'Tree Limit': 6, 'Tree Available': 3}
    assert [row['Resource'] for row in rows] == ['FPGA', 'GPU']

    code, out, err = as_role('member', 'other')(
        'accelerator', 'quota', 'usage', 'show', 'usage-p')
    assert (code, out) == (1, '')
    assert err.startswith('Policy does not allow cyquota:quota_usages:show '
                          'to be performed. (HTTP 403 cyquota.forbidden, '
                          'req-')

    reservations = _json(as_role('admin')(
        'accelerator', 'reservation', 'list', '--project', 'usage-p',
        '--status', 'reserved', '-f', 'json'))
    assert [(row['Project ID'], row['Resource'], row['Delta'], row['Status'])
            for row in reservations] == [('usage-p', 'FPGA', 3, 'reserved')]


def test_usage_list_reads_every_page(noauth, as_role):
    # One more row than the API's largest page, written straight into the
    # server's database (a thousand reserves would take longer).
    engine = sa.create_engine('sqlite:///%s'
                              % (noauth.directory / 'cyquota.sqlite'))
    projects = ['page-%04d' % number for number in range(1001)]
    with engine.begin() as connection:
        connection.execute(sa.insert(models.QuotaUsage), [
            {'project_id': project, 'resource': 'GPU', 'used': 1,
             'reserved': 0} for project in projects])
    engine.dispose()

    admin = as_role('admin')
    code, out, _ = admin('accelerator', 'quota', 'usage', 'list',
                         '--resource', 'GPU', '-f', 'value', '-c',
                         'Project ID')
    assert code == 0
    assert [line for line in out.splitlines()
            if line.startswith('page-')] == projects
    code, out, _ = admin('accelerator', 'quota', 'usage', 'list',
                         '--resource', 'GPU', '--marker', 'page-0997:GPU',
                         '--limit', '2', '-f', 'json')
    assert json.loads(out) == [
        {'Project ID': project, 'Resource': 'GPU', 'Used': 1, 'Reserved': 0,
         'Leased': 0, 'Promised': 0, 'Limit': -1, 'Available': -1}
        for project in ('page-0998', 'page-0999')]


def test_lease_create_list_show_set_delete(noauth, as_role):
    provider = _admin_call(noauth, 'POST', '/v1/resource_providers',
                           {'name': 'osc-fpga-node'})
    _admin_call(noauth, 'PUT', '/v1/resource_providers/%s/inventories'
                % provider['uuid'], {'resource_provider_generation': 0,
                                     'inventories': {'FPGA': {'total': 4}}})
    member = as_role('member', 'lease-p')
    # Aggregates the device is not in: the comma stays in the value.
    forbidden = '%s,%s' % (uuid.uuid4(), uuid.uuid4())

    code, out, _ = member(
        'accelerator', 'lease', 'create', '--name', 'training',
        '--end-date', FUTURE, '--reservation',
        'resource_type=accelerator:FPGA,amount=2,member_of=!in:%s'
        % forbidden, '-f', 'json')
    assert code == 0
    lease = json.loads(out)
    assert (lease['name'], lease['project_id'], lease['user_id'],
            lease['status']) == ('training', 'lease-p', 'alice', 'ACTIVE')
    [reservation] = lease['reservations']
    assert reservation['member_of'] == ['!in:' + forbidden]
    assert reservation['allocations'] == [{
        'id': provider['uuid'], 'resource_provider_name': 'osc-fpga-node',
        'amount': 2}]

    code, out, _ = member('accelerator', 'lease', 'show', lease['id'])
    assert code == 0
    assert '%s: 2 x accelerator:FPGA; member_of !in:%s; on osc-fpga-node ' \
           '(2)' % (reservation['id'], forbidden) in out
    listed = _json(member('accelerator', 'lease', 'list', '--status',
                          'ACTIVE', '-f', 'json'))
    assert listed == [{
        'ID': lease['id'], 'Name': 'training', 'Project ID': 'lease-p',
        'Status': 'ACTIVE', 'Start Date': lease['start_date'],
        'End Date': FUTURE}]

    code, out, _ = member('accelerator', 'lease', 'set', lease['id'],
                          '--name', 'renamed', '-f', 'json')
    assert (code, json.loads(out)['name']) == (0, 'renamed')
    code, out, err = member('accelerator', 'lease', 'set', lease['id'],
                            '--reservation',
                            'id=%s,amount=1' % reservation['id'])
    assert (code, out) == (1, '')
    assert err.startswith('Cannot lower the amounts of lease %s: it is '
                          'ACTIVE. (HTTP 409 cyquota.lease_conflict, req-'
                          % lease['id'])
    code, _, err = member('accelerator', 'lease', 'set', lease['id'])
    assert (code, err) == (1, 'Nothing to change: give --name, --start-date, '
                              '--end-date or --reservation\n')
    code, _, err = member(
        'accelerator', 'lease', 'create', '--end-date', FUTURE,
        '--reservation', 'resource_type=accelerator:FPGA,amount=two')
    assert (code, err) == (
        1, "--reservation: amount must be an integer, got 'two'\n")
    usage = _json(member('accelerator', 'quota', 'usage', 'show', 'lease-p',
                         '-f', 'json'))
    assert (usage[0]['Resource'], usage[0]['Used'], usage[0]['Leased']) == (
        'FPGA', 2, 2)

    assert member('accelerator', 'lease', 'delete', lease['id']) == (
        0, '', '')
    assert _json(member('accelerator', 'lease', 'show', lease['id'],
                        '-f', 'json'))['status'] == 'ENDED'
    code, _, err = member('accelerator', 'lease', 'delete', lease['id'],
                          'no-such-lease')
    assert code == 1
    assert err.splitlines()[-1] == '2 of 2 leases failed to end'
    assert 'lease no-such-lease: Lease no-such-lease could not be found. ' \
           '(HTTP 404 cyquota.lease_not_found' in err


def test_console_script_noauth_error(noauth):
    done = _console(['accelerator', 'reservation', 'list'], dict(
        _environment(), OS_AUTH_TYPE='none', OS_ENDPOINT=noauth.url,
        OS_ACCELERATOR_QUOTA_ROLES='member',
        OS_ACCELERATOR_QUOTA_PROJECT_ID='console-p'))
    assert (done.returncode, done.stdout) == (1, '')
    [line] = done.stderr.splitlines()
    assert line.startswith('Policy does not allow cyquota:reservations:list '
                           'to be performed. (HTTP 403 cyquota.forbidden, ')


# -- keystone -----------------------------------------------------------------

@pytest.fixture(scope='module')
def keystone_api(keystone, migrated, tmp_path_factory):
    """cyquota-api under keystone auth, listed in Keystone's catalog as
    ``accelerator-quota``."""
    server = _api_server(
        migrated, tmp_path_factory.mktemp('osc-keystone'), options={
            'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': keystone.authtoken_options()})
    service = keystone.admin.post(keystone.url + '/services', json={
        'service': {'type': 'accelerator-quota', 'name': 'cyquota'}}).json()
    keystone.admin.post(keystone.url + '/endpoints', json={'endpoint': {
        'service_id': service['service']['id'], 'interface': 'public',
        'region_id': keystone_server.REGION, 'url': server.url}})
    with server:
        yield server


def _keystone_admin(keystone):
    return {'OS_AUTH_URL': keystone.url, 'OS_IDENTITY_API_VERSION': '3',
            'OS_USERNAME': 'admin',
            'OS_PASSWORD': keystone_server.ADMIN_PASSWORD,
            'OS_PROJECT_NAME': 'admin', 'OS_USER_DOMAIN_ID': 'default',
            'OS_PROJECT_DOMAIN_ID': 'default',
            'OS_REGION_NAME': keystone_server.REGION}


def test_console_script_finds_the_service_in_the_catalog(keystone,
                                                         keystone_api):
    project = keystone.project()
    done = _console(['accelerator', 'quota', 'usage', 'show', project],
                    dict(_environment(), **_keystone_admin(keystone)))
    assert (done.returncode, done.stderr) == (0, '')
    assert done.stdout.splitlines()[3:5] == [
        '| FPGA     |    0 |        0 |      0 |        0 |    -1 |        '
        '-1 |',
        '| GPU      |    0 |        0 |      0 |        0 |    -1 |        '
        '-1 |']


def test_token_scopes_the_commands(keystone, keystone_api, openstack):
    project, other = keystone.project(), keystone.project()
    token = keystone.token('member', project)

    def member(*argv):
        return openstack(
            '--os-auth-type', 'token', '--os-auth-url', keystone.url,
            '--os-token', token,
            '--os-project-id', project,
            '--os-region-name', keystone_server.REGION,
            # Spoofed noauth identity counts for nothing under keystone.
            '--os-accelerator-quota-roles', 'admin', *argv)

    code, out, _ = member('accelerator', 'quota', 'usage', 'show', project,
                          '-f', 'json')
    assert code == 0
    assert [(row['Resource'], row['Limit']) for row in json.loads(out)] == [
        ('FPGA', -1), ('GPU', -1)]
    code, out, err = member('accelerator', 'quota', 'usage', 'show', other)
    assert (code, out) == (1, '')
    assert err.startswith('Policy does not allow cyquota:quota_usages:show')
