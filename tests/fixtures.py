"""Test helpers shared by unit and functional tests: point cyquota at a
database, and create or drop a throw-away database on a real server."""

import os
import uuid

import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import attachment_models  # noqa: F401 (registers tables)
from cyquota.db import migration
from cyquota.db import models
from cyquota.db import placement_models  # noqa: F401 (registers tables)
from cyquota import quota

PG_SERVER = os.environ.get('CYQUOTA_TEST_PG_URL',
                           'postgresql+psycopg2://postgres@127.0.0.1:5432')
MYSQL_SERVER = os.environ.get('CYQUOTA_TEST_MYSQL_URL',
                              'mysql+pymysql://root@127.0.0.1:3306')
SERVERS = {'postgresql': PG_SERVER, 'mysql': MYSQL_SERVER}


def use_database(url, migrate=True):
    """Make ``url`` cyquota's database (and migrate it) in this process."""
    CONF.set_override('connection', url, 'database')
    db_api.reset()
    quota.QUOTAS.reset()
    if migrate:
        migration.upgrade()


def database_url(backend, name):
    url = '%s/%s' % (SERVERS[backend], name)
    return url + '?charset=utf8mb4' if backend == 'mysql' else url


def create_database(backend):
    """Create an empty database on a real server; returns its URL.

    Raises the driver's error when the server cannot be reached.
    """
    name = 'cyq_%s' % uuid.uuid4().hex[:12]
    engine = sa.create_engine(SERVERS[backend] + (
        '/postgres' if backend == 'postgresql' else '/'),
        isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        extra = ' CHARACTER SET utf8mb4' if backend == 'mysql' else ''
        conn.exec_driver_sql('CREATE DATABASE %s%s' % (name, extra))
    engine.dispose()
    return database_url(backend, name)


def drop_database(url):
    backend = 'mysql' if url.startswith('mysql') else 'postgresql'
    name = sa.engine.make_url(url).database
    engine = sa.create_engine(SERVERS[backend] + (
        '/postgres' if backend == 'postgresql' else '/'),
        isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        if backend == 'postgresql':
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name)
        else:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % name)
    engine.dispose()


def clear_tables():
    """Empty every cyquota table (children before parents)."""
    with db_api.get_engine().begin() as conn:
        for table in reversed(models.Base.metadata.sorted_tables):
            conn.execute(table.delete())
