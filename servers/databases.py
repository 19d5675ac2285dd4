"""Throw-away databases on the real PostgreSQL and MariaDB servers, and
cyquota pointed at one in this process."""

import os
import uuid

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import migration
from cyquota import quota
from cyquota import service

PG_SERVER = os.environ.get('CYQUOTA_TEST_PG_URL',
                           'postgresql+psycopg://postgres@127.0.0.1:5432')
MYSQL_SERVER = os.environ.get('CYQUOTA_TEST_MYSQL_URL',
                              'mysql+pymysql://root@127.0.0.1:3306')
SERVERS = {'postgresql': PG_SERVER, 'mysql': MYSQL_SERVER}


def use_database(url, migrate=True):
    """Make ``url`` cyquota's database (and migrate it) in this process,
    the ledger's device hook given as a command's start-up gives it."""
    CONF.set_override('connection', url, 'database')
    db_api.reset()
    service.connect_hooks()
    quota.QUOTAS.reset()
    if migrate:
        migration.upgrade()


def database_url(backend, name):
    """The URL of database ``name`` on the ``backend`` server."""
    url = '%s/%s' % (SERVERS[backend], name)
    return url + '?charset=utf8mb4' if backend == 'mysql' else url


def _server_engine(backend):
    return sa.create_engine(SERVERS[backend] + (
        '/postgres' if backend == 'postgresql' else '/'),
        isolation_level='AUTOCOMMIT')


def create_database(backend):
    """Create an empty database on a real server; returns its URL.

    Raises the driver's error when the server cannot be reached.
    """
    name = 'cyq_%s' % uuid.uuid4().hex[:12]
    engine = _server_engine(backend)
    with engine.connect() as conn:
        extra = ' CHARACTER SET utf8mb4' if backend == 'mysql' else ''
        conn.exec_driver_sql('CREATE DATABASE %s%s' % (name, extra))
    engine.dispose()
    return database_url(backend, name)


def drop_database(url):
    """Drop the database of ``url``, connections to it and all."""
    backend = 'mysql' if url.startswith('mysql') else 'postgresql'
    name = sa.engine.make_url(url).database
    engine = _server_engine(backend)
    with engine.connect() as conn:
        if backend == 'postgresql':
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name)
        else:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
    engine.dispose()
