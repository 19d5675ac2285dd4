"""What the bed borrows from the machine's shared servers: databases on
MariaDB (and PostgreSQL for cyquota's ledger) and a RabbitMQ vhost, each
under a name with the bed's random suffix, removed at teardown."""

import os
import subprocess

import sqlalchemy as sa

from benchmarks import support
from tests.functional.cached_venv import unavailable

RABBITMQCTL = os.environ.get('CYQUOTA_TEST_RABBITMQCTL', 'rabbitmqctl')
RABBIT_USER = 'guest'
RABBIT_PASSWORD = 'guest'
RABBIT_HOST = '127.0.0.1:5672'


class Databases:
    """The OpenStack services' databases on the shared MariaDB (what they
    were measured on), named ``bed_<suffix>_<service>``."""

    def __init__(self, suffix):
        self.suffix = suffix
        self.names = []

    def create(self, service):
        """A new empty database for ``service``; returns its URL."""
        name = 'bed_%s_%s' % (self.suffix, service)
        try:
            with _mariadb().connect() as conn:
                # The services' own schemas assume 3-byte utf8 (index
                # lengths), as devstack creates them.
                conn.exec_driver_sql(
                    'CREATE DATABASE %s CHARACTER SET utf8' % name)
        except sa.exc.DBAPIError as error:
            unavailable('cannot create a database on MariaDB at %s: %s'
                        % (support.MYSQL_SERVER, error))
        self.names.append(name)
        return '%s/%s?charset=utf8' % (support.MYSQL_SERVER, name)

    def drop_all(self):
        with _mariadb().connect() as conn:
            for name in self.names:
                conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
        self.names = []


def _mariadb():
    return sa.create_engine(support.MYSQL_SERVER + '/',
                            isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def ledger_database(backend):
    """A new empty database for cyquota's ledger on the shared
    ``backend`` server (``postgresql`` or ``mysql``); returns its URL."""
    try:
        return support.create_database(backend)
    except sa.exc.DBAPIError as error:
        unavailable('cannot create a %s database: %s' % (backend, error))


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
