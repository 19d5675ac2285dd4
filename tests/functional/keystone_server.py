"""A real Keystone on 127.0.0.1 for functional tests.

Keystone comes from PyPI into its own virtualenv, installed with the
project's frozen constraints and cached between runs
(``servers.openstack_bed.venvs``). A ``Home`` is a temporary
directory with Keystone's configuration, a SQLite database and key
repositories, set up once with keystone-manage (db_sync, fernet_setup,
credential_setup, bootstrap); it then serves Keystone's WSGI application
on a free port of 127.0.0.1 with the enforcement model a test asks for,
one server at a time. ``Identity`` creates projects, users with a role
and their tokens on a running one.

When the virtualenv cannot be built or Keystone does not start, the tests
fail under CI (``CI=true``) and are skipped elsewhere.
"""

import contextlib
import os
import pathlib
import shutil
import subprocess
import tempfile
import textwrap
import uuid

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from servers import api_server
from servers import cached_venv
from servers.cached_venv import unavailable
from servers.openstack_bed import venvs

ADMIN_PASSWORD = 'cyquota-test'
REGION = 'RegionOne'

# Keystone reads its own command line at start-up; the wrapper clears it.
_SERVE = cached_venv.serve_script(
    'from keystone.server import wsgi\n\n'
    'application = wsgi.initialize_public_application()')


def venv():
    """The path of Keystone's virtualenv, built on first use."""
    return venvs.venv('keystone')


class Home:
    """A Keystone set up in a temporary directory (configuration, SQLite
    database, key repositories, bootstrap admin), ready to ``serve``."""

    def __init__(self):
        self.venv = venv()
        self.path = pathlib.Path(tempfile.mkdtemp(prefix='cyquota-keystone-'))
        # Fixed for the home's life: bootstrap records it in the catalog.
        self.port = api_server.free_port()
        self.url = 'http://127.0.0.1:%d/v3' % self.port
        config = self._config('flat')
        manage = [str(self.venv / 'bin' / 'keystone-manage'),
                  '--config-file', str(config)]
        ids = ['--keystone-user', str(os.getuid()), '--keystone-group',
               str(os.getgid())]
        try:
            for args in (['db_sync'], ['fernet_setup'] + ids,
                         ['credential_setup'] + ids,
                         ['bootstrap', '--bootstrap-password', ADMIN_PASSWORD,
                          '--bootstrap-admin-url', self.url,
                          '--bootstrap-public-url', self.url,
                          '--bootstrap-internal-url', self.url,
                          '--bootstrap-region-id', REGION]):
                subprocess.run(manage + args, check=True, capture_output=True,
                               timeout=300)
        except subprocess.SubprocessError as error:
            self.remove()
            unavailable('keystone-manage failed: %s %s' % (error, (
                getattr(error, 'stderr', b'') or b'').decode()[-2000:]))

    def _config(self, enforcement_model):
        config = self.path / ('keystone-%s.conf' % enforcement_model)
        config.write_text(textwrap.dedent('''\
            [DEFAULT]
            log_file = {home}/keystone.log
            [database]
            connection = sqlite:///{home}/keystone.sqlite
            [fernet_tokens]
            key_repository = {home}/fernet-keys
            [fernet_receipts]
            key_repository = {home}/fernet-receipts
            [credential]
            key_repository = {home}/credential-keys
            [unified_limit]
            enforcement_model = {model}
            ''').format(home=self.path, model=enforcement_model))
        return config

    @contextlib.contextmanager
    def serve(self, enforcement_model):
        """Serve this home with ``[unified_limit] enforcement_model`` set to
        ``enforcement_model`` (``flat`` or ``strict_two_level``) until the
        block ends; yields the v3 URL."""
        config = self._config(enforcement_model)
        serve = self.path / 'serve.py'
        serve.write_text(_SERVE)
        process = subprocess.Popen(
            [str(self.venv / 'bin' / 'python'), str(serve), str(self.port)],
            env=dict(os.environ, OS_KEYSTONE_CONFIG_FILES=str(config)),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            cached_venv.wait_until_answering('Keystone', process, self.url)
            yield self.url
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


@contextlib.contextmanager
def home():
    """A ``Home``, removed when the block ends."""
    keystone = Home()
    try:
        yield keystone
    finally:
        keystone.remove()


USER_PASSWORD = 'cyquota-test-user'


class Identity:
    """Projects, users with a role on a project, and their tokens."""

    def __init__(self, url):
        self.url = url
        self.admin = ks_session.Session(auth=v3.Password(
            auth_url=url, username='admin',
            password=ADMIN_PASSWORD,
            user_domain_id='default', project_name='admin',
            project_domain_id='default'))
        self.roles = {role['name']: role['id'] for role in self.admin.get(
            url + '/roles').json()['roles']}

    def authtoken_options(self):
        """``[keystone_authtoken]`` for a cyquota-api checking tokens
        against this Keystone as its admin."""
        return {'www_authenticate_uri': self.url, 'auth_url': self.url,
                'auth_type': 'password', 'username': 'admin',
                'password': ADMIN_PASSWORD, 'project_name': 'admin',
                'user_domain_id': 'default', 'project_domain_id': 'default'}

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
        user_id = self._create('users', {
            'name': name, 'password': USER_PASSWORD, 'domain_id': 'default'})
        self.admin.put('%s/projects/%s/users/%s/roles/%s' % (
            self.url, project_id, user_id, self.role(role)))
        return ks_session.Session(auth=v3.Password(
            auth_url=self.url, username=name, password=USER_PASSWORD,
            user_domain_id='default', project_id=project_id)).get_token()
