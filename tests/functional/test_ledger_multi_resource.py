"""Reserves and ends of several resources at once on the real PostgreSQL
and MariaDB servers (and, imported by test_galera.py, on a Galera
cluster): the unit tests of tests/unit/test_ledger_multi_resource.py on
each server, then real processes that commit and reserve two resources
of one project at the same moments. Their statements lock the usage rows
in resource order, so they queue and never deadlock (on Galera, another
node's write that wins certification aborts one, which is retried): the
books come out exact and no error reaches a caller.
"""

import collections
import logging
import multiprocessing
import time
import traceback

from oslo_limit import limit as oslo_limit
import pytest

from cyquota.conf import CONF
from cyquota import context as cyquota_context
from cyquota.db import api as db_api
from cyquota.db import prepared
from cyquota import exception
from cyquota.quota import QUOTAS
from tests import fixtures
from tests.functional import ledger_books
from tests.functional import test_keystone_source
from tests.unit import test_engine
from tests.unit.test_engine import counts  # noqa: H301
from tests.unit import test_ledger_statements as pinned
from tests.unit.test_ledger_multi_resource import (  # noqa: F401 (here)
    _four_resources,  # noqa: H301 (a fixture and tests, by name)
    test_a_batch_of_resources_and_consumers_both_ways_is_one_commit,
    test_a_commit_of_any_size_sends_the_same_statements,
    test_a_detach_of_several_giving_back_more_than_one_holds,
    test_a_detach_of_several_resources_is_one_commit,
    test_a_reserve_of_any_size_sends_the_same_statements,
    test_a_reserve_of_several_over_quota_in_its_last_resource,
    test_a_rollback_of_any_size_sends_the_same_statements,
    test_drift_in_one_resource_of_several_is_told_by_the_steps,
)

WORKERS = 4
ROUNDS = 12
PROJECT = 'attach'
DELTAS = {'FPGA': 1, 'GPU': 2}
SPAWN = multiprocessing.get_context('spawn')

clock = test_engine.clock


@pytest.fixture
def db(backend, clock):
    """The server's ledger, with time standing still (for the unit tests
    run here)."""
    return clock


def test_limits_from_keystone_in_the_statement_of_several(backend, keystone,
                                                          ctx):
    # Keystone's limits are read before the statement and bound into it,
    # one a resource: GPU has none registered, and is unlimited.
    admin = test_keystone_source.KeystoneAdmin(keystone.url)
    admin.registered_limit(10)
    admin.domain('dom')
    admin.project('P', 'dom')
    admin.limit('P', 2)
    try:
        test_keystone_source.use_keystone(admin)
        CONF.set_override('unregistered_resource_strategy', 'ignore',
                          'quota')
        project = admin.ids['P']
        QUOTAS.commit(ctx, project, QUOTAS.reserve(ctx, project, DELTAS))
        with pinned.statements() as reserve:
            QUOTAS.reserve(ctx, project, {'FPGA': 1, 'GPU': 1000})
        with pytest.raises(exception.OverQuota) as refused:
            QUOTAS.reserve(ctx, project, DELTAS)
    finally:
        for name in list(CONF.oslo_limit):
            CONF.clear_override(name, 'oslo_limit')
        oslo_limit._SDK_CONNECTION = None
    assert len(reserve) == 1
    assert [(o['resource'], o['limit']) for o in refused.value.overs] == [
        ('FPGA', 2)]
    assert [counts(ctx, project, r) for r in DELTAS] == [(1, 1), (2, 1000)]


# -- a reserve that waited for a row ----------------------------------------

def _reserve_with_errors(url):
    """In a process of its own: reserve ``DELTAS`` of ``PROJECT``; the
    outcome, and the errors its one statement raised (a refusal: Refused;
    none when it changed nothing without one)."""
    CONF([], project='cyquota', default_config_files=[])
    fixtures.use_database(url, migrate=False)
    raised = []
    run = prepared.Prepared.run

    def watched(statement, conn, params):
        try:
            return run(statement, conn, params)
        except Exception as error:
            raised.append(type(error).__name__)
            raise
    prepared.Prepared.run = watched
    try:
        QUOTAS.reserve(cyquota_context.get_admin_context(), PROJECT, DELTAS)
        return 'reserved', raised
    except exception.OverQuota as error:
        return [o['resource'] for o in error.overs], raised


def test_a_reserve_of_several_that_waited_judges_the_rows_as_committed(
        backend, db_url, ctx):
    # The GPU row fills up in a transaction that the reserve waits for:
    # the reserve finds it full once it has the row. PostgreSQL's locks
    # the rows first and judges them as locked, so it writes nothing and
    # raises no error on the way; MariaDB's refuses, having rolled back
    # its FPGA row, and the locked path says why either way.
    for resource in DELTAS:
        QUOTAS.limits.set_project_limit(ctx, PROJECT, resource, 2)
    QUOTAS.reserve(ctx, PROJECT, {'FPGA': 1, 'GPU': 1})
    with SPAWN.Pool(1) as pool, db_api.get_engine().connect() as conn:
        conn.exec_driver_sql(
            "UPDATE quota_usages SET reserved = 2 WHERE project_id = '%s'"
            " AND resource = 'GPU'" % PROJECT)
        waiting = pool.apply_async(_reserve_with_errors, (db_url,))
        _until_one_waits_for_a_lock(backend, waiting)
        conn.commit()
        refused, errors = waiting.get(timeout=60)
    assert refused == ['GPU']
    assert [counts(ctx, PROJECT, r) for r in DELTAS] == [(0, 1), (0, 2)]
    assert errors == ([] if backend == 'postgresql' else ['Refused'])


# Sessions of this test's database waiting for a row lock, as each server
# counts them (other test runs share the servers).
_LOCK_WAITS = {
    'postgresql': "SELECT count(*) FROM pg_stat_activity"
                  " WHERE wait_event_type = 'Lock'"
                  " AND datname = current_database()",
    'mysql': "SELECT count(*) FROM information_schema.innodb_trx t"
             " JOIN information_schema.processlist p"
             " ON p.id = t.trx_mysql_thread_id"
             " WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE()",
}


def _until_one_waits_for_a_lock(backend, call, timeout=60):
    deadline = time.monotonic() + timeout
    with db_api.get_engine().connect() as conn:
        while not conn.exec_driver_sql(_LOCK_WAITS[backend]).scalar():
            assert not call.ready() and time.monotonic() < deadline
            conn.rollback()
            # InnoDB refreshes what it shows of its transactions only
            # when no one read them for 0.1 s.
            time.sleep(0.25)


# -- reserves and commits of two resources at once, in processes -------------

_barrier = None


def _start_worker(barrier):
    global _barrier
    _barrier = barrier
    CONF([], project='cyquota', default_config_files=[])


def _in_step(url, calls):
    """A worker's part, on the database (node) ``url``: each ``(method,
    args, kwargs)`` of ``calls`` on QUOTAS when all the workers are ready
    for it. Returns each one's result, the errors that reached it and the
    deadlocks (and lost certifications) the ledger met and retried."""
    fixtures.use_database(url, migrate=False)
    retried = _Retried()
    ctx = cyquota_context.get_admin_context()
    results, errors = [], []
    for method, args, kwargs in calls:
        _barrier.wait(timeout=120)
        try:
            results.append(getattr(QUOTAS, method)(ctx, *args, **kwargs))
        except Exception:
            errors.append(traceback.format_exc())
            results.append(None)
    return results, errors, retried.errors


class _Retried(logging.Handler):
    """The database errors that the ledger retried in this process, as
    oslo.db tells them (at DEBUG) before each retry."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.errors = []
        logger = logging.getLogger('oslo_db.api')
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)

    def emit(self, record):
        if record.msg.startswith('DB error'):
            self.errors.append(record.getMessage())


def test_reserves_and_commits_of_two_resources_at_once(
        backend, worker_urls, ctx):
    # Each round, half the workers commit a reservation of two resources
    # (its uuids in either order; some of one consumer that every worker
    # commits for) and the other half reserve two resources, all of one
    # project at the same moment.
    limits = {(PROJECT, resource): 10 ** 6 for resource in DELTAS}
    for (project, resource), limit in limits.items():
        QUOTAS.limits.set_project_limit(ctx, project, resource, limit)
    # The usage rows exist: no first use to race for.
    QUOTAS.commit(ctx, PROJECT, QUOTAS.reserve(ctx, PROJECT, DELTAS))
    plans = []
    for worker in range(WORKERS):
        calls = []
        for round_ in range(ROUNDS):
            if (worker + round_) % 2:
                calls.append(('reserve', (PROJECT, DELTAS), dict(
                    consumer_id='new-%d' % worker)))
                continue
            uuids = QUOTAS.reserve(ctx, PROJECT, DELTAS, consumer_id=(
                'shared' if round_ % 3 == 0 else 'vm-%d' % worker))
            calls.append(('commit', (PROJECT, uuids[::(-1) ** round_]), {}))
        plans.append(calls)
    with SPAWN.Pool(WORKERS, _start_worker,
                    (SPAWN.Barrier(WORKERS),)) as pool:
        outcomes = pool.starmap(_in_step, [
            (worker_urls[worker % len(worker_urls)], calls)
            for worker, calls in enumerate(plans)], chunksize=1)
    results, errors, retried = zip(*outcomes)
    print('%s: %d database errors (deadlocks, lost certifications) retried'
          % (backend, sum(map(len, retried))))
    assert [e for worker in errors for e in worker] == []
    if backend != 'galera':
        # In one lock order they queue: not one deadlock to retry.
        assert [r for worker in retried for r in worker] == []

    rows = ledger_books.assert_books_balance(limits)
    committed = [u for calls in plans for method, args, _ in calls
                 if method == 'commit' for u in args[1]]
    reserved = [u for worker in results for uuids in worker
                if uuids is not None for u in uuids]
    commits = len(committed) // len(DELTAS) + 1
    assert {rows[u]['status'] for u in committed} == {'committed'}
    assert {rows[u]['status'] for u in reserved} == {'reserved'}
    assert len(reserved) == WORKERS * ROUNDS // 2 * len(DELTAS)
    assert [counts(ctx, PROJECT, r) for r in DELTAS] == [
        (commits * delta, len(reserved) // len(DELTAS) * delta)
        for delta in DELTAS.values()]
    held = collections.Counter()
    for row in ledger_books.table('consumer_usages'):
        held[row['resource']] += row['used']
    assert held == {r: commits * delta for r, delta in DELTAS.items()}
