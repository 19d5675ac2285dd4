"""What the devstack shim's bash functions (``functions``) hand over:
``python shim.py COMMAND ARGS...``, one command a call, its answer on
stdout as devstack's function would echo it.

Keystone is the bed's (``KEYSTONE_SERVICE_URI``, its ``admin`` with
``ADMIN_PASSWORD``); every user, service and endpoint created is appended
to ``$DEVSTACK_SHIM_ROOT/created`` (kind, tab, id) for the test to delete.
Databases are ``${DEVSTACK_SHIM_DATABASE}_<name>`` on the PostgreSQL
server of the bed's ledger.
"""

import configparser
import os
import sys
import time


def iniset(path, section, option, value):
    ini = _read(path)
    if not ini.has_section(section):
        ini.add_section(section)
    ini.set(section, option, value)
    with open(path, 'w') as out:
        ini.write(out)


def iniget(path, section, option):
    print(_read(path).get(section, option, fallback=''))


def _read(path):
    # DEFAULT as a section like the others, names kept as written.
    ini = configparser.ConfigParser(interpolation=None, default_section=None)
    ini.optionxform = str
    ini.read(path)
    return ini


def database_url(name):
    from servers import databases
    print(databases.database_url('postgresql', _database(name)))


def recreate_database(name):
    from servers import databases
    import sqlalchemy as sa
    url = databases.database_url('postgresql', _database(name))
    databases.drop_database(url)
    engine = sa.create_engine(databases.SERVERS['postgresql'] + '/postgres',
                              isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % _database(name))


def _database(name):
    return '%s_%s' % (os.environ['DEVSTACK_SHIM_DATABASE'], name)


def create_service_user(name, role):
    """The user in the service domain with password $SERVICE_PASSWORD and
    ``role`` on the service project, as devstack's create_service_user."""
    keystone = _Keystone()
    user = keystone.create('users', {
        'name': name, 'password': os.environ['SERVICE_PASSWORD'],
        'domain_id': keystone.find('domains',
                                   os.environ['SERVICE_DOMAIN_NAME'])})
    project = keystone.find('projects', os.environ['SERVICE_PROJECT_NAME'])
    keystone.put('/projects/%s/users/%s/roles/%s' % (
        project, user, keystone.find('roles', role)))


def service(name, service_type, description=''):
    keystone = _Keystone()
    print(keystone.find('services', name) or keystone.create('services', {
        'name': name, 'type': service_type, 'description': description}))


def endpoint(service_id, region, public_url, admin_url=None,
             internal_url=None):
    """The public endpoint (and admin, internal ones when given); prints
    the public one's id, as devstack's get_or_create_endpoint."""
    keystone = _Keystone()
    for interface, url in (('admin', admin_url), ('internal', internal_url),
                           ('public', public_url)):
        if url:
            endpoint_id = keystone.create('endpoints', {
                'service_id': service_id, 'interface': interface,
                'region_id': region, 'url': url})
    print(endpoint_id)


class _Keystone:
    def __init__(self):
        from keystoneauth1.identity import v3
        from keystoneauth1 import session
        self.url = os.environ['KEYSTONE_SERVICE_URI']
        self.session = session.Session(auth=v3.Password(
            auth_url=self.url, username='admin',
            password=os.environ['ADMIN_PASSWORD'], user_domain_id='default',
            project_name='admin', project_domain_id='default'))

    def find(self, collection, name):
        # Filtered here: Keystone ignores ?name= on some collections.
        found = [item['id'] for item in self.session.get(
            '%s/%s' % (self.url, collection)).json()[collection]
            if item['name'] == name]
        return found[0] if found else None

    def create(self, collection, body):
        key = collection[:-1]
        created = self.session.post('%s/%s' % (self.url, collection),
                                    json={key: body}).json()[key]['id']
        with open(os.path.join(os.environ['DEVSTACK_SHIM_ROOT'],
                               'created'), 'a') as record:
            record.write('%s\t%s\n' % (collection, created))
        return created

    def put(self, path):
        self.session.put(self.url + path)


def wait_for_service(timeout, url):
    """Exit 0 once ``url`` answers anything over HTTP, 1 after
    ``timeout`` s."""
    import requests
    deadline = time.monotonic() + float(timeout)
    while time.monotonic() < deadline:
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.5)
    sys.exit(1)


COMMANDS = {'iniset': iniset, 'iniget': iniget, 'database-url': database_url,
            'recreate-database': recreate_database,
            'create-service-user': create_service_user, 'service': service,
            'endpoint': endpoint, 'wait-for-service': wait_for_service}

if __name__ == '__main__':
    COMMANDS[sys.argv[1]](*sys.argv[2:])
