"""The devstack plugin (devstack/) run against a stub of devstack's functions.

devstack itself needs a whole host (root, Apache, MySQL, Keystone), so the
plugin's phases run here in bash against tests/unit/devstack_stub/functions,
which records every devstack call. The calls, their order and arguments are
asserted; the configuration file the plugin writes is read back, checked
against cyquota's registered options, and used by the real
``cyquota-manage db sync`` that the plugin runs on a SQLite database.
Everything happens under a temporary directory.
"""

import configparser
import getpass
import importlib.metadata
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
STUB = REPO / 'tests' / 'unit' / 'devstack_stub' / 'functions'
SCRIPTS = [REPO / 'devstack' / 'plugin.sh', REPO / 'devstack' / 'settings',
           REPO / 'devstack' / 'lib' / 'cyquota', STUB]
STACK = ['stack install', 'stack post-config', 'stack extra']
VENV_BIN = pathlib.Path(sys.executable).parent

SERVICE_HOST = '192.0.2.10'
API_URL = 'http://%s:6780' % SERVICE_HOST

# One devstack process (stack.sh, unstack.sh or clean.sh): the function
# library, the plugin's settings, then each phase as devstack runs it.
RUNNER = r'''
set -o errexit
source "$1"
source "$2/devstack/settings"
shift 2
for phase in "$@"; do
    printf 'PHASE\t%s\n' "$phase" >>"$DEVSTACK_STUB_LOG"
    # unquoted: "stack install" is two arguments
    source "$DEVSTACK_PLUGIN" $phase
done
'''

# The oslo-config-generator namespaces whose options cyquota.conf may hold.
CONFIG_NAMESPACES = ('cyquota', 'oslo.db', 'oslo.log', 'oslo.messaging',
                     'oslo.limit')


class Devstack:
    """A temporary devstack host: its environment, bin directory and log."""

    def __init__(self, root, **settings):
        self.root = root
        self.bin = root / 'bin'
        self.log = root / 'calls.log'
        self.conf_dir = root / 'etc' / 'cyquota'
        self.conf = self.conf_dir / 'cyquota.conf'
        self.uwsgi_conf = self.conf_dir / 'cyquota-api-uwsgi.ini'
        self.metrics_dir = root / 'opt' / 'stack' / 'data' / 'cyquota' / \
            'metrics'
        self.bin.mkdir()
        self._fake_command('uwsgi')
        self._fake_command('cyquota-conductor')
        self._fake_command('cyquota-manage', VENV_BIN / 'cyquota-manage')
        self.env = {
            'PATH': '%s:%s' % (self.bin, os.environ['PATH']),
            'HOME': str(root),
            'LANG': 'C.UTF-8',
            'DEVSTACK_STUB_LOG': str(self.log),
            'DEVSTACK_STUB_ROOT': str(root),
            'DEVSTACK_STUB_BIN': str(self.bin),
            'DEVSTACK_STUB_PYTHON': sys.executable,
            'DEVSTACK_PLUGIN': str(REPO / 'devstack' / 'plugin.sh'),
            'DEST': str(root / 'opt' / 'stack'),
            'DATA_DIR': str(root / 'opt' / 'stack' / 'data'),
            'STACK_USER': getpass.getuser(),
            'SERVICE_HOST': SERVICE_HOST,
            'SERVICE_PROTOCOL': 'http',
            'SERVICE_LISTEN_ADDRESS': '0.0.0.0',
            'SERVICE_TIMEOUT': '60',
            'REGION_NAME': 'RegionOne',
            'SERVICE_PASSWORD': 'secretservice',
            'SERVICE_DOMAIN_NAME': 'Default',
            'SERVICE_PROJECT_NAME': 'service',
            'KEYSTONE_SERVICE_URI': 'http://%s/identity' % SERVICE_HOST,
            'ENABLE_DEBUG_LOG_LEVEL': 'True',
            'ENABLED_SERVICES': 'key,mysql,rabbit',
            'DISABLED_SERVICES': '',
            'CYQUOTA_CONF_DIR': str(self.conf_dir),
            'PYTHON': sys.executable,
        }
        self.env.update(settings)

    def _fake_command(self, name, real=None):
        """A command on PATH that logs its call, then runs ``real``."""
        script = self.bin / name
        script.write_text(
            '#!/bin/bash\n'
            'call=("${0##*/}" "$@")\n'
            "(IFS=$'\\t'; echo \"${call[*]}\") >>\"$DEVSTACK_STUB_LOG\"\n"
            + ('exec %s "$@"\n' % real if real else ''))
        script.chmod(0o755)

    def run(self, *phases, check=True):
        """Run ``phases`` in one bash process; return the process."""
        proc = subprocess.run(
            ['bash', '-c', RUNNER, 'devstack', str(STUB), str(REPO),
             *phases],
            env=self.env, capture_output=True, text=True, timeout=120)
        if check:
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def calls(self):
        """{phase: [call, ...]}, each call a tuple (function, *args); calls
        made while devstack/settings is sourced are under 'settings'."""
        by_phase = {'settings': []}
        phase = 'settings'
        for line in self.log.read_text().splitlines():
            fields = tuple(line.split('\t'))
            if fields[0] == 'PHASE':
                phase = fields[1]
                by_phase.setdefault(phase, [])
            elif fields[0] == 'enable_service':
                by_phase['settings'].append(fields)
            else:
                by_phase[phase].append(fields)
        return by_phase

    def read_conf(self):
        # [DEFAULT] as a section of its own, not defaults for the others.
        parser = configparser.ConfigParser(interpolation=None,
                                           default_section=None)
        parser.optionxform = str
        assert parser.read(self.conf), 'no %s' % self.conf
        return parser


@pytest.fixture(scope='module')
def lifecycle(tmp_path_factory):
    """stack.sh, unstack.sh and clean.sh on one host, with what each left."""
    host = Devstack(tmp_path_factory.mktemp('devstack'))
    host.run(*STACK)
    conf = host.read_conf()
    with sqlite3.connect(host.root / 'cyquota.sqlite') as db:
        tables = {row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        revisions = [row[0] for row in db.execute(
            'SELECT version_num FROM alembic_version')]
    host.run('unstack')
    host.run('clean')
    return {'host': host, 'calls': host.calls(), 'conf': conf,
            'tables': tables, 'revisions': revisions}


def _known_options():
    """{section: option names} of every namespace cyquota.conf may use."""
    known = {}
    for entry_point in importlib.metadata.entry_points(
            group='oslo.config.opts'):
        if entry_point.name not in CONFIG_NAMESPACES:
            continue
        for group, opts in entry_point.load()():
            name = getattr(group, 'name', group) or 'DEFAULT'
            known.setdefault(name, set()).update(opt.dest for opt in opts)
    # keystoneauth's loader options, registered with any auth section.
    known['oslo_limit'].update({'auth_type', 'auth_section'})
    return known


def _shellcheck():
    return shutil.which('shellcheck') or shutil.which(
        'shellcheck', path=str(VENV_BIN))


@pytest.mark.parametrize('script', SCRIPTS, ids=lambda p: p.name)
def test_script_parses(script):
    proc = subprocess.run(['bash', '-n', str(script)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_scripts_pass_shellcheck():
    shellcheck = _shellcheck()
    assert shellcheck, 'shellcheck missing: pip install -e .[test]'
    proc = subprocess.run(
        [shellcheck, '--external-sources', '--shell=bash',
         *map(str, SCRIPTS)],
        cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_settings_enable_both_services(lifecycle):
    calls = lifecycle['calls']['settings']
    assert set(calls) == {
        ('enable_service', 'cyquota-api', 'cyquota-conductor')}


def test_settings_defaults(tmp_path):
    host = Devstack(tmp_path)
    proc = subprocess.run(
        ['bash', '-c', 'source "$1"; source "$2"; printf "%s\\n" '
         '"$CYQUOTA_DIR" "$CYQUOTA_BIN_DIR" "$CYQUOTA_CONF" '
         '"$CYQUOTA_SERVICE_PORT" "$CYQUOTA_API_URL" "$CYQUOTA_SERVICE_TYPE" '
         '"$CYQUOTA_LIMIT_SOURCE" "$CYQUOTA_UWSGI"',
         'settings', str(STUB), str(REPO / 'devstack' / 'settings')],
        env={**host.env, 'CYQUOTA_CONF_DIR': '/etc/cyquota'},
        capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == [
        str(REPO), str(host.bin), '/etc/cyquota/cyquota.conf', '6780',
        API_URL, 'accelerator-quota', 'keystone',
        'cyquota.api.wsgi:application']


def test_install_develops_the_checkout(lifecycle):
    assert lifecycle['calls']['stack install'] == [
        ('setup_develop', str(REPO))]


def test_post_config_registers_the_service_in_keystone(lifecycle):
    calls = [call for call in lifecycle['calls']['stack post-config']
             if call[0] in ('create_service_user', 'get_or_create_service',
                            'get_or_create_endpoint', 'openstack')]
    system_admin = ('openstack', '--os-cloud', 'devstack-system-admin')
    assert calls == [
        ('create_service_user', 'cyquota', 'service'),
        ('get_or_create_service', 'cyquota', 'accelerator-quota',
         'Accelerator quota usage and reservations'),
        ('get_or_create_endpoint', 'cyquota-service-id', 'RegionOne',
         API_URL),
        system_admin + ('role', 'add', '--user', 'cyquota', '--user-domain',
                        'Default', '--system', 'all', 'reader'),
        system_admin + ('registered', 'limit', 'create',
                        '--service', 'cyquota-service-id',
                        '--region', 'RegionOne', '--default-limit', '10',
                        'class:FPGA'),
        system_admin + ('registered', 'limit', 'create',
                        '--service', 'cyquota-service-id',
                        '--region', 'RegionOne', '--default-limit', '10',
                        'class:GPU'),
    ]


def test_post_config_writes_the_configuration(lifecycle):
    host, conf = lifecycle['host'], lifecycle['conf']
    assert dict(conf['DEFAULT']) == {
        'debug': 'True',
        'transport_url': 'rabbit://stackrabbit:secretrabbit@%s:5672/'
                         % SERVICE_HOST}
    assert dict(conf['database']) == {
        'connection': 'sqlite:///%s' % (host.root / 'cyquota.sqlite')}
    assert dict(conf['api']) == {'auth_strategy': 'keystone',
                                 'max_request_body_size': '1048576'}
    assert not conf.has_section('metrics')
    assert dict(conf['quota']) == {'limit_source': 'keystone'}
    assert dict(conf['oslo_limit']) == {
        'auth_type': 'password',
        'auth_url': 'http://%s/identity' % SERVICE_HOST,
        'username': 'cyquota',
        'password': 'secretservice',
        'user_domain_name': 'Default',
        'system_scope': 'all',
        'endpoint_id': 'cyquota-service-id-endpoint-id'}
    calls = lifecycle['calls']['stack post-config']
    assert ('configure_keystone_authtoken_middleware', str(host.conf),
            'cyquota') in calls
    assert ('setup_logging', str(host.conf)) in calls


def test_configuration_uses_only_registered_options(lifecycle):
    known = _known_options()
    conf = lifecycle['conf']
    unknown = [(section, option)
               for section in conf.sections() for option in conf[section]
               if option not in known.get(section, ())]
    assert unknown == []


def test_post_config_writes_the_uwsgi_config_of_the_api(lifecycle):
    host = lifecycle['host']
    calls = lifecycle['calls']['stack post-config']
    # write_uwsgi_config starts the file afresh: the plugin's own uWSGI
    # options must come after it.
    assert calls[-4:] == [
        ('write_uwsgi_config', str(host.uwsgi_conf),
         'cyquota.api.wsgi:application', '/', '0.0.0.0:6780', 'cyquota-api'),
        ('iniset', str(host.uwsgi_conf), 'uwsgi', 'pyargv',
         '--config-file %s' % host.conf),
        ('iniset', str(host.uwsgi_conf), 'uwsgi', 'limit-post', '1048576'),
        ('iniset', str(host.uwsgi_conf), 'uwsgi', 'env',
         'PROMETHEUS_MULTIPROC_DIR=%s' % host.metrics_dir)]


def test_post_config_creates_the_config_dir_for_the_stack_user(lifecycle):
    host = lifecycle['host']
    calls = lifecycle['calls']['stack post-config']
    assert calls.index(('sudo', 'install', '-d', '-o', getpass.getuser(),
                        str(host.conf_dir))) < calls.index(
        ('iniset', str(host.conf), 'api', 'auth_strategy', 'keystone'))


def test_extra_syncs_the_database_then_starts_the_services(lifecycle):
    host = lifecycle['host']
    assert lifecycle['calls']['stack extra'] == [
        ('recreate_database', 'cyquota'),
        ('cyquota-manage', '--config-file', str(host.conf), 'db', 'sync'),
        ('run_process', 'cyquota-api',
         '%s --procname-prefix cyquota-api --ini %s'
         % (host.bin / 'uwsgi', host.uwsgi_conf)),
        ('wait_for_service', '60', API_URL),
        ('run_process', 'cyquota-conductor',
         '/usr/bin/env PROMETHEUS_MULTIPROC_DIR=%s %s --config-file %s'
         % (host.metrics_dir, host.bin / 'cyquota-conductor', host.conf)),
    ]
    # Emptied at each start, left for the services to fill.
    assert host.metrics_dir.is_dir()


def test_db_sync_migrated_the_configured_database(lifecycle):
    assert {'quota_usages', 'reservations'} <= lifecycle['tables']
    assert lifecycle['revisions']


def test_unstack_stops_both_services(lifecycle):
    assert lifecycle['calls']['unstack'] == [
        ('stop_process', 'cyquota-api'),
        ('stop_process', 'cyquota-conductor')]


def test_clean_removes_the_configuration(lifecycle):
    host = lifecycle['host']
    assert lifecycle['calls']['clean'] == [
        ('remove_uwsgi_config', str(host.uwsgi_conf), 'cyquota-api'),
        ('sudo', 'rm', '-rf', str(host.conf_dir))]
    assert not host.conf_dir.exists()


def test_local_limit_source_needs_no_oslo_limit(tmp_path):
    host = Devstack(tmp_path, CYQUOTA_LIMIT_SOURCE='local',
                    CYQUOTA_ENFORCEMENT_MODEL='strict-two-level',
                    CYQUOTA_LIMIT_CACHE_URL='redis://127.0.0.1:6379/0')
    host.run('stack post-config')
    conf = host.read_conf()
    assert not conf.has_section('oslo_limit')
    assert dict(conf['quota']) == {
        'limit_source': 'local',
        'enforcement_model': 'strict-two-level',
        'limit_cache_url': 'redis://127.0.0.1:6379/0'}
    assert not [call for call in host.calls()['stack post-config']
                if call[0] == 'openstack']


def test_empty_registered_limits_create_none(tmp_path):
    host = Devstack(tmp_path, CYQUOTA_REGISTERED_LIMITS='')
    host.run('stack post-config')
    assert [call[3:5] for call in host.calls()['stack post-config']
            if call[0] == 'openstack'] == [('role', 'add')]


def test_conductor_only_host(tmp_path):
    host = Devstack(tmp_path, DISABLED_SERVICES='cyquota-api')
    host.run(*STACK)
    calls = host.calls()
    assert calls['settings'] == [
        ('enable_service', 'cyquota-api', 'cyquota-conductor')]
    post_config = [call[0] for call in calls['stack post-config']]
    assert 'write_uwsgi_config' not in post_config
    assert [call for call in calls['stack post-config']
            if call[3:5] == ('registered', 'limit')] == []
    assert calls['stack extra'] == [
        ('run_process', 'cyquota-conductor',
         '/usr/bin/env PROMETHEUS_MULTIPROC_DIR=%s %s --config-file %s'
         % (host.metrics_dir, host.bin / 'cyquota-conductor', host.conf))]


def test_plugin_does_nothing_when_both_services_are_disabled(tmp_path):
    host = Devstack(tmp_path,
                    DISABLED_SERVICES='cyquota-api,cyquota-conductor')
    host.run(*STACK)
    host.run('unstack')
    host.run('clean')
    calls = host.calls()
    assert {phase: calls[phase] for phase in calls if phase != 'settings'} \
        == {phase: [] for phase in [*STACK, 'unstack', 'clean']}


def test_install_refuses_a_host_without_keystone(tmp_path):
    host = Devstack(tmp_path, ENABLED_SERVICES='mysql,rabbit')
    proc = host.run('stack install', check=False)
    assert proc.returncode != 0
    (call,) = host.calls()['stack install']
    assert call[0] == 'die'
    assert call[2] == 'cyquota needs Keystone: enable the key service'


def test_placement_is_the_device_source_when_devstack_runs_it(tmp_path):
    host = Devstack(tmp_path, ENABLED_SERVICES='key,mysql,rabbit,'
                                               'placement-api',
                    CYQUOTA_PLACEMENT_CLASS_MAP='GPU:PGPU')
    host.run(*STACK)
    assert dict(host.read_conf()['placement']) == {
        'source': 'placement',
        'auth_type': 'password',
        'auth_url': 'http://%s/identity' % SERVICE_HOST,
        'username': 'placement',
        'password': 'secretservice',
        'user_domain_name': 'Default',
        'project_name': 'service',
        'project_domain_name': 'Default',
        'region_name': 'RegionOne',
        'write_leases': 'True',
        'witness_interval': '600',
        'class_map': 'GPU:PGPU'}
    known = _known_options()['placement']
    assert set(host.read_conf()['placement']) <= known
    # The configuration passes cyquota-manage's start-up checks.
    assert ('cyquota-manage', '--config-file', str(host.conf), 'db',
            'sync') in host.calls()['stack extra']


def test_devices_stay_local_without_placement_or_when_asked(tmp_path):
    for name in ('without', 'asked'):
        (tmp_path / name).mkdir()
    host = Devstack(tmp_path / 'without')
    host.run('stack post-config')
    assert not host.read_conf().has_section('placement')
    host = Devstack(tmp_path / 'asked', CYQUOTA_DEVICE_SOURCE='local',
                    ENABLED_SERVICES='key,mysql,rabbit,placement-api')
    host.run('stack post-config')
    assert not host.read_conf().has_section('placement')
