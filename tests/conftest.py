"""Configuration shared by every test: cyquota's CONF parsed with no files,
a fresh SQLite database per unit test (a copy of one migrated once per
session, written without a wait for the disk at each commit), the
markers of the slow groups set by path (``SLOW_GROUPS``), and a check
that no configured secret shows in any log record or output a test
captured (``tests.secrets``)."""

import logging
import pathlib
import shutil
import sqlite3

import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from tests import fixtures
from tests import secrets

CONF([], project='cyquota', default_config_files=[])

_WATCH = secrets.LogWatch()

_TESTS = pathlib.Path(__file__).parent

#: The marker of each slow group (registered in setup.cfg) and the paths,
#: relative to tests/, of its tests: a directory, or one module.
SLOW_GROUPS = {
    'functional': ('functional/',),
    'openstack_bed': ('functional/openstack/',),
    'galera': ('functional/test_galera.py',),
    'readme': ('unit/test_readme.py', 'functional/test_readme_placement.py',
               'functional/test_readme_rpc.py'),
    'docs_build': ('unit/test_docs_build.py',),
    'mypy': ('unit/test_type_check.py',),
}


def pytest_configure(config):
    logging.getLogger().addHandler(_WATCH)


#: Servers that a session starts once (tens of seconds, up to 2 GiB each):
#: the tests using one run on one worker of a parallel run (``-n``), which
#: then starts it once, not once a worker.
SHARED_SERVERS = ('keystone', 'keystone_home', 'placement', 'galera_cluster',
                  'private_server', 'bed')


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark each test of a slow group, so that ``-m`` can leave it out,
    and group the tests of each costly session server on one worker
    (first: pytest-xdist reads the groups in its own hook)."""
    for item in items:
        if not item.path.is_relative_to(_TESTS):
            continue
        where = item.path.relative_to(_TESTS).as_posix()
        for marker, paths in SLOW_GROUPS.items():
            if where.startswith(paths):
                item.add_marker(marker)
        shared = [name for name in SHARED_SERVERS
                  if name in getattr(item, 'fixturenames', ())]
        if shared:
            item.add_marker(pytest.mark.xdist_group(shared[0]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail a test phase whose log records or captured output show a
    secret."""
    report = (yield).get_result()
    texts = _WATCH.take() + [content for _, content in report.sections]
    found = secrets.leaked('\n'.join(texts))
    if found and not report.failed:
        report.outcome = 'failed'
        report.longrepr = ('secret(s) in the log or output of %s (%s): %s'
                           % (item.nodeid, report.when, found))


@sa.event.listens_for(sa.engine.Engine, 'connect')
def _sqlite_without_fsync(dbapi_connection, connection_record):
    """SQLite files of this process written without waiting for the disk
    at each commit (``PRAGMA synchronous = OFF``): a test's database is
    thrown away, never read after a crash, and the waits were most of a
    unit test's time. Locking and isolation are unchanged."""
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute('PRAGMA synchronous = OFF')


@pytest.fixture(autouse=True)
def _clean_conf():
    yield
    CONF.clear_override('connection', 'database')
    for group in ('quota',):
        for name in list(CONF[group]):
            CONF.clear_override(name, group)


@pytest.fixture
def ctx():
    return cyquota_context.get_admin_context()


@pytest.fixture(scope='session')
def _migrated_sqlite(tmp_path_factory):
    """A SQLite file migrated once for the session, for tests to copy:
    migrating takes about a quarter of a second, copying a millisecond."""
    path = tmp_path_factory.mktemp('template') / 'cyquota.sqlite'
    fixtures.use_database('sqlite:///%s' % path)
    db_api.reset()  # closes the file before the first copy
    return path


@pytest.fixture
def sqlite_db(tmp_path, _migrated_sqlite):
    """A migrated SQLite file database for one test (its own copy of the
    session's migrated file; tests of the migrations migrate their own)."""
    path = tmp_path / 'cyquota.sqlite'
    shutil.copyfile(_migrated_sqlite, path)
    url = 'sqlite:///%s' % path
    fixtures.use_database(url, migrate=False)
    return url
