"""cyquota's devstack plugin (devstack/) run on a running bed: its stack
phases in bash under the shim of devstack's functions in devstack_shim/,
against the bed's Keystone, Placement, Cyborg configuration and database
server, then the services started from the configuration it wrote.

The plugin's Keystone objects live in a region of their own, where the
bed's Placement and Cyborg get endpoints too: the plugin's catalog entry
(type ``accelerator-quota``, like the bed's cyquota) is then the only one
that a client of that region finds. Its RPC goes on a vhost of its own so
that its conductor and the bed's never take each other's calls.
"""

import configparser
import getpass
import json
import os
import pathlib
import shlex
import shutil
import subprocess

from servers import databases

from servers import api_server
from servers.openstack_bed import config_files
from servers.openstack_bed import cyborg
from servers.openstack_bed import identity
from servers.openstack_bed import processes
from servers.openstack_bed import resources

SHIM = pathlib.Path(__file__).parent / 'devstack_shim' / 'functions'
STACK = ('install', 'post-config', 'extra')
#: One stack.sh: the functions, the plugin's settings, then each phase, its
#: start time (epoch seconds) noted in $DEVSTACK_SHIM_ROOT/phases.
_RUNNER = r'''
set -o errexit
source "$DEVSTACK_SHIM"
source "$CYQUOTA_DIR/devstack/settings"
for phase in "$@"; do
    printf '%s\t%s\n' "$phase" "$(date +%s.%N)" >>"$DEVSTACK_SHIM_ROOT/phases"
    source "$CYQUOTA_DIR/devstack/plugin.sh" stack "$phase"
done
printf 'end\t%s\n' "$(date +%s.%N)" >>"$DEVSTACK_SHIM_ROOT/phases"
'''


class Devstack:
    """The plugin's devstack host in ``bed.home``/devstack."""

    def __init__(self, bed):
        self.bed = bed
        self.root = bed.home / 'devstack'
        self.root.mkdir()
        suffix = bed.suffix
        self.region = 'devstack-%s' % suffix
        self.user = 'cyquota-devstack-%s' % suffix
        self.port = api_server.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.conf = self.root / 'etc' / 'cyquota' / 'cyquota.conf'
        self.uwsgi_conf = self.conf.with_name('cyquota-api-uwsgi.ini')
        self.cyborg_dir = self.root / 'etc' / 'cyborg'
        self.vhost = resources.Vhost('%s-devstack' % suffix)
        self.database = 'bed_%s_devstack' % suffix
        self.region_endpoints = []
        self.cyborg_url = None

    # -- the host --------------------------------------------------------

    def prepare(self):
        """The region, vhost, Cyborg's files as Cyborg's own plugin leaves
        them, ``openstack`` on the PATH and its clouds.yaml."""
        admin = self.bed.admin
        keystone = self.bed.keystone
        admin.post(keystone.url + '/regions', json={'region': {
            'id': self.region}})
        for service_type in ('placement', 'accelerator'):
            self.region_endpoints.append(admin.post(
                keystone.url + '/endpoints', json={'endpoint': {
                    'service_id': keystone.ids['service:' + service_type],
                    'interface': 'public', 'region_id': self.region,
                    'url': self.bed.urls[service_type]}}
            ).json()['endpoint']['id'])
        self.vhost.create()
        self._cyborg_files()
        (self.root / 'bin').mkdir()
        (self.root / 'bin' / 'openstack').symlink_to(api_server.BIN /
                                                     'openstack')
        (self.root / 'clouds.yaml').write_text(json.dumps({'clouds': {
            'devstack-system-admin': {
                'auth': {'auth_url': keystone.url, 'username': 'admin',
                         'password': identity.PASSWORD,
                         'user_domain_id': 'default',
                         'system_scope': 'all'},
                # No region: the bed's Keystone is in its own alone.
                'identity_api_version': 3}}}))

    def _cyborg_files(self):
        """cyborg.conf of the bed's Cyborg without cyquota's filter, and
        Cyborg's own api-paste.ini."""
        self.cyborg_dir.mkdir(parents=True)
        conf = configparser.ConfigParser(interpolation=None)
        conf.optionxform = str
        conf.read(self.bed.cyborg.config)
        conf.remove_section('cyquota_filter')
        conf['api']['api_paste_config'] = str(self.cyborg_dir /
                                              'api-paste.ini')
        with open(self.cyborg_dir / 'cyborg.conf', 'w') as out:
            conf.write(out)
        shutil.copy(self.bed.cyborg.venv / 'etc' / 'cyborg' /
                    'api-paste.ini', self.cyborg_dir)

    def environment(self):
        """stack.sh's variables (local.conf's and devstack's own) and the
        shim's."""
        return dict(
            os.environ,
            PATH='%s:%s' % (self.root / 'bin', os.environ['PATH']),
            PYTHONPATH=str(cyborg.CHECKOUT), PYTHONWARNINGS='ignore',
            OS_CLIENT_CONFIG_FILE=str(self.root / 'clouds.yaml'),
            DEVSTACK_SHIM=str(SHIM), DEVSTACK_SHIM_ROOT=str(self.root),
            DEVSTACK_SHIM_PYTHON=str(api_server.BIN / 'python'),
            DEVSTACK_SHIM_BIN=str(api_server.BIN),
            DEVSTACK_SHIM_DATABASE=self.database,
            DEVSTACK_SHIM_TRANSPORT_URL=self.vhost.url,
            CYQUOTA_DIR=str(cyborg.CHECKOUT),
            ENABLED_SERVICES='key,placement-api,cyborg-api,cyquota-api,'
                             'cyquota-conductor',
            DEST=str(self.root / 'opt'), DATA_DIR=str(self.root / 'data'),
            STACK_USER=getpass.getuser(),
            PYTHON=str(api_server.BIN / 'python'),
            SERVICE_HOST='127.0.0.1', SERVICE_PROTOCOL='http',
            SERVICE_LISTEN_ADDRESS='127.0.0.1', SERVICE_TIMEOUT='120',
            KEYSTONE_SERVICE_URI=self.bed.keystone.url,
            ADMIN_PASSWORD=identity.PASSWORD,
            SERVICE_PASSWORD=identity.PASSWORD,
            SERVICE_DOMAIN_NAME=identity.DOMAIN,
            SERVICE_PROJECT_NAME=identity.SERVICE_PROJECT,
            REGION_NAME=self.region, ENABLE_DEBUG_LOG_LEVEL='True',
            CYQUOTA_SERVICE_PORT=str(self.port),
            CYQUOTA_SERVICE_USER=self.user, CYQUOTA_SERVICE_NAME=self.user,
            CYQUOTA_CONF_DIR=str(self.conf.parent),
            CYBORG_CONF_DIR=str(self.cyborg_dir))

    # -- stack -----------------------------------------------------------

    def stack(self):
        """``stack install``, ``post-config`` and ``extra`` in one bash,
        starting cyquota-api once ``run_process`` asks for it (extra
        waits for it to answer); returns the bash's output."""
        with open(self.root / 'stack.out', 'wb') as out:
            stack = subprocess.Popen(
                ['bash', '-c', _RUNNER, 'stack.sh'] + list(STACK),
                stdout=out, stderr=subprocess.STDOUT,
                env=self.environment())
        try:
            processes.wait_for(
                'run_process cyquota-api or the end of stack',
                lambda: ('cyquota-api' in self.run_processes()
                         or stack.poll() is not None), 600)
            if 'cyquota-api' in self.run_processes():
                self.start_api()
            stack.wait(timeout=300)
        finally:
            if stack.poll() is None:
                stack.kill()
        output = (self.root / 'stack.out').read_text()
        assert stack.returncode == 0, output
        return output

    def phase_seconds(self):
        """``{phase: seconds}`` of the last stack."""
        marks = [line.split('\t') for line in (
            self.root / 'phases').read_text().splitlines()]
        return {phase: float(end) - float(start) for (phase, start), (_, end)
                in zip(marks, marks[1:])}

    def run_processes(self):
        """``{name: command line}`` that run_process was given."""
        path = self.root / 'processes'
        if not path.exists():
            return {}
        return dict(line.split('\t', 1)
                    for line in path.read_text().splitlines())

    # -- the services, from what the plugin wrote ------------------------

    def start_api(self):
        """cyquota-api's console script (not uWSGI) on the plugin's
        cyquota.conf, listening where the plugin's uWSGI file says, with
        its environment."""
        uwsgi = configparser.ConfigParser(interpolation=None)
        uwsgi.read(self.uwsgi_conf)
        host, port = uwsgi['uwsgi']['http-socket'].rsplit(':', 1)
        listen = config_files.write(self.root / 'listen.conf', {
            'api': {'host': host, 'port': port}})
        name, value = uwsgi['uwsgi']['env'].split('=', 1)
        self.bed.procs.start('cyquota-api-devstack', [
            api_server.BIN / 'cyquota-api', '--config-file', self.conf,
            '--config-file', listen], env=dict(self.bed.cyquota.env,
                                               **{name: value}))

    def start_conductor(self):
        """cyquota-conductor as run_process was asked to run it."""
        argv = shlex.split(self.run_processes()['cyquota-conductor'])
        self.bed.procs.start('cyquota-conductor-devstack', argv,
                             env=self.bed.cyquota.env)

    def start_cyborg_api(self):
        """A second cyborg-api on the plugin-edited cyborg.conf and
        api-paste.ini, as the bed starts its own."""
        port = api_server.free_port()
        self.cyborg_url = 'http://127.0.0.1:%d/v2' % port
        self.bed.procs.start('cyborg-api-devstack', [
            self.bed.cyborg.venv / 'bin' / 'python',
            self.bed.cyborg.home / 'serve.py', port, '--config-file',
            self.cyborg_dir / 'cyborg.conf'], env=self.bed.cyborg.env)
        self.bed.procs.wait_until_answering('cyborg-api-devstack',
                                            self.cyborg_url)

    def manage(self, *args):
        """``cyquota-manage`` on the plugin's cyquota.conf."""
        return subprocess.run(
            [str(api_server.BIN / 'cyquota-manage'), '--config-file',
             str(self.conf), *args], capture_output=True, text=True,
            timeout=300, env=dict(os.environ, **self.bed.cyquota.env))

    # -- clean -----------------------------------------------------------

    def clean(self):
        """Stop what was started, delete what the plugin and ``prepare``
        created in Keystone, the database and the vhost."""
        self.bed.procs.stop(*[name for name in (
            'cyquota-api-devstack', 'cyquota-conductor-devstack',
            'cyborg-api-devstack') if name in self.bed.procs.running])
        keystone = self.bed.keystone.url
        created = self.root / 'created'
        objects = [line.split('\t') for line in (
            created.read_text().splitlines() if created.exists() else ())]
        system = self.bed.session(system=True)
        for collection, object_id in objects:
            if collection == 'services':
                for limit in system.get(
                        keystone + '/registered_limits?service_id=%s'
                        % object_id).json()['registered_limits']:
                    system.delete(keystone + '/registered_limits/%s'
                                  % limit['id'])
        objects += [('endpoints', endpoint)
                    for endpoint in self.region_endpoints]
        for collection, object_id in reversed(objects):
            self.bed.admin.delete('%s/%s/%s' % (keystone, collection,
                                                object_id), raise_exc=False)
        self.bed.admin.delete('%s/regions/%s' % (keystone, self.region),
                              raise_exc=False)
        databases.drop_database(databases.database_url(
            'postgresql', self.database + '_cyquota'))
        self.vhost.delete()
