"""The bed's Keystone: its set-up with keystone-manage, its WSGI server,
and the accounts and catalog every other service needs, all created from
this one Python process through keystoneauth (the ``openstack`` command,
one process per call, takes minutes for the same)."""

import os

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from servers import cached_venv
from servers.openstack_bed import config_files
from servers.openstack_bed import processes

REGION = 'RegionOne'
DOMAIN = 'Default'
#: Every account's password: the bed is on 127.0.0.1 and lives minutes.
PASSWORD = 'cyquota-bed'
SERVICE_PROJECT = 'service'
#: The project and user of an ordinary member.
DEMO_PROJECT = 'demo'
DEMO_USER = 'demo'
#: The service users, in project ``service`` with roles admin and service.
SERVICE_USERS = ('nova', 'placement', 'cyborg', 'cyquota')

_SERVE = cached_venv.serve_script(
    'from keystone.server import wsgi\n\n'
    'application = wsgi.initialize_public_application()')


def password_options(url, username, project=SERVICE_PROJECT):
    """keystoneauth ``password`` plugin options of ``username`` scoped to
    ``project``, as a service's config file holds them."""
    return {'auth_type': 'password', 'auth_url': url, 'username': username,
            'password': PASSWORD, 'project_name': project,
            'user_domain_name': DOMAIN, 'project_domain_name': DOMAIN}


def authtoken_options(url, username):
    """``[keystone_authtoken]`` of a service checking tokens as
    ``username``."""
    return dict(password_options(url, username), www_authenticate_uri=url,
                service_token_roles_required='true')


class Keystone:
    """Keystone in the bed's directory ``home``, on ``database`` (a URL)
    and 127.0.0.1:``port``."""

    def __init__(self, home, procs, venv, database, port):
        self.home = home / 'keystone'
        self.home.mkdir()
        self.procs = procs
        self.venv = venv
        self.port = port
        self.url = 'http://127.0.0.1:%d/v3' % port
        self.config = config_files.write(self.home / 'keystone.conf', {
            'DEFAULT': {'log_file': self.home / 'keystone.log'},
            'database': {'connection': database},
            'fernet_tokens': {'key_repository': self.home / 'fernet-keys'},
            'fernet_receipts': {
                'key_repository': self.home / 'fernet-receipts'},
            'credential': {'key_repository': self.home / 'credential-keys'},
        })
        self.ids = {}

    def set_up(self):
        """The database, key repositories and bootstrap admin."""
        manage = [self.venv / 'bin' / 'keystone-manage', '--config-file',
                  self.config]
        owner = ['--keystone-user', str(os.getuid()), '--keystone-group',
                 str(os.getgid())]
        self.procs.run('keystone-manage', manage + ['db_sync'])
        self.procs.run('keystone-manage', manage + ['fernet_setup'] + owner)
        self.procs.run('keystone-manage',
                       manage + ['credential_setup'] + owner)
        self.procs.run('keystone-manage', manage + [
            'bootstrap', '--bootstrap-password', PASSWORD,
            '--bootstrap-region-id', REGION,
            '--bootstrap-admin-url', self.url,
            '--bootstrap-public-url', self.url,
            '--bootstrap-internal-url', self.url])

    def start(self):
        serve = self.home / 'serve.py'
        serve.write_text(_SERVE)
        self.procs.start('keystone', [self.venv / 'bin' / 'python', serve,
                                      self.port],
                         env={'OS_KEYSTONE_CONFIG_FILES': str(self.config)})

    def session(self, username='admin', project='admin', system=False):
        """A keystoneauth session of ``username`` on ``project`` (or
        system-scoped)."""
        scope = ({'system_scope': 'all'} if system else
                 {'project_name': project, 'project_domain_name': DOMAIN})
        return ks_session.Session(auth=v3.Password(
            auth_url=self.url, username=username, password=PASSWORD,
            user_domain_name=DOMAIN, **scope))

    def wait(self):
        processes.wait_for(
            'Keystone answering on %s' % self.url, self._answers, 120,
            alive=[lambda: self.procs.check('keystone')])

    def _answers(self):
        try:
            return self.session().get_token()
        except Exception:  # any keystoneauth error: not up yet
            return None

    def create_accounts(self, endpoints):
        """Projects, users, roles and the catalog.

        :param endpoints: ``{service type: (service name, URL)}``.
        Fills ``ids``: ``endpoint:<type>``, ``project:<name>``,
        ``user:<name>``.
        """
        admin = _Admin(self.session(), self.url)
        roles = {name: admin.find_or_create('roles', name)
                 for name in ('admin', 'member', 'reader', 'service')}
        for name in (SERVICE_PROJECT, DEMO_PROJECT):
            self.ids['project:' + name] = admin.create(
                'projects', {'name': name, 'domain_id': 'default'})
        for name in SERVICE_USERS:
            user = self._user(admin, name)
            for role in ('admin', 'service'):
                admin.put('/projects/%s/users/%s/roles/%s' % (
                    self.ids['project:service'], user, roles[role]))
        demo = self._user(admin, DEMO_USER)
        for role in ('member', 'reader'):
            admin.put('/projects/%s/users/%s/roles/%s' % (
                self.ids['project:demo'], demo, roles[role]))
        # oslo.limit reads limits with a system-scoped token.
        for name in ('nova', 'cyquota'):
            admin.put('/system/users/%s/roles/%s' % (
                self.ids['user:' + name], roles['reader']))
        for service_type, (name, url) in endpoints.items():
            service = admin.create('services',
                                   {'name': name, 'type': service_type})
            for interface in ('admin', 'internal', 'public'):
                endpoint = admin.create('endpoints', {
                    'service_id': service, 'interface': interface,
                    'region_id': REGION, 'url': url})
            # The public one: limits apply per service and region.
            self.ids['endpoint:' + service_type] = endpoint
            self.ids['service:' + service_type] = service

    def _user(self, admin, name):
        self.ids['user:' + name] = admin.create('users', {
            'name': name, 'password': PASSWORD, 'domain_id': 'default'})
        return self.ids['user:' + name]

    def registered_limits(self, service_type, defaults):
        """Keystone's default limits ``{resource: limit}`` of the
        service."""
        admin = _Admin(self.session(), self.url)
        for resource, default in defaults.items():
            admin.create('registered_limits', {
                'service_id': self.ids['service:' + service_type],
                'region_id': REGION, 'resource_name': resource,
                'default_limit': default}, plural=True)


class _Admin:
    """Keystone's v3 API as the admin, through one session."""

    def __init__(self, session, url):
        self.session = session
        self.url = url

    def create(self, collection, body, plural=False):
        """POST one ``body``; returns its id. Registered limits are made
        in lists."""
        key = collection if plural else collection[:-1]
        answer = self.session.post(
            self.url + '/' + collection,
            json={key: [body] if plural else body}).json()[key]
        return answer[0]['id'] if plural else answer['id']

    def find_or_create(self, collection, name):
        found = self.session.get('%s/%s?name=%s' % (
            self.url, collection, name)).json()[collection]
        return found[0]['id'] if found else self.create(
            collection, {'name': name})

    def put(self, path):
        self.session.put(self.url + path)
