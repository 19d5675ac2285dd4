"""Functional tests run on the real PostgreSQL and MariaDB servers.

Each test session creates its own database on each server and drops it at
the end. When a server cannot be reached the tests fail under CI (CI=true)
and are skipped elsewhere.
"""

import os

import pytest

from cyquota.conf import CONF
from tests import fixtures
from tests.functional import keystone_server
from tests.functional.rabbitmq import (  # noqa: F401 (fixtures)
    conductors, rabbit, rabbit_url)  # noqa: H301 (fixtures, by name)
from tests.functional.private_servers import (  # noqa: F401 (fixtures)
    private_db, private_server)  # noqa: H301 (fixtures, by name)

pytestmark = pytest.mark.functional


def _unavailable(backend, error):
    message = '%s server at %s is not reachable: %s' % (
        backend, fixtures.SERVERS[backend], error)
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope='session')
def _server_databases():
    created = {}
    yield created
    for url in created.values():
        fixtures.drop_database(url)


@pytest.fixture(params=['postgresql', 'mysql'])
def backend(request, _server_databases):
    """'postgresql' or 'mysql', with cyquota pointed at that server's test
    database, migrated and empty."""
    name = request.param
    created = name not in _server_databases
    if created:
        try:
            _server_databases[name] = fixtures.create_database(name)
        except Exception as error:  # any driver error: server not there
            _unavailable(name, error)
    # Migrated once, when created: the tests change rows, not the schema.
    fixtures.use_database(_server_databases[name], migrate=created)
    fixtures.clear_tables()
    return name


@pytest.fixture
def db_url(backend, _server_databases):
    """The URL of the current backend's test database."""
    return _server_databases[backend]


@pytest.fixture
def seconds_long():
    """Leases of a few seconds (shorter than [leases] min_duration) for the
    test."""
    CONF.set_override('min_duration', 0, 'leases')
    yield
    CONF.clear_override('min_duration', 'leases')


@pytest.fixture
def worker_urls(db_url):
    """The URLs that concurrent worker processes connect to, dealt out in
    turn: the one test database here, a node each on a Galera cluster
    (test_galera.py)."""
    return [db_url]


@pytest.fixture(scope='session')
def keystone():
    """A real Keystone (flat limits) with its admin, started once for the
    session: setting one up costs about 20 s."""
    with keystone_server.home() as home:
        with home.serve('flat') as url:
            yield keystone_server.Identity(url)


@pytest.fixture(scope='session')
def placement():
    """A real Placement (noauth2, its own SQLite database) started once for
    the session, as a ``placement_server.Cloud``: ``.url`` and helpers
    that make providers, inventories, aggregates, traits and
    allocations."""
    from servers import placement_server
    with placement_server.running() as server:
        yield placement_server.Cloud(server)
