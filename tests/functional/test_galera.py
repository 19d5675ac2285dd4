"""cyquota on a three-node MariaDB Galera cluster, writing to every node.

A ``SELECT ... FOR UPDATE`` lock does not reach the other nodes of a
Galera cluster: two transactions on different nodes conflict only when
both write the same row, and then the one certified second fails at
commit with a deadlock (MySQL error 1213), which cyquota retries
(``db_api.retry_on_conflict``). Here the ledger's semantics run again with
each test on the next node in turn and with each step of one reservation
on another node; the storm of eight processes, the reserves and commits
of two resources of one project at once and the strict-two-level tree
race run with their workers dealt out over the three nodes; and the
lock the limit store's tree rules rely on is shown to conflict across
nodes. Each test prints how many transactions the cluster's nodes
aborted (certification failures and brute-force aborts), each one a
retry.
"""

import itertools
import time

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
import pytest
import sqlalchemy as sa

from cyquota.conf import CONF
from cyquota.db import api as db_api
from cyquota.db import models
from cyquota import exception
from cyquota.quota.limits import write_facts
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.functional.galera import galera_cluster  # noqa: F401 (fixture)
from tests.functional import test_ledger_concurrency
from tests.functional.test_ledger_concurrency import (  # noqa: F401 (here)
    test_storm_keeps_the_books,  # noqa: H301
)
from tests.functional.test_ledger_multi_resource import (  # noqa: F401
    test_reserves_and_commits_of_two_resources_at_once,  # noqa: H301
)
from tests.functional.test_tree_concurrency import (  # noqa: F401 (here)
    test_tree_never_exceeds_root_limit_and_ends_full,  # noqa: H301
)
from tests.unit import test_engine
from tests.unit.test_engine import (  # noqa: F401 (run here, node by node)
    counts,  # noqa: H301
    test_commit_after_expiry_time_but_before_expire_runs,
    test_commit_moves_reserved_to_used_once,
    test_expire_rolls_back_what_has_expired,
    test_release_takes_used_at_once,
    test_reserve_up_to_the_limit_and_not_beyond,
    test_rollback_gives_reserved_back_once,
    test_same_request_id_returns_the_same_reservations,
)

clock = test_engine.clock
_next_node = itertools.count()
_projects = models.Project.__table__
_ABORTS = ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')


@pytest.fixture(scope='module')
def node_urls(galera_cluster):  # noqa: F811 (the fixture)
    """The URL of one migrated test database on each node."""
    urls = galera_cluster.database_urls(galera_cluster.create_database())
    fixtures.use_database(urls[0])  # the schema replicates
    return urls


@pytest.fixture
def backend(node_urls):
    """'galera', with cyquota pointed at the next node in turn, its tables
    empty."""
    fixtures.use_database(node_urls[next(_next_node) % len(node_urls)],
                          migrate=False)
    fixtures.clear_tables()
    return 'galera'


@pytest.fixture
def db_url(backend):
    """The URL of the node this test's own process uses."""
    return CONF.database.connection


@pytest.fixture
def worker_urls(node_urls):
    """Worker processes connect to the three nodes in turn."""
    return node_urls


@pytest.fixture
def db(backend, clock):
    """The ledger on a node, with time standing still (for the unit tests
    run here)."""
    return clock


@pytest.fixture(autouse=True)
def aborted_transactions(galera_cluster, request):  # noqa: F811
    """Print how many transactions the nodes aborted during the test."""
    def total():
        return sum(int(node.status(name)) for node in galera_cluster.nodes
                   for name in _ABORTS)
    before = total()
    yield
    print('%s: %d transactions aborted by certification (retried)'
          % (request.node.name, total() - before))


@pytest.fixture(autouse=True)
def _storm_floor(monkeypatch):
    # Three nodes certify and apply every commit on the same few cores: the
    # storm gets through about half as many operations in its time.
    monkeypatch.setattr(test_ledger_concurrency, 'MIN_OPERATIONS', 250)


@pytest.fixture
def other_node(node_urls):
    """An oslo.db engine (its errors translated as cyquota's are) on a node
    other than the one cyquota uses now."""
    url = next(u for u in node_urls if u != CONF.database.connection)
    engine = engines.create_engine(url)
    yield engine
    engine.dispose()


def _on(url):
    fixtures.use_database(url, migrate=False)


def test_each_step_of_a_reservation_on_another_node(node_urls, backend,
                                                    ctx):
    first, second, third = node_urls
    _on(first)
    with db_api.get_engine().connect() as conn:  # reads wait for the cluster
        assert conn.exec_driver_sql('SELECT @@wsrep_sync_wait').scalar() == 1
    QUOTAS.limits.set_project_limit(ctx, 'p1', 'FPGA', 3)
    _on(second)
    uuids = QUOTAS.reserve(ctx, 'p1', {'FPGA': 2}, request_id='attach-1')
    _on(third)  # a retry after a lost answer, through another node
    assert QUOTAS.reserve(ctx, 'p1', {'FPGA': 2},
                          request_id='attach-1') == uuids
    _on(first)
    QUOTAS.commit(ctx, 'p1', uuids)
    _on(second)
    assert counts(ctx) == (2, 0)
    short = QUOTAS.reserve(ctx, 'p1', {'FPGA': 1}, expire=0.2)
    _on(third)
    with pytest.raises(exception.OverQuota):
        QUOTAS.reserve(ctx, 'p1', {'FPGA': 1})
    time.sleep(0.3)
    assert QUOTAS.expire(ctx) == 1
    _on(first)
    assert QUOTAS.expire(ctx) == 0
    QUOTAS.rollback(ctx, 'p1', short)  # expired already: nothing to do
    with pytest.raises(exception.ReservationConflict):
        QUOTAS.commit(ctx, 'p1', short)
    assert counts(ctx) == (2, 0)


def test_a_certification_failure_is_a_deadlock_and_is_retried(
        backend, ctx, other_node):
    QUOTAS.limits.set_project(ctx, 'cert')
    attempts = []

    @db_api.retry_on_conflict
    def rename():
        attempts.append(CONF.database.connection)
        with db_api.writer(ctx) as session:
            session.execute(_projects.update()
                            .where(_projects.c.id == 'cert')
                            .values(name='here'))
            if len(attempts) == 1:
                # Another node writes the same row meanwhile, and wins.
                with other_node.begin() as conn:
                    conn.execute(_projects.update()
                                 .where(_projects.c.id == 'cert')
                                 .values(name='there'))

    rename()
    assert len(attempts) == 2
    with db_api.reader(ctx) as session:
        assert session.execute(sa.select(_projects.c.name).where(
            _projects.c.id == 'cert')).scalar() == 'here'

    attempts.clear()
    with pytest.raises(db_exc.DBDeadlock):
        rename.__wrapped__()  # the same, not retried


def test_a_row_lock_reaches_other_nodes_only_when_written(
        backend, ctx, other_node):
    QUOTAS.limits.set_project(ctx, 'root')
    locked = (sa.select(_projects.c.id).where(_projects.c.id == 'root')
              .with_for_update())

    # Locked, not written, on two nodes at once: nothing conflicts.
    with db_api.writer(ctx) as session:
        session.execute(locked).one()
        with other_node.begin() as conn:
            conn.execute(locked).one()

    # The limit store's lock writes the row: the second node to commit
    # fails and its transaction is retried.
    with pytest.raises(db_exc.DBDeadlock):
        with db_api.writer(ctx) as session:
            write_facts.lock_project(session, 'root')
            with other_node.begin() as conn:
                write_facts.lock_project(conn, 'root')
