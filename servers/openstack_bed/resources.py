"""What the bed borrows from the machine's shared servers: databases on
MariaDB (and PostgreSQL for cyquota's ledger) and a RabbitMQ vhost, each
under a name with the bed's random suffix, removed at teardown."""

import os
import subprocess

import sqlalchemy as sa

from servers.cached_venv import unavailable
from servers import databases

RABBITMQCTL = os.environ.get('CYQUOTA_TEST_RABBITMQCTL', 'rabbitmqctl')
RABBIT_USER = 'guest'
RABBIT_PASSWORD = 'guest'
RABBIT_HOST = '127.0.0.1:5672'


class Databases:
    """The bed's databases, named ``bed_<suffix>_<service>`` (a run
    killed outright leaves them findable): the OpenStack services' on the
    shared MariaDB (what they were measured on), cyquota's ledger on the
    backend a test chooses."""

    def __init__(self, suffix):
        self.suffix = suffix
        self.urls = []

    def create(self, service, backend='mysql'):
        """A new empty database for ``service`` on the ``backend`` server
        (``mysql`` or ``postgresql``); returns its URL."""
        name = 'bed_%s_%s' % (self.suffix, service)
        server = databases.SERVERS[backend]
        engine = sa.create_engine(
            server + ('/postgres' if backend == 'postgresql' else '/'),
            isolation_level='AUTOCOMMIT', poolclass=sa.pool.NullPool)
        if backend == 'postgresql':
            url, charset = databases.database_url(backend, name), ''
        elif service == 'cyquota':
            url, charset = databases.database_url(backend, name), 'utf8mb4'
        else:
            # The services' own schemas assume 3-byte utf8 (index
            # lengths), as devstack creates them.
            url, charset = '%s/%s?charset=utf8' % (server, name), 'utf8'
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql('CREATE DATABASE %s%s' % (
                    name, charset and ' CHARACTER SET ' + charset))
        except sa.exc.DBAPIError as error:
            unavailable('cannot create a database on %s: %s'
                        % (server, error))
        self.urls.append(url)
        return url

    def drop_all(self):
        for url in self.urls:
            databases.drop_database(url)
        self.urls = []


class Vhost:
    """A RabbitMQ vhost of the bed's own, for every service's RPC."""

    def __init__(self, suffix):
        self.name = 'bed-%s' % suffix
        self.url = 'rabbit://%s:%s@%s/%s' % (
            RABBIT_USER, RABBIT_PASSWORD, RABBIT_HOST, self.name)
        self.created = False

    def _ctl(self, *args):
        try:
            subprocess.run((RABBITMQCTL,) + args, check=True,
                           capture_output=True, timeout=60)
        except (subprocess.SubprocessError, OSError) as error:
            unavailable('%s %s failed: %s %s' % (
                RABBITMQCTL, ' '.join(args), error,
                (getattr(error, 'stderr', b'') or b'').decode(
                    errors='replace')))

    def create(self):
        self._ctl('add_vhost', self.name)
        self.created = True
        self._ctl('set_permissions', '-p', self.name, RABBIT_USER,
                  '.*', '.*', '.*')

    def delete(self):
        if self.created:
            self._ctl('delete_vhost', self.name)
            self.created = False
